/*
 * A simulated KFD behind the syscall seam (libkfdsim.so). It exports kfdsim_open/close/ioctl/mmap with
 * libc's signatures, so the plugin's Java seam can bind them instead of libc's, plus kfdsim_* set-up calls for
 * tests. It follows the kernel rules the plugin depends on:
 *   - CRIU_OP PROCESS_INFO/CHECKPOINT/UNPAUSE work only for the fd's owner process or its ptrace tracer
 *     thread (here: the thread id registered as tracer), otherwise EBADF;
 *   - CHECKPOINT needs paused queues and the exact counts from PROCESS_INFO (EINVAL);
 *   - RESTORE acts on the calling process (the fd must have been opened by it) and gives every BO a new
 *     mmap offset and a new dma-buf fd; RESUME takes a pid and fails with ESRCH if it has no restored process.
 * BO contents live in memfds; an exported dma-buf fd is a dup of the BO's memfd. Each process has its own copy of
 * this state (a forked restored task restores into its copy), except what the kernel keeps globally: which pids
 * have a restored KFD process and whether RESUME reached them sit in memory shared across fork, so criu's main
 * process can RESUME a task that restored in its own process.
 * A trace (kfdsim_trace_start) records every open of /dev/kfd or a render node, every KFD ioctl with its argument
 * fields and every SDMA submission (drm_sim.c), one line each, naming the process and thread that made it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <semaphore.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <linux/kfd_ioctl.h>

#include "kfd_sim.h"

#define MAX_PROCS 16
#define MAX_GPUS 8
#define MAX_BOS 64
#define MAX_PRIV 4096
#define KFDSIM_KFD_MAJOR 235

struct sim_bo {
	uint64_t addr, size, offset;
	uint32_t gpu_id; /* user id */
	uint32_t flags;
	int memfd;
};

struct sim_proc {
	int used;
	int fd;
	int alias; /* a dup of fd that reaches the same KFD process (criu-dev's plugin keeps one), or -1 */
	int own; /* opened through kfdsim_open by its owner, not a dumped process's fd */
	pid_t owner;
	pid_t tracer_tid;
	int paused, restored, resumed;
	uint32_t ngpus, actual[MAX_GPUS], user[MAX_GPUS];
	int drm_fd[MAX_GPUS];
	uint32_t nbos;
	struct sim_bo bos[MAX_BOS];
	uint32_t nobjects;
	uint32_t priv_size;
	uint8_t priv[MAX_PRIV];
};

static struct sim_proc procs[MAX_PROCS];
static uint32_t version_minor = 11;
static uint64_t next_offset = 0x100000000ULL;
static int fail_op = -1, fail_errno; /* the next ioctl of this kind fails (KFDSIM_GET_VERSION or a CRIU op) */
#define KFDSIM_GET_VERSION 100

static pid_t tid(void) { return (pid_t)syscall(SYS_gettid); }

/* ---- what the kernel keeps across processes: restored KFD processes by pid ---- */

#define MAX_RESTORED 64
struct restored { pid_t owner; int resumed; };
static struct restored *restored_pids; /* MAP_SHARED: forked tasks and criu's main process see one table */

static void __attribute__((constructor)) shared_init(void)
{
	void *p = mmap(NULL, sizeof(struct restored) * MAX_RESTORED, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	restored_pids = p == MAP_FAILED ? NULL : p;
}

static struct restored *restored_of(pid_t pid)
{
	for (int i = 0; restored_pids && i < MAX_RESTORED; i++)
		if (__atomic_load_n(&restored_pids[i].owner, __ATOMIC_ACQUIRE) == pid)
			return &restored_pids[i];
	return NULL;
}

static int register_restored(pid_t pid)
{
	for (int i = 0; restored_pids && i < MAX_RESTORED; i++) {
		pid_t none = 0;
		if (__atomic_compare_exchange_n(&restored_pids[i].owner, &none, pid, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
			__atomic_store_n(&restored_pids[i].resumed, 0, __ATOMIC_RELEASE);
			return 0;
		}
	}
	return -1;
}

/* ---- the trace ---- */

static int trace_fd = -1;
static pid_t trace_pid, trace_tid;

/* Starts a trace into `path` (appended to); the calling thread of this process is criu's main thread in it. */
int kfdsim_trace_start(const char *path)
{
	if (trace_fd >= 0)
		close(trace_fd);
	trace_fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0600);
	trace_pid = getpid();
	trace_tid = tid();
	return trace_fd < 0 ? -1 : 0;
}

void kfdsim_trace_stop(void)
{
	if (trace_fd >= 0)
		close(trace_fd);
	trace_fd = -1;
}

/* One trace line, prefixed with who made the call: criu's main thread, another thread of criu's process, a
 * (forked) restored task's main thread, or another thread of such a task. */
void kfdsim_trace(const char *fmt, ...)
{
	if (trace_fd < 0)
		return;
	char line[2048];
	const char *who = getpid() == trace_pid ? (tid() == trace_tid ? "criu" : "criu-thread")
						: (tid() == getpid() ? "task" : "task-thread");
	int n = snprintf(line, sizeof(line), "%s ", who);
	va_list ap;
	va_start(ap, fmt);
	n += vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	if (write(trace_fd, line, (size_t)n) != n) /* one write per line: O_APPEND keeps lines whole */
		return;
}

/* A line the test driver writes itself (hook calls and their results). */
void kfdsim_trace_mark(const char *text) { kfdsim_trace("%s", text); }

static struct sim_proc *proc_of_fd(int fd)
{
	for (int i = 0; i < MAX_PROCS; i++)
		if (procs[i].used && (procs[i].fd == fd || (fd >= 0 && procs[i].alias == fd)))
			return &procs[i];
	return NULL;
}

/* `newfd` is a dup of `fd`: if fd is a KFD process's fd, newfd reaches that process too (as a dup does in KFD). */
void kfdsim_note_dup(int fd, int newfd)
{
	for (int i = 0; i < MAX_PROCS; i++)
		if (procs[i].used && procs[i].fd == fd)
			procs[i].alias = newfd;
}

static struct sim_proc *new_proc(int fd, pid_t owner)
{
	for (int i = 0; i < MAX_PROCS; i++) {
		if (!procs[i].used) {
			memset(&procs[i], 0, sizeof(procs[i]));
			procs[i].used = 1;
			procs[i].fd = fd;
			procs[i].alias = -1;
			procs[i].owner = owner;
			procs[i].tracer_tid = -1;
			return &procs[i];
		}
	}
	return NULL;
}

static int fail(int e) { errno = e; return -1; }

static void fdstore_reset(void);

/* ---- test set-up API ---- */

void kfdsim_reset(void)
{
	for (int i = 0; i < MAX_PROCS; i++) {
		if (!procs[i].used)
			continue;
		for (uint32_t b = 0; b < procs[i].nbos; b++)
			close(procs[i].bos[b].memfd);
		close(procs[i].fd);
		procs[i].used = 0;
	}
	version_minor = 11;
	fail_op = -1;
	if (restored_pids)
		memset(restored_pids, 0, sizeof(struct restored) * MAX_RESTORED);
	kfdsim_trace_stop();
	fdstore_reset();
	kfdsim_drm_reset();
}

void kfdsim_set_version_minor(uint32_t minor) { version_minor = minor; }

/* The mmap offset the next BO created or restored in this process gets (offsets then grow by each BO's size). */
void kfdsim_set_next_offset(uint64_t offset) { next_offset = offset; }

/* The next GET_VERSION (op 100) or CRIU op `op` ioctl fails with `err`, once. */
void kfdsim_fail_ioctl(int op, int err) { fail_op = op; fail_errno = err; }

static int injected(int op)
{
	if (op != fail_op)
		return 0;
	fail_op = -1;
	errno = fail_errno;
	return 1;
}

/* A KFD process owned by `owner`, seized by thread `tracer_tid`; returns the fd a dumper would hold. */
int kfdsim_create_process(int owner, int tracer_tid)
{
	int fd = memfd_create("kfdsim-kfd", MFD_CLOEXEC);
	if (fd < 0)
		return -1;
	struct sim_proc *p = new_proc(fd, owner);
	if (!p) { close(fd); return fail(ENOSPC); }
	p->tracer_tid = tracer_tid;
	return fd;
}

int kfdsim_add_gpu(int fd, uint32_t actual_gpu_id, uint32_t user_gpu_id)
{
	struct sim_proc *p = proc_of_fd(fd);
	if (!p) return fail(EBADF);
	if (p->ngpus == MAX_GPUS) return fail(ENOSPC);
	p->actual[p->ngpus] = actual_gpu_id;
	p->user[p->ngpus++] = user_gpu_id;
	return 0;
}

/* A BO whose byte i holds (seed + i) & 0xff. gpu_id is the user id. */
int kfdsim_add_bo(int fd, uint64_t addr, uint64_t size, uint32_t gpu_id, uint32_t flags, uint32_t seed)
{
	struct sim_proc *p = proc_of_fd(fd);
	if (!p) return fail(EBADF);
	if (p->nbos == MAX_BOS) return fail(ENOSPC);
	int m = memfd_create("kfdsim-bo", MFD_CLOEXEC);
	if (m < 0 || ftruncate(m, (off_t)size))
		return -1;
	uint8_t buf[4096];
	for (uint64_t off = 0; off < size; off += sizeof(buf)) {
		size_t n = size - off < sizeof(buf) ? size - off : sizeof(buf);
		for (size_t i = 0; i < n; i++)
			buf[i] = (uint8_t)(seed + off + i);
		if (pwrite(m, buf, n, (off_t)off) != (ssize_t)n)
			return -1;
	}
	struct sim_bo *b = &p->bos[p->nbos++];
	b->addr = addr; b->size = size; b->gpu_id = gpu_id; b->flags = flags; b->memfd = m;
	b->offset = next_offset;
	next_offset += size;
	return 0;
}

/* Overwrites the start of BO `index` of the process behind `fd` with `len` bytes of `data`. */
int kfdsim_fill_bo(int fd, uint32_t index, const uint8_t *data, uint64_t len)
{
	struct sim_proc *p = proc_of_fd(fd);
	if (!p) return fail(EBADF);
	if (index >= p->nbos || len > p->bos[index].size) return fail(EINVAL);
	for (uint64_t off = 0; off < len;) {
		ssize_t n = pwrite(p->bos[index].memfd, data + off, len - off, (off_t)off);
		if (n <= 0)
			return -1;
		off += (uint64_t)n;
	}
	return 0;
}

int kfdsim_set_objects(int fd, uint32_t nobjects, const uint8_t *priv, uint32_t priv_size)
{
	struct sim_proc *p = proc_of_fd(fd);
	if (!p) return fail(EBADF);
	if (priv_size > MAX_PRIV) return fail(E2BIG);
	p->nobjects = nobjects;
	p->priv_size = priv_size;
	memcpy(p->priv, priv, priv_size);
	return 0;
}

/* 1 while the process's queues are paused (evicted), else 0; -1 for an unknown fd. */
int kfdsim_paused(int fd) { struct sim_proc *p = proc_of_fd(fd); return p ? p->paused : -1; }

/* 1 once RESUME reached the restored process of `pid`, 0 before, -1 if there is none. */
int kfdsim_resumed(int pid)
{
	struct restored *r = restored_of(pid);
	return r ? __atomic_load_n(&r->resumed, __ATOMIC_ACQUIRE) : -1;
}

/* ---- libc-shaped entry points ---- */

static const char *open_flags(int flags)
{
	int rw = flags & O_ACCMODE;
	const char *mode = rw == O_RDWR ? "O_RDWR" : rw == O_WRONLY ? "O_WRONLY" : "O_RDONLY";
	static __thread char out[48];
	snprintf(out, sizeof(out), "%s%s", mode, flags & O_CLOEXEC ? "|O_CLOEXEC" : "");
	return out;
}

int kfdsim_open(const char *path, int flags, ...)
{
	mode_t mode = 0;
	if (flags & O_CREAT) {
		va_list ap;
		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	if (strcmp(path, "/dev/kfd") == 0) {
		kfdsim_trace("open /dev/kfd %s", open_flags(flags));
		int fd = memfd_create("kfdsim-kfd", (flags & O_CLOEXEC) ? MFD_CLOEXEC : 0);
		if (fd < 0)
			return -1;
		struct sim_proc *p = new_proc(fd, getpid());
		if (!p) { close(fd); return fail(ENOSPC); }
		p->own = 1;
		return fd;
	}
	if (strncmp(path, "/dev/dri/renderD", 16) == 0) {
		kfdsim_trace("open %s %s", path, open_flags(flags));
		/* the name carries the minor: the simulated libdrm (drm_sim.c) tells devices apart by it */
		char name[32];
		snprintf(name, sizeof(name), "kfdsim-render-%s", path + 16);
		return memfd_create(name, (flags & O_CLOEXEC) ? MFD_CLOEXEC : 0);
	}
	return open(path, flags, mode);
}

int kfdsim_close(int fd)
{
	struct sim_proc *p = proc_of_fd(fd);
	if (p && p->alias == fd && p->fd != fd) {
		p->alias = -1;
		return close(fd);
	}
	if (p && !p->restored) {
		for (uint32_t b = 0; b < p->nbos; b++)
			close(p->bos[b].memfd);
		p->used = 0;
	}
	return close(fd);
}

static int may_dump(struct sim_proc *p)
{
	return getpid() == p->owner || tid() == p->tracer_tid;
}

static int criu_checkpoint(struct sim_proc *p, struct kfd_ioctl_criu_args *a)
{
	if (!p->paused)
		return fail(EINVAL);
	if (a->num_devices != p->ngpus || a->num_bos != p->nbos || a->num_objects != p->nobjects ||
	    a->priv_data_size != p->priv_size)
		return fail(EINVAL);
	struct kfd_criu_device_bucket *dev = (void *)(uintptr_t)a->devices;
	struct kfd_criu_bo_bucket *bo = (void *)(uintptr_t)a->bos;
	for (uint32_t i = 0; i < p->ngpus; i++) {
		dev[i].user_gpu_id = p->user[i];
		dev[i].actual_gpu_id = p->actual[i];
		dev[i].drm_fd = KFD_INVALID_FD;
	}
	for (uint32_t i = 0; i < p->nbos; i++) {
		struct sim_bo *b = &p->bos[i];
		bo[i].addr = b->addr;
		bo[i].size = b->size;
		bo[i].offset = b->offset;
		bo[i].restored_offset = 0;
		bo[i].gpu_id = b->gpu_id;
		bo[i].alloc_flags = b->flags;
		bo[i].dmabuf_fd = KFD_INVALID_FD;
		if (b->flags & (KFD_IOC_ALLOC_MEM_FLAGS_VRAM | KFD_IOC_ALLOC_MEM_FLAGS_GTT)) {
			int d = fcntl(b->memfd, F_DUPFD_CLOEXEC, 0);
			if (d < 0)
				return -1;
			bo[i].dmabuf_fd = (uint32_t)d;
		}
	}
	memcpy((void *)(uintptr_t)a->priv_data, p->priv, p->priv_size);
	return 0;
}

static int criu_restore(struct sim_proc *p, struct kfd_ioctl_criu_args *a)
{
	if (p->owner != getpid() || p->restored)
		return fail(EINVAL);
	if (a->num_devices > MAX_GPUS || a->num_bos > MAX_BOS || a->priv_data_size > MAX_PRIV)
		return fail(EINVAL);
	struct kfd_criu_device_bucket *dev = (void *)(uintptr_t)a->devices;
	struct kfd_criu_bo_bucket *bo = (void *)(uintptr_t)a->bos;
	for (uint32_t i = 0; i < a->num_devices; i++) {
		if (fcntl((int)dev[i].drm_fd, F_GETFD) < 0) /* looked up in the caller's fd table */
			return fail(EBADF);
		p->actual[i] = dev[i].actual_gpu_id;
		p->drm_fd[i] = (int)dev[i].drm_fd;
		p->user[i] = dev[i].user_gpu_id;
	}
	p->ngpus = a->num_devices;
	for (uint32_t i = 0; i < a->num_bos; i++) {
		struct sim_bo *b = &p->bos[i];
		b->addr = bo[i].addr; b->size = bo[i].size; b->gpu_id = bo[i].gpu_id; b->flags = bo[i].alloc_flags;
		b->memfd = memfd_create("kfdsim-bo", MFD_CLOEXEC);
		if (b->memfd < 0 || ftruncate(b->memfd, (off_t)b->size))
			return -1;
		b->offset = next_offset;
		next_offset += b->size;
		bo[i].restored_offset = b->offset;
		bo[i].dmabuf_fd = KFD_INVALID_FD;
		if (b->flags & (KFD_IOC_ALLOC_MEM_FLAGS_VRAM | KFD_IOC_ALLOC_MEM_FLAGS_GTT))
			bo[i].dmabuf_fd = (uint32_t)fcntl(b->memfd, F_DUPFD_CLOEXEC, 0);
	}
	p->nbos = a->num_bos;
	p->nobjects = a->num_objects;
	p->priv_size = (uint32_t)a->priv_data_size;
	memcpy(p->priv, (void *)(uintptr_t)a->priv_data, p->priv_size);
	if (register_restored(getpid()))
		return fail(ENOSPC);
	p->restored = 1;
	p->paused = 1; /* queues stay evicted until RESUME */
	return 0;
}

static int criu_op(int fd, struct kfd_ioctl_criu_args *a)
{
	if (a->op == KFD_CRIU_OP_RESUME) {
		struct restored *r = restored_of((pid_t)a->pid); /* the pid's KFD process, whichever process restored it */
		if (!r)
			return fail(ESRCH);
		__atomic_store_n(&r->resumed, 1, __ATOMIC_RELEASE);
		for (int i = 0; i < MAX_PROCS; i++) {
			struct sim_proc *p = &procs[i];
			if (p->used && p->restored && p->owner == (pid_t)a->pid) {
				p->resumed = 1;
				p->paused = 0;
			}
		}
		return 0;
	}
	struct sim_proc *p = proc_of_fd(fd);
	if (!p)
		return fail(EBADF);
	switch (a->op) {
	case KFD_CRIU_OP_PROCESS_INFO:
		if (!may_dump(p))
			return fail(EBADF);
		p->paused = 1;
		a->num_devices = p->ngpus;
		a->num_bos = p->nbos;
		a->num_objects = p->nobjects;
		a->priv_data_size = p->priv_size;
		a->pid = (uint32_t)p->owner;
		return 0;
	case KFD_CRIU_OP_CHECKPOINT:
		if (!may_dump(p))
			return fail(EBADF);
		return criu_checkpoint(p, a);
	case KFD_CRIU_OP_UNPAUSE:
		if (!may_dump(p))
			return fail(EBADF);
		if (!p->paused)
			return fail(EINVAL);
		p->paused = 0;
		return 0;
	case KFD_CRIU_OP_RESTORE:
		return criu_restore(p, a);
	default:
		return fail(EINVAL);
	}
}

static int get_version(int fd, struct kfd_ioctl_get_version_args *v)
{
	if (injected(KFDSIM_GET_VERSION))
		return -1;
	if (!proc_of_fd(fd))
		return fail(ENOTTY);
	v->major_version = 1;
	v->minor_version = version_minor;
	return 0;
}

/* 64-bit FNV-1a (also the hash restored tasks report, restored_task.c) */
uint64_t kfdsim_fnv1a(const void *data, size_t n)
{
	const uint8_t *p = data;
	uint64_t h = 0xcbf29ce484222325ULL;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	return h;
}

static int unused_fd_base = 100;

/* The minor of the render node behind fd (opened through kfdsim_open), -1 if fd is not open, -2 if it is another file. */
int kfdsim_render_minor(int fd)
{
	char link[64], target[128];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	ssize_t len = readlink(link, target, sizeof(target) - 1);
	int minor;
	if (len < 0)
		return -1;
	target[len] = 0;
	return sscanf(target, "/memfd:kfdsim-render-%d", &minor) == 1 ? minor : -2;
}

/* "renderD<minor>@+<n>": the render node behind a device bucket's drm_fd, n = fd - the task's first unused fd */
static void describe_drm_fd(uint32_t fd, char *out, size_t n)
{
	int minor = kfdsim_render_minor((int)fd);
	if (minor == -1)
		snprintf(out, n, "closed");
	else if (minor < 0)
		snprintf(out, n, "other");
	else
		snprintf(out, n, "renderD%d@%+d", minor, (int)fd - unused_fd_base);
}

static const char *const OPS[] = { "PROCESS_INFO", "CHECKPOINT", "UNPAUSE", "RESTORE", "RESUME" };

/* One trace entry for a KFD ioctl: which, on what (a dumped process's fd or the caller's own /dev/kfd), the
 * argument fields that carry meaning for that op, and the result. Written in one piece. */
static void trace_ioctl(int fd, unsigned long request, void *arg, int ret, int err)
{
	if (trace_fd < 0)
		return;
	char buf[8192], what[32], result[48];
	struct sim_proc *p = proc_of_fd(fd);
	if (!p)
		snprintf(what, sizeof(what), "unknown");
	else if (p->own)
		snprintf(what, sizeof(what), "own");
	else
		snprintf(what, sizeof(what), "target:%d", (int)p->owner);
	if (ret < 0)
		snprintf(result, sizeof(result), "-> -1 %s", strerrorname_np(err) ? strerrorname_np(err) : "?");
	else
		snprintf(result, sizeof(result), "-> %d", ret);
	if (request == AMDKFD_IOC_GET_VERSION) {
		struct kfd_ioctl_get_version_args *v = arg;
		if (ret < 0)
			kfdsim_trace("ioctl GET_VERSION fd=%s %s", what, result);
		else
			kfdsim_trace("ioctl GET_VERSION fd=%s %s version=%u.%u", what, result, v->major_version, v->minor_version);
		return;
	}
	struct kfd_ioctl_criu_args *a = arg;
	const char *op = a->op < 5 ? OPS[a->op] : "UNKNOWN";
	switch (a->op) {
	case KFD_CRIU_OP_PROCESS_INFO:
		kfdsim_trace("ioctl CRIU_OP %s fd=%s %s num_devices=%u num_bos=%u num_objects=%u priv_data_size=%llu pid=%u",
			     op, what, result, a->num_devices, a->num_bos, a->num_objects,
			     (unsigned long long)a->priv_data_size, a->pid);
		return;
	case KFD_CRIU_OP_CHECKPOINT:
		kfdsim_trace("ioctl CRIU_OP %s fd=%s num_devices=%u num_bos=%u num_objects=%u priv_data_size=%llu %s",
			     op, what, a->num_devices, a->num_bos, a->num_objects, (unsigned long long)a->priv_data_size,
			     result);
		return;
	case KFD_CRIU_OP_RESUME:
		kfdsim_trace("ioctl CRIU_OP %s fd=%s pid=%u %s", op, what, a->pid, result);
		return;
	case KFD_CRIU_OP_RESTORE: {
		int n = snprintf(buf, sizeof(buf), "ioctl CRIU_OP %s fd=%s num_devices=%u num_bos=%u num_objects=%u "
				 "priv_data_size=%llu priv_data_fnv=%016llx %s", op, what, a->num_devices, a->num_bos,
				 a->num_objects, (unsigned long long)a->priv_data_size,
				 (unsigned long long)kfdsim_fnv1a((void *)(uintptr_t)a->priv_data, (size_t)a->priv_data_size), result);
		struct kfd_criu_device_bucket *dev = (void *)(uintptr_t)a->devices;
		struct kfd_criu_bo_bucket *bo = (void *)(uintptr_t)a->bos;
		for (uint32_t i = 0; i < a->num_devices && n < (int)sizeof(buf) - 200; i++) {
			char drm[48];
			describe_drm_fd(dev[i].drm_fd, drm, sizeof(drm));
			n += snprintf(buf + n, sizeof(buf) - (size_t)n, " | device user_gpu_id=0x%04x actual_gpu_id=0x%04x drm_fd=%s",
				      dev[i].user_gpu_id, dev[i].actual_gpu_id, drm);
		}
		for (uint32_t i = 0; i < a->num_bos && n < (int)sizeof(buf) - 200; i++)
			n += snprintf(buf + n, sizeof(buf) - (size_t)n, " | bo addr=0x%llx size=0x%llx offset=0x%llx gpu_id=0x%04x "
				      "alloc_flags=0x%x -> restored_offset=0x%llx dmabuf=%s", (unsigned long long)bo[i].addr,
				      (unsigned long long)bo[i].size, (unsigned long long)bo[i].offset, bo[i].gpu_id,
				      bo[i].alloc_flags, (unsigned long long)bo[i].restored_offset,
				      ret < 0 ? "-" : bo[i].dmabuf_fd == KFD_INVALID_FD ? "none" : "yes");
		kfdsim_trace("%s", buf);
		return;
	}
	default:
		kfdsim_trace("ioctl CRIU_OP %s fd=%s %s", op, what, result);
	}
}

int kfdsim_ioctl(int fd, unsigned long request, ...)
{
	va_list ap;
	va_start(ap, request);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	int ret;
	if (request == AMDKFD_IOC_GET_VERSION)
		ret = get_version(fd, arg);
	else if (request == AMDKFD_IOC_CRIU_OP)
		ret = injected((int)((struct kfd_ioctl_criu_args *)arg)->op) ? -1 : criu_op(fd, arg);
	else
		return ioctl(fd, request, arg);
	int err = errno;
	trace_ioctl(fd, request, arg, ret, err);
	errno = err;
	return ret;
}

/* Maps a BO by its (current) mmap offset on a KFD or render fd; anything else goes to the real mmap. */
void *kfdsim_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	for (int i = 0; i < MAX_PROCS; i++) {
		if (!procs[i].used)
			continue;
		for (uint32_t b = 0; b < procs[i].nbos; b++) {
			struct sim_bo *bo = &procs[i].bos[b];
			if (bo->offset == (uint64_t)off && len <= bo->size)
				return mmap(addr, len, prot, flags, bo->memfd, 0);
		}
	}
	return mmap(addr, len, prot, flags, fd, off);
}

int kfdsim_munmap(void *addr, size_t len) { return munmap(addr, len); }

/* fstat with device numbers for simulated files: a KFD fd is 235:0, a render node 226:<minor>. */
int kfdsim_fstat(int fd, struct stat *st)
{
	if (fstat(fd, st) < 0)
		return -1;
	char link[64], target[128];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, target, sizeof(target) - 1);
	if (n < 0)
		return 0;
	target[n] = 0;
	int minor;
	if (strncmp(target, "/memfd:kfdsim-kfd", 17) == 0) {
		st->st_mode = S_IFCHR | 0666;
		st->st_rdev = makedev(KFDSIM_KFD_MAJOR, 0);
	} else if (sscanf(target, "/memfd:kfdsim-render-%d", &minor) == 1) {
		st->st_mode = S_IFCHR | 0666;
		st->st_rdev = makedev(226, minor);
	}
	return 0;
}

/* ---- named semaphores (sem_open/sem_close) in a test folder standing for /dev/shm ---- */

static char shm_dir[4096];
static sem_t sim_sem; /* what kfdsim_sem_open hands out; never waited on */

void kfdsim_set_shm_dir(const char *dir) { snprintf(shm_dir, sizeof(shm_dir), "%s", dir); }

/* As glibc's sem_open: the semaphore "name" is the file <shm dir>/sem.<name>; a new one holds its value (an int). */
sem_t *kfdsim_sem_open(const char *name, int oflag, ...)
{
	mode_t mode = 0;
	unsigned value = 0;
	if (oflag & O_CREAT) {
		va_list ap;
		va_start(ap, oflag);
		mode = va_arg(ap, mode_t);
		value = va_arg(ap, unsigned);
		va_end(ap);
	}
	kfdsim_trace("sem_open %s%s", name, oflag & O_CREAT ? " O_CREAT" : "");
	if (!shm_dir[0]) {
		errno = EACCES;
		return SEM_FAILED;
	}
	char path[4200];
	snprintf(path, sizeof(path), "%s/sem.%s", shm_dir, name);
	int fd = open(path, O_RDWR | O_CLOEXEC | (oflag & (O_CREAT | O_EXCL)), mode);
	if (fd < 0)
		return SEM_FAILED;
	struct stat st;
	int ok = fstat(fd, &st) == 0 && (st.st_size > 0 || pwrite(fd, &value, sizeof(value), 0) == sizeof(value));
	close(fd);
	return ok ? &sim_sem : SEM_FAILED;
}

int kfdsim_sem_close(sem_t *sem) { return sem == &sim_sem ? 0 : fail(EINVAL); }

/* ---- criu stand-ins for the restore executor's seam ---- */

#define FDSTORE_SIZE 64
static int fdstore[FDSTORE_SIZE]; /* fd + 1; forked tasks inherit the copies, as with criu's fdstore */
static int fdstore_used;

/* criu's fdstore_add: keeps a copy of fd, returns its id. */
int kfdsim_fdstore_add(int fd)
{
	if (fdstore_used == FDSTORE_SIZE)
		return fail(ENOSPC);
	int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (copy < 0)
		return -1;
	fdstore[fdstore_used] = copy + 1;
	return fdstore_used++;
}

/* criu's fdstore_get: a new fd for what id holds. */
int kfdsim_fdstore_get(int id)
{
	if (id < 0 || id >= fdstore_used || !fdstore[id])
		return fail(EBADF);
	return fcntl(fdstore[id] - 1, F_DUPFD_CLOEXEC, 0);
}

static void fdstore_reset(void)
{
	for (int i = 0; i < fdstore_used; i++)
		if (fdstore[i])
			close(fdstore[i] - 1);
	memset(fdstore, 0, sizeof(fdstore));
	fdstore_used = 0;
}

static int log_lines;
static char last_log[512];

void kfdsim_set_unused_fd_base(int base) { unused_fd_base = base; }

int kfdsim_find_unused_fd(int vpid)
{
	(void)vpid;
	return unused_fd_base;
}

void kfdsim_log(unsigned int level, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = snprintf(last_log, sizeof(last_log), "%u ", level);
	vsnprintf(last_log + n, sizeof(last_log) - (size_t)n, fmt, ap);
	va_end(ap);
	log_lines++;
}

int kfdsim_log_lines(void) { return log_lines; }

/* "<level> <message>" of the last kfdsim_log call. */
const char *kfdsim_last_log(void) { return last_log; }

/* The drm fd RESTORE bound to GPU `index` of the restored process of `pid`, or -1. */
int kfdsim_restored_drm_fd(int pid, uint32_t index)
{
	for (int i = 0; i < MAX_PROCS; i++)
		if (procs[i].used && procs[i].restored && procs[i].owner == pid && index < procs[i].ngpus)
			return procs[i].drm_fd[index];
	return -1;
}
