/*
 * The simulator's functions that its parts (kfd_sim.c, drm_sim.c, restored_task.c) and upstream_host.c call across
 * files. Java binds them by name (KfdSimulator); the libc- and libdrm-shaped entry points keep their own signatures.
 */
#ifndef KFD_SIM_H
#define KFD_SIM_H

#include <semaphore.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

/* kfd_sim.c: the KFD, its test set-up, the trace, criu's stand-ins */
int kfdsim_open(const char *path, int flags, ...);
int kfdsim_close(int fd);
void kfdsim_note_dup(int fd, int newfd);
int kfdsim_ioctl(int fd, unsigned long request, ...);
void *kfdsim_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
int kfdsim_fstat(int fd, struct stat *st);
sem_t *kfdsim_sem_open(const char *name, int oflag, ...);
int kfdsim_sem_close(sem_t *sem);
void kfdsim_set_shm_dir(const char *dir);
int kfdsim_create_process(int owner, int tracer_tid);
int kfdsim_add_gpu(int fd, uint32_t actual_gpu_id, uint32_t user_gpu_id);
int kfdsim_add_bo(int fd, uint64_t addr, uint64_t size, uint32_t gpu_id, uint32_t flags, uint32_t seed);
int kfdsim_fill_bo(int fd, uint32_t index, const uint8_t *data, uint64_t len);
int kfdsim_set_objects(int fd, uint32_t nobjects, const uint8_t *priv, uint32_t priv_size);
int kfdsim_paused(int fd);
int kfdsim_resumed(int pid);
void kfdsim_set_next_offset(uint64_t offset);
void kfdsim_set_unused_fd_base(int base);
int kfdsim_find_unused_fd(int vpid);
uint64_t kfdsim_fnv1a(const void *data, size_t n);
int kfdsim_render_minor(int fd);
int kfdsim_trace_start(const char *path);
void kfdsim_trace(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void kfdsim_trace_mark(const char *text);

/* drm_sim.c */
void kfdsim_drm_reset(void);

/* restored_task.c: forked restored tasks */

/* An UPDATE_VMA_MAP call a restored task makes, and how many bytes behind the answer to read. */
struct sized_query {
	uint64_t addr;
	uint64_t old_offset;
	const char *path;
	uint64_t size;
};

/* What a task reports per UPDATE_VMA_MAP call: its result, the new offset, and the render minor of the fd it
 * answered with (-1: no fd, -2: an fd that is not a render node). */
struct vma_answer {
	int32_t rc;
	int32_t minor;
	uint64_t new_offset;
};

int kfdsim_spawn_task(int (*restore)(void *, int),
		      int (*update)(void *, const char *, uint64_t, uint64_t, uint64_t *, int *), void *ctx,
		      const int *ids, int nids, const struct sized_query *q, int nq, const char *save_dir, int *go_fd,
		      int *report_fd);
int kfdsim_read_report(int fd, void *buf, int len);
int kfdsim_release(int go_fd);
int kfdsim_reap(int pid, int kill_first);

#endif
