/* Layout probe for linux/kfd_ioctl.h, linux/kfd_sysfs.h and glibc's struct stat (see layout_probe.h). */
#include <linux/kfd_ioctl.h>
#include <linux/kfd_sysfs.h>
#include <sys/stat.h>
#include "layout_probe.h"

int main(void)
{
	S(kfd_ioctl_get_version_args);
	F(kfd_ioctl_get_version_args, major_version);
	F(kfd_ioctl_get_version_args, minor_version);

	S(kfd_ioctl_get_available_memory_args);
	F(kfd_ioctl_get_available_memory_args, available);
	F(kfd_ioctl_get_available_memory_args, gpu_id);
	F(kfd_ioctl_get_available_memory_args, pad);

	S(kfd_ioctl_criu_args);
	F(kfd_ioctl_criu_args, devices);
	F(kfd_ioctl_criu_args, bos);
	F(kfd_ioctl_criu_args, priv_data);
	F(kfd_ioctl_criu_args, priv_data_size);
	F(kfd_ioctl_criu_args, num_devices);
	F(kfd_ioctl_criu_args, num_bos);
	F(kfd_ioctl_criu_args, num_objects);
	F(kfd_ioctl_criu_args, pid);
	F(kfd_ioctl_criu_args, op);

	S(kfd_criu_device_bucket);
	F(kfd_criu_device_bucket, user_gpu_id);
	F(kfd_criu_device_bucket, actual_gpu_id);
	F(kfd_criu_device_bucket, drm_fd);
	F(kfd_criu_device_bucket, pad);

	S(kfd_criu_bo_bucket);
	F(kfd_criu_bo_bucket, addr);
	F(kfd_criu_bo_bucket, size);
	F(kfd_criu_bo_bucket, offset);
	F(kfd_criu_bo_bucket, restored_offset);
	F(kfd_criu_bo_bucket, gpu_id);
	F(kfd_criu_bo_bucket, alloc_flags);
	F(kfd_criu_bo_bucket, dmabuf_fd);
	F(kfd_criu_bo_bucket, pad);

	S(stat);
	F(stat, st_dev);
	F(stat, st_ino);
	F(stat, st_nlink);
	F(stat, st_mode);
	F(stat, st_uid);
	F(stat, st_gid);
	F(stat, __pad0);
	F(stat, st_rdev);
	F(stat, st_size);
	F(stat, st_blksize);
	F(stat, st_blocks);
	F(stat, st_atim);
	F(stat, st_mtim);
	F(stat, st_ctim);
	F(stat, __glibc_reserved);

	C32(KFD_IOCTL_MAJOR_VERSION);
	C32(KFD_IOCTL_MINOR_VERSION);
	C32(AMDKFD_IOCTL_BASE);
	C32(AMDKFD_IOC_GET_VERSION);
	C32(AMDKFD_IOC_CRIU_OP);
	C32(AMDKFD_IOC_AVAILABLE_MEMORY);
	C32(KFD_CRIU_OP_PROCESS_INFO);
	C32(KFD_CRIU_OP_CHECKPOINT);
	C32(KFD_CRIU_OP_UNPAUSE);
	C32(KFD_CRIU_OP_RESTORE);
	C32(KFD_CRIU_OP_RESUME);
	C32(KFD_INVALID_FD);
	C32(KFD_IOC_ALLOC_MEM_FLAGS_VRAM);
	C32(KFD_IOC_ALLOC_MEM_FLAGS_GTT);
	C32(KFD_IOC_ALLOC_MEM_FLAGS_USERPTR);
	C32(KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL);
	C32(KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP);
	C32(KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE);
	C32(KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE);
	C32(KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC);
	C32(KFD_IOC_ALLOC_MEM_FLAGS_NO_SUBSTITUTE);
	C32(KFD_IOC_ALLOC_MEM_FLAGS_AQL_QUEUE_MEM);
	C32(KFD_IOC_ALLOC_MEM_FLAGS_COHERENT);
	C32(KFD_IOC_ALLOC_MEM_FLAGS_UNCACHED);

	C32(HSA_MEM_HEAP_TYPE_SYSTEM);
	C32(HSA_MEM_HEAP_TYPE_FB_PUBLIC);
	C32(HSA_MEM_HEAP_TYPE_FB_PRIVATE);
	C32(HSA_IOLINK_TYPE_PCIEXPRESS);
	C32(HSA_IOLINK_TYPE_XGMI);
	return 0;
}
