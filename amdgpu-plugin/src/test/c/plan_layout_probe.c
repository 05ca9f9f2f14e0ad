/* Layout probe for the restore plan shared by Java and the C executor (amdgpu_restore.h). */
#include "amdgpu_restore.h"
#include "layout_probe.h"

int main(void)
{
	S(amdgpu_plan_gpu);
	F(amdgpu_plan_gpu, user_gpu_id);
	F(amdgpu_plan_gpu, actual_gpu_id);
	F(amdgpu_plan_gpu, render_minor);
	F(amdgpu_plan_gpu, pad);

	S(amdgpu_plan_bo);
	F(amdgpu_plan_bo, addr);
	F(amdgpu_plan_bo, size);
	F(amdgpu_plan_bo, offset);
	F(amdgpu_plan_bo, gpu_id);
	F(amdgpu_plan_bo, alloc_flags);

	S(amdgpu_plan_kfd);
	F(amdgpu_plan_kfd, file_id);
	F(amdgpu_plan_kfd, vpid);
	F(amdgpu_plan_kfd, num_gpus);
	F(amdgpu_plan_kfd, num_bos);
	F(amdgpu_plan_kfd, num_objects);
	F(amdgpu_plan_kfd, pad);
	F(amdgpu_plan_kfd, priv_size);
	F(amdgpu_plan_kfd, gpus);
	F(amdgpu_plan_kfd, bos);
	F(amdgpu_plan_kfd, priv);

	S(amdgpu_plan_render);
	F(amdgpu_plan_render, file_id);
	F(amdgpu_plan_render, user_gpu_id);
	F(amdgpu_plan_render, render_minor);
	F(amdgpu_plan_render, pad);

	S(amdgpu_plan);
	F(amdgpu_plan, version);
	F(amdgpu_plan, num_kfd);
	F(amdgpu_plan, num_render);
	F(amdgpu_plan, refill_addr_len);
	F(amdgpu_plan, kfd);
	F(amdgpu_plan, render);
	F(amdgpu_plan, refill_addr);

	S(amdgpu_refill_head);
	F(amdgpu_refill_head, magic);
	F(amdgpu_refill_head, file_id);
	F(amdgpu_refill_head, num_fds);
	F(amdgpu_refill_head, pad);

	S(amdgpu_child);
	F(amdgpu_child, plan);
	F(amdgpu_child, seam);

	S(amdgpu_seam);
	F(amdgpu_seam, open);
	F(amdgpu_seam, close);
	F(amdgpu_seam, ioctl);
	F(amdgpu_seam, find_unused_fd);
	F(amdgpu_seam, log);

	C32(AMDGPU_PLAN_VERSION);
	C32(AMDGPU_REFILL_MAGIC);
	C32(AMDGPU_REFILL_FDS_PER_MSG);
	return 0;
}
