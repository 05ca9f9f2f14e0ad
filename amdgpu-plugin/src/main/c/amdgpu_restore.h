/*
 * Fork-safe restore executor of the amdgpu plugin.
 *
 * Java builds a restore plan in native memory in criu's main process before criu forks (from the images, the
 * local topology and the GPU map). Every restored task is a fork of that process and inherits the plan; the
 * hooks that run inside such a child (RESTORE_EXT_FILE, UPDATE_VMA_MAP) execute it here, in C, without the
 * JVM. All device calls go through a seam table: libc (and criu) in production, the simulated KFD in tests.
 */
#ifndef CRIUGPU_AMDGPU_RESTORE_H
#define CRIUGPU_AMDGPU_RESTORE_H

#include <stdint.h>

#define AMDGPU_PLAN_VERSION 2

/*
 * Refill request: after RESTORE, the restored task connects to the plan's unix socket (criu's main process
 * listens) and sends one struct amdgpu_refill_head, then num_fds uint32_t BO indices (positions in the KFD
 * image's BO list), then the num_fds dma-buf fds in that order as SCM_RIGHTS, at most
 * AMDGPU_REFILL_FDS_PER_MSG per sendmsg, each sendmsg carrying one payload byte. The main process copies the BO
 * contents into those dma-bufs; the task does not wait for it (its queues stay evicted until RESUME).
 */
#define AMDGPU_REFILL_MAGIC 0x31465241u /* "ARF1" */
#define AMDGPU_REFILL_FDS_PER_MSG 64

struct amdgpu_refill_head {
	uint32_t magic;
	int32_t file_id;  /* the KFD image id */
	uint32_t num_fds;
	uint32_t pad;
};

/* One GPU of a KFD file, in the order of the image's device entries. */
struct amdgpu_plan_gpu {
	uint32_t user_gpu_id;   /* id in the image */
	uint32_t actual_gpu_id; /* local id chosen by the GPU map */
	uint32_t render_minor;  /* local render node of actual_gpu_id */
	uint32_t pad;
};

/* One BO of a KFD file, in bucket order. */
struct amdgpu_plan_bo {
	uint64_t addr;
	uint64_t size;
	uint64_t offset;        /* mmap offset at dump time */
	uint32_t gpu_id;        /* user id */
	uint32_t alloc_flags;
};

struct amdgpu_plan_kfd {
	int32_t file_id;
	int32_t vpid;           /* pid in the image (PROCESS_INFO's virtual pid) */
	uint32_t num_gpus;
	uint32_t num_bos;
	uint32_t num_objects;
	uint32_t pad;
	uint64_t priv_size;
	const struct amdgpu_plan_gpu *gpus;
	const struct amdgpu_plan_bo *bos;
	const uint8_t *priv;
};

struct amdgpu_plan_render {
	int32_t file_id;
	uint32_t user_gpu_id;
	uint32_t render_minor;  /* local render node of the mapped GPU */
	uint32_t pad;
};

struct amdgpu_plan {
	uint32_t version;
	uint32_t num_kfd;
	uint32_t num_render;
	uint32_t refill_addr_len; /* bytes of refill_addr in use (a socklen_t); 0: no refill socket */
	const struct amdgpu_plan_kfd *kfd;
	const struct amdgpu_plan_render *render;
	uint8_t refill_addr[112]; /* struct sockaddr_un of the refill socket (abstract name) */
};

/* The calls the executor makes; every pointer must be set. */
struct amdgpu_seam {
	int (*open)(const char *path, int flags, ...);
	int (*close)(int fd);
	int (*ioctl)(int fd, unsigned long request, ...);
	/* criu's find_unused_fd_pid: first fd above the task's highest image fd */
	int (*find_unused_fd)(int vpid);
	/* criu's print_on_level */
	void (*log)(unsigned int level, const char *fmt, ...);
};

/*
 * RESTORE_EXT_FILE(id) in the restored task: returns an fd criu takes over, -ENOTSUP when id is not an amdgpu
 * file, or -errno. A KFD file is opened and RESTOREd in the calling process and its dma-buf fds are sent to the
 * refill socket; a render node is a dup of the render fd this process keeps for that GPU (opened on first use,
 * above the task's image fds).
 */
int amdgpu_restore_file(const struct amdgpu_plan *plan, const struct amdgpu_seam *seam, int id);

/*
 * UPDATE_VMA_MAP in the restored task: 1 when the mapping at (addr, old_offset) moved (new_offset and plugin_fd
 * set; plugin_fd is -1 for KFD mappings, which criu reopens by path), 0 when it is unchanged, -ENOTSUP when the
 * path is neither /dev/kfd nor a render node.
 */
int amdgpu_update_vma(const struct amdgpu_plan *plan, const struct amdgpu_seam *seam, const char *path,
		      uint64_t addr, uint64_t old_offset, uint64_t *new_offset, int *plugin_fd);

/* What the shim calls in a forked child (criu_gpu_services.child_*): ctx is a struct amdgpu_child. */
struct amdgpu_child {
	const struct amdgpu_plan *plan;
	const struct amdgpu_seam *seam;
};

int amdgpu_child_restore_ext_file(void *ctx, int id);
int amdgpu_child_update_vma_map(void *ctx, const char *path, uint64_t addr, uint64_t old_pgoff, uint64_t *new_pgoff,
				int *plugin_fd);

#endif
