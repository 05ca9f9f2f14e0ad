/* Layout probe for the restore plan shared by Java and the C executor (gpu_plan.h). */
#include "gpu_plan.h"
#include "layout_probe.h"

int main(void)
{
	S(gpu_plan_step);
	F(gpu_plan_step, op);
	F(gpu_plan_step, slot);
	F(gpu_plan_step, arg);
	F(gpu_plan_step, arg2);
	F(gpu_plan_step, len);
	F(gpu_plan_step, fd_len);
	F(gpu_plan_step, buf);
	F(gpu_plan_step, fd_buf);
	F(gpu_plan_step, fd_offsets);
	F(gpu_plan_step, what);

	S(gpu_plan_program);
	F(gpu_plan_program, file_id);
	F(gpu_plan_program, num_steps);
	F(gpu_plan_program, steps);

	S(gpu_plan_vma);
	F(gpu_plan_vma, addr);
	F(gpu_plan_vma, old_offset);
	F(gpu_plan_vma, new_offset);
	F(gpu_plan_vma, slot);
	F(gpu_plan_vma, pad);

	S(gpu_plan_path);
	F(gpu_plan_path, pattern);
	F(gpu_plan_path, prefix);
	F(gpu_plan_path, reopen);
	F(gpu_plan_path, substitute);

	S(gpu_plan);
	F(gpu_plan, version);
	F(gpu_plan, num_programs);
	F(gpu_plan, num_vmas);
	F(gpu_plan, num_paths);
	F(gpu_plan, num_slots);
	F(gpu_plan, pad);
	F(gpu_plan, name);
	F(gpu_plan, programs);
	F(gpu_plan, vmas);
	F(gpu_plan, paths);

	S(gpu_plan_seam);
	F(gpu_plan_seam, open);
	F(gpu_plan_seam, close);
	F(gpu_plan_seam, ioctl);
	F(gpu_plan_seam, find_unused_fd);
	F(gpu_plan_seam, log);
	F(gpu_plan_seam, fdstore_get);

	S(gpu_plan_child);
	F(gpu_plan_child, plan);
	F(gpu_plan_child, seam);

	C32(GPU_PLAN_VERSION);
	C32(GPU_PLAN_FDS_PER_MSG);
	C32(GPU_PLAN_NO_FD);
	C32(GPU_PLAN_OPEN);
	C32(GPU_PLAN_IOCTL);
	C32(GPU_PLAN_REQUIRE);
	C32(GPU_PLAN_PUT_FD);
	C32(GPU_PLAN_SEND_FDS);
	C32(GPU_PLAN_ENABLE_VMAS);
	C32(GPU_PLAN_RETURN);
	C32(GPU_PLAN_RETURN_DUP);
	C32(GPU_PLAN_PUT_PID);
	return 0;
}
