/*
 * upstream-host: stands in for criu 4.2 (or criu-dev, for a plugin with criu-dev's 15 hooks) around a criu plugin
 * built from upstream's sources (its amdgpu_plugin.so, a CR_PLUGIN_DESC plugin), so the compatibility test can drive upstream's plugin through the same hooks, against the
 * same simulated KFD and libdrm, as it drives ours:
 *   - it exports what the plugin links against in criu (print_on_level, opts, criu_get_image_dir,
 *     find_unused_fd_pid, img_streamer_open, add_inventory_plugin, check_and_remove_inventory_plugin) and the
 *     libdrm_amdgpu entry points (forwarded to drm_sim.c), which this executable's symbols take over from the
 *     real libdrm_amdgpu the plugin names;
 *   - it interposes libc's open/close/ioctl/fstat/stat for /dev/kfd and the render nodes (served by kfd_sim.c),
 *     and moves sysfs's KFD topology and /dev/shm (hsakmt's shared memory file and semaphore) into test folders;
 *   - it calls the hooks in criu's order: dump in this process, on its main thread (the thread that "seized" the
 *     simulated process); restore hooks in a forked task (restored_task.c), RESUME_DEVICES_LATE here.
 *   - criu-dev: it also exports fdstore_add/fdstore_get (a table inherited across fork), shmalloc, criu_run_id,
 *     root_item/has_children (the root task has children unless the scenario says "parallel 1": then criu-dev's
 *     plugin copies BO contents in this process, POST_FORKING to RESUME_DEVICES_LATE), read_fd_link,
 *     send_fds/__recv_fds, drmPrimeFDToHandle (GEM handles per render node, numbered from 1 per dma-buf),
 *     drmPrimeHandleToFD (no handle to export) and amdgpu_device_get_fd; answers DRM driver ioctls on render fds
 *     with EINVAL, as a kernel without AMDGPU_GEM_LIST_HANDLES does; lets a dup of a KFD fd reach its process; calls
 *     DUMP_DEVICES_LATE(pid) after the dump's files, RESTORE_INIT after init(RESTORE) (cwd: the images folder), and
 *     RESTORE_EXT_FILE with criu-dev's retry flag (each call that asks for a retry is repeated, at most 8 times).
 * Usage: upstream-host dump|restore PLUGIN.so SCENARIO. SCENARIO has one "key value..." line per item:
 *   images DIR | sysfs DIR | shm DIR | trace FILE | next-offset HEX | unused-fd N      (both)
 *   process PID | gpu ACTUAL USER | bo ADDR SIZE GPU FLAGS FILE|- | objects N PRIVHEX  (dump: the simulated process)
 *   vma MAJOR MINOR | file ID kfd|PATH                                                 (dump: hooks, in order)
 *   restore-file ID | query PATH ADDR OFFSET SIZE | save DIR                           (restore)
 * It prints one result line per hook call on stdout, the plugin's log on stderr, and exits 0 once every hook was
 * called (whatever they returned: the test judges the results), 2 on a bad scenario or a set-up failure.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <semaphore.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kfd_sim.h"

#define KFD_MAJOR 235 /* as kfd_sim.c's fstat answers */
#define DRM_MAJOR 226
#define TOPOLOGY "/sys/class/kfd/kfd/topology"
#define SHM "/dev/shm"
#define MAX_ITEMS 64

/* ---- the scenario ---- */

static struct {
	char images[PATH_MAX], sysfs[PATH_MAX], shm[PATH_MAX], trace[PATH_MAX], save[PATH_MAX];
	uint64_t next_offset;
	int unused_fd;
	int pid;
	int ngpus;
	uint32_t gpu_actual[8], gpu_user[8];
	int nbos;
	struct { uint64_t addr, size; uint32_t gpu, flags; char file[PATH_MAX]; } bos[MAX_ITEMS];
	uint32_t objects;
	uint8_t priv[4096];
	uint32_t priv_size;
	int nsteps; /* dump: vma and file steps in order */
	struct { int is_vma; unsigned major, minor; int id; char path[PATH_MAX]; int fd; } steps[MAX_ITEMS];
	int nrestore;
	int restore_ids[MAX_ITEMS];
	int nq;
	struct sized_query q[MAX_ITEMS];
	char qpath[MAX_ITEMS][64];
	int parallel;
} sc = { .unused_fd = 100, .next_offset = 0x100000000ULL };

static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "upstream-host: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(2);
}

static void read_scenario(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		die("cannot read %s: %s", path, strerror(errno));
	char line[8192], key[32];
	while (fgets(line, sizeof(line), f)) {
		int off = 0;
		if (sscanf(line, "%31s %n", key, &off) != 1)
			continue;
		char *v = line + off;
		v[strcspn(v, "\n")] = 0;
		int ok = 1;
		if (!strcmp(key, "images"))
			snprintf(sc.images, sizeof(sc.images), "%s", v);
		else if (!strcmp(key, "sysfs"))
			snprintf(sc.sysfs, sizeof(sc.sysfs), "%s", v);
		else if (!strcmp(key, "shm"))
			snprintf(sc.shm, sizeof(sc.shm), "%s", v);
		else if (!strcmp(key, "trace"))
			snprintf(sc.trace, sizeof(sc.trace), "%s", v);
		else if (!strcmp(key, "save"))
			snprintf(sc.save, sizeof(sc.save), "%s", v);
		else if (!strcmp(key, "next-offset"))
			ok = sscanf(v, "%lx", &sc.next_offset) == 1;
		else if (!strcmp(key, "unused-fd"))
			ok = sscanf(v, "%d", &sc.unused_fd) == 1;
		else if (!strcmp(key, "process"))
			ok = sscanf(v, "%d", &sc.pid) == 1;
		else if (!strcmp(key, "gpu") && sc.ngpus < 8) {
			ok = sscanf(v, "%x %x", &sc.gpu_actual[sc.ngpus], &sc.gpu_user[sc.ngpus]) == 2;
			sc.ngpus++;
		} else if (!strcmp(key, "bo") && sc.nbos < MAX_ITEMS) {
			ok = sscanf(v, "%lx %lx %x %x %4095s", &sc.bos[sc.nbos].addr, &sc.bos[sc.nbos].size,
				    &sc.bos[sc.nbos].gpu, &sc.bos[sc.nbos].flags, sc.bos[sc.nbos].file) == 5;
			sc.nbos++;
		} else if (!strcmp(key, "objects")) {
			char hex[8193] = "";
			ok = sscanf(v, "%u %8192s", &sc.objects, hex) >= 1;
			for (size_t i = 0; ok && 2 * i + 1 < strlen(hex) && i < sizeof(sc.priv); i++, sc.priv_size++)
				ok = sscanf(hex + 2 * i, "%2hhx", &sc.priv[i]) == 1;
		} else if (!strcmp(key, "vma") && sc.nsteps < MAX_ITEMS) {
			sc.steps[sc.nsteps].is_vma = 1;
			ok = sscanf(v, "%u %u", &sc.steps[sc.nsteps].major, &sc.steps[sc.nsteps].minor) == 2;
			sc.nsteps++;
		} else if (!strcmp(key, "file") && sc.nsteps < MAX_ITEMS) {
			ok = sscanf(v, "%d %4095s", &sc.steps[sc.nsteps].id, sc.steps[sc.nsteps].path) == 2;
			sc.nsteps++;
		} else if (!strcmp(key, "parallel")) {
			ok = sscanf(v, "%d", &sc.parallel) == 1;
		} else if (!strcmp(key, "restore-file") && sc.nrestore < MAX_ITEMS) {
			ok = sscanf(v, "%d", &sc.restore_ids[sc.nrestore++]) == 1;
		} else if (!strcmp(key, "query") && sc.nq < MAX_ITEMS) {
			struct sized_query *q = &sc.q[sc.nq];
			ok = sscanf(v, "%63s %lx %lx %lx", sc.qpath[sc.nq], &q->addr, &q->old_offset, &q->size) == 4;
			q->path = sc.qpath[sc.nq++];
		} else
			ok = 0;
		if (!ok)
			die("bad scenario line: %s %s", key, v);
	}
	fclose(f);
	if (!sc.images[0] || !sc.sysfs[0] || !sc.shm[0] || !sc.trace[0])
		die("the scenario needs images, sysfs, shm and trace");
}

/* ---- criu's exported functions and data the plugin links against ---- */

char opts[1 << 16] __attribute__((aligned(64))); /* struct cr_options, zeroed: no --stream */

void print_on_level(unsigned int level, const char *fmt, ...)
{
	static const char *const names[] = { "MSG", "ERROR", "WARN", "INFO", "DEBUG" };
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "[%s] ", level < 5 ? names[level] : "?");
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

int criu_get_image_dir(void)
{
	static int fd = -1;
	if (fd < 0)
		fd = open(sc.images, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return fd;
}

int find_unused_fd_pid(int pid) { return kfdsim_find_unused_fd(pid); }

int img_streamer_open(char *path, int mode)
{
	(void)path; (void)mode;
	errno = ENOSYS; /* never called: opts.stream is 0 */
	return -1;
}

int add_inventory_plugin(const char *name)
{
	kfdsim_trace("inventory add %s", name);
	printf("inventory %s\n", name);
	return 0;
}

/* The image lists the plugin (the test restores only images with GPU state). */
_Bool check_and_remove_inventory_plugin(const char *name, size_t n)
{
	(void)name; (void)n;
	return 1;
}

/* ---- criu-dev's additions ---- */

#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>

char criu_run_id[37] = "6b1c2f0e-3d4a-4c5b-9e8f-7a6b5c4d3e2f";
static char root_item_storage[256];
void *root_item = root_item_storage;

_Bool has_children(void *item)
{
	(void)item;
	return !sc.parallel;
}

#define FDSTORE_MAX 256
static int fdstore_fds[FDSTORE_MAX], fdstore_n;

/* criu's fdstore keeps its own reference; here a table that a forked task inherits with the fds. */
int fdstore_add(int fd)
{
	if (fdstore_n == FDSTORE_MAX)
		return -1;
	int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (copy < 0)
		return -1;
	fdstore_fds[fdstore_n] = copy;
	return fdstore_n++;
}

int fdstore_get(int id)
{
	if (id < 0 || id >= fdstore_n)
		return -1;
	return fcntl(fdstore_fds[id], F_DUPFD_CLOEXEC, 0);
}

void *shmalloc(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

int read_fd_link(int lfd, char *buf, size_t size)
{
	char link[64];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", lfd);
	ssize_t n = readlink(link, buf, size - 1);
	if (n < 0)
		return -1;
	buf[n] = 0;
	return (int)n;
}

/* SCM_RIGHTS in chunks, one byte of payload each (criu's framing carries per-fd data; this plugin sends none). */
#define FDS_PER_MSG 252
int send_fds(int sock, struct sockaddr_un *saddr, int len, int *fds, int nr_fds, void *data, unsigned ch_size)
{
	(void)data; (void)ch_size;
	for (int i = 0; i < nr_fds; i += FDS_PER_MSG) {
		int n = nr_fds - i < FDS_PER_MSG ? nr_fds - i : FDS_PER_MSG;
		char byte = 0;
		struct iovec iov = { &byte, 1 };
		union { char buf[CMSG_SPACE(sizeof(int) * FDS_PER_MSG)]; struct cmsghdr align; } u;
		struct msghdr m = { .msg_name = saddr, .msg_namelen = (socklen_t)len, .msg_iov = &iov, .msg_iovlen = 1,
				    .msg_control = u.buf, .msg_controllen = CMSG_SPACE(sizeof(int) * n) };
		struct cmsghdr *c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * n);
		memcpy(CMSG_DATA(c), fds + i, sizeof(int) * n);
		if (sendmsg(sock, &m, 0) != 1)
			return -1;
	}
	return 0;
}

int __recv_fds(int sock, int *fds, int nr_fds, void *data, unsigned ch_size, int flags)
{
	(void)data; (void)ch_size;
	for (int i = 0; i < nr_fds;) {
		char byte;
		struct iovec iov = { &byte, 1 };
		union { char buf[CMSG_SPACE(sizeof(int) * FDS_PER_MSG)]; struct cmsghdr align; } u;
		struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
		if (recvmsg(sock, &m, flags | MSG_CMSG_CLOEXEC) != 1)
			return -1;
		struct cmsghdr *c = CMSG_FIRSTHDR(&m);
		if (!c || c->cmsg_type != SCM_RIGHTS)
			return -1;
		int n = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		if (n > nr_fds - i)
			return -1;
		memcpy(fds + i, CMSG_DATA(c), sizeof(int) * n);
		i += n;
	}
	return 0;
}

static int render_minor_of(int fd)
{
	char target[PATH_MAX];
	int minor;
	if (read_fd_link(fd, target, sizeof(target)) < 0 || sscanf(target, "/memfd:kfdsim-render-%d", &minor) != 1)
		return -1;
	return minor;
}

/* GEM handles: one per (render node, dma-buf) as the kernel keeps one per (DRM file, object), from 1 per node. */
static struct { int minor; dev_t dev; ino_t ino; uint32_t handle; } gem[1024];
static int ngem;

int drmPrimeFDToHandle(int fd, int prime_fd, uint32_t *handle)
{
	int minor = render_minor_of(fd);
	struct stat st;
	if (minor < 0 || syscall(SYS_fstat, prime_fd, &st)) {
		errno = EBADF;
		return -1;
	}
	uint32_t next = 1;
	for (int i = 0; i < ngem; i++) {
		if (gem[i].minor != minor)
			continue;
		if (gem[i].dev == st.st_dev && gem[i].ino == st.st_ino) {
			*handle = gem[i].handle;
			return 0;
		}
		next = gem[i].handle + 1;
	}
	if (ngem == 1024) {
		errno = ENOSPC;
		return -1;
	}
	gem[ngem].minor = minor;
	gem[ngem].dev = st.st_dev;
	gem[ngem].ino = st.st_ino;
	gem[ngem].handle = next;
	*handle = gem[ngem++].handle;
	kfdsim_trace("drm PRIME_FD_TO_HANDLE renderD%d handle=%u", minor, *handle);
	return 0;
}

int drmPrimeHandleToFD(int fd, uint32_t handle, uint32_t flags, int *prime_fd)
{
	(void)fd; (void)handle; (void)flags;
	*prime_fd = -1;
	errno = ENOENT; /* no DRM BO of the simulated render nodes has a handle to export */
	return -1;
}

/* ---- libdrm_amdgpu, served by drm_sim.c ---- */

#define FORWARD(ret, name, params, args) \
	ret kfdsim_##name params;        \
	ret name params { return kfdsim_##name args; }

FORWARD(int, amdgpu_device_initialize, (int fd, uint32_t *major, uint32_t *minor, void **dev), (fd, major, minor, dev))
FORWARD(int, amdgpu_device_deinitialize, (void *dev), (dev))
FORWARD(int, amdgpu_device_get_fd, (void *dev), (dev))
FORWARD(int, amdgpu_query_gpu_info, (void *dev, void *info), (dev, info))
FORWARD(int, amdgpu_bo_import, (void *dev, int type, uint32_t handle, void *out), (dev, type, handle, out))
FORWARD(int, amdgpu_create_bo_from_user_mem, (void *dev, void *cpu, uint64_t size, void **bo), (dev, cpu, size, bo))
FORWARD(int, amdgpu_bo_alloc, (void *dev, void *req, void **bo), (dev, req, bo))
FORWARD(int, amdgpu_bo_free, (void *bo), (bo))
FORWARD(int, amdgpu_va_range_alloc, (void *dev, int type, uint64_t size, uint64_t align, uint64_t required,
				     uint64_t *va, void **handle, uint64_t flags),
	(dev, type, size, align, required, va, handle, flags))
FORWARD(int, amdgpu_va_range_free, (void *handle), (handle))
FORWARD(int, amdgpu_bo_va_op, (void *bo, uint64_t offset, uint64_t size, uint64_t addr, uint64_t flags, uint32_t ops),
	(bo, offset, size, addr, flags, ops))
FORWARD(int, amdgpu_bo_cpu_map, (void *bo, void **cpu), (bo, cpu))
FORWARD(int, amdgpu_bo_cpu_unmap, (void *bo), (bo))
FORWARD(int, amdgpu_bo_list_create, (void *dev, uint32_t n, void **bos, uint8_t *prios, void **list),
	(dev, n, bos, prios, list))
FORWARD(int, amdgpu_bo_list_destroy, (void *list), (list))
FORWARD(int, amdgpu_cs_ctx_create, (void *dev, void **ctx), (dev, ctx))
FORWARD(int, amdgpu_cs_ctx_free, (void *ctx), (ctx))
FORWARD(int, amdgpu_cs_submit, (void *ctx, uint64_t flags, void *req, uint32_t n), (ctx, flags, req, n))
FORWARD(int, amdgpu_cs_query_fence_status, (void *fence, uint64_t timeout, uint64_t flags, uint32_t *expired),
	(fence, timeout, flags, expired))

/* ---- libc, interposed ---- */

/* Set while the simulator runs: its own libc calls go to libc. Per thread: the plugin's workers call in too. */
static __thread int in_sim;

#define REAL(name) \
	static __typeof__(&name) real_##name; \
	if (!real_##name) \
		real_##name = (__typeof__(&name))dlsym(RTLD_NEXT, #name)

static int is_device(const char *path)
{
	return !strcmp(path, "/dev/kfd") || !strncmp(path, "/dev/dri/renderD", 16);
}

/* sysfs's KFD topology and /dev/shm, moved into the test's folders; anything else as is. */
static const char *moved(const char *path, char *buf, size_t n)
{
	size_t t = strlen(TOPOLOGY), s = strlen(SHM);
	if (!strncmp(path, TOPOLOGY, t) && (path[t] == '/' || !path[t]))
		snprintf(buf, n, "%s%s", sc.sysfs, path + t);
	else if (!strncmp(path, SHM "/", s + 1))
		snprintf(buf, n, "%s%s", sc.shm, path + s);
	else
		return path;
	return buf;
}

int open(const char *path, int flags, ...)
{
	REAL(open);
	mode_t mode = 0;
	if (flags & (O_CREAT | __O_TMPFILE)) {
		va_list ap;
		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	if (!in_sim && is_device(path)) {
		in_sim++;
		int r = kfdsim_open(path, flags, mode);
		in_sim--;
		return r;
	}
	char buf[PATH_MAX];
	return real_open(moved(path, buf, sizeof(buf)), flags, mode);
}

int close(int fd)
{
	REAL(close);
	if (in_sim)
		return real_close(fd);
	in_sim++;
	int r = kfdsim_close(fd);
	in_sim--;
	return r;
}

int ioctl(int fd, unsigned long request, ...)
{
	REAL(ioctl);
	va_list ap;
	va_start(ap, request);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	if (in_sim)
		return real_ioctl(fd, request, arg);
	/* a DRM driver ioctl (AMDGPU_GEM_LIST_HANDLES, GEM_OP, GEM_MMAP...) on a render node: the kernel this simulates
	 * has none of criu-dev's, and DRM answers an unknown driver ioctl with EINVAL */
	if (((request >> 8) & 0xff) == 'd' && (request & 0xff) >= 0x40 && render_minor_of(fd) >= 0) {
		kfdsim_trace("ioctl DRM 0x%lx renderD%d = -1 EINVAL", request, render_minor_of(fd));
		errno = EINVAL;
		return -1;
	}
	in_sim++;
	int r = kfdsim_ioctl(fd, request, arg);
	in_sim--;
	return r;
}

/* criu-dev's plugin keeps a dup of each dumped fd, and UNPAUSEs through the KFD one */
int dup(int fd)
{
	REAL(dup);
	int r = real_dup(fd);
	if (r >= 0 && !in_sim)
		kfdsim_note_dup(fd, r);
	return r;
}

int fstat(int fd, struct stat *st)
{
	REAL(fstat);
	if (in_sim)
		return real_fstat(fd, st);
	in_sim++;
	int r = kfdsim_fstat(fd, st);
	in_sim--;
	return r;
}

/* The device nodes exist as the simulator numbers them: /dev/kfd 235:0, /dev/dri/renderD<n> 226:<n>. */
int stat(const char *path, struct stat *st)
{
	REAL(stat);
	unsigned minor;
	if (!strcmp(path, "/dev/kfd") || sscanf(path, "/dev/dri/renderD%u", &minor) == 1) {
		memset(st, 0, sizeof(*st));
		st->st_mode = S_IFCHR | 0666;
		st->st_rdev = path[5] == 'k' ? makedev(KFD_MAJOR, 0) : makedev(DRM_MAJOR, minor);
		return 0;
	}
	char buf[PATH_MAX];
	return real_stat(moved(path, buf, sizeof(buf)), st);
}

FILE *fopen(const char *path, const char *mode)
{
	REAL(fopen);
	char buf[PATH_MAX];
	return real_fopen(moved(path, buf, sizeof(buf)), mode);
}

DIR *opendir(const char *path)
{
	REAL(opendir);
	char buf[PATH_MAX];
	return real_opendir(moved(path, buf, sizeof(buf)));
}

/* POSIX shared memory lives in /dev/shm: "/name" is /dev/shm/name. */
int shm_open(const char *name, int oflag, mode_t mode)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s%s", SHM, name);
	kfdsim_trace("shm_open %s%s", name, oflag & O_CREAT ? " O_CREAT" : "");
	return open(path, oflag | O_CLOEXEC, mode);
}

/* sem_open and sem_close are the simulator's (build.sh links them to kfdsim_sem_open/close): semaphores live in
 * its /dev/shm folder. */

/* ---- driving the hooks ---- */

enum { HOOK_DUMP_EXT_FILE = 2, HOOK_RESTORE_EXT_FILE = 3, HOOK_HANDLE_DEVICE_VMA = 7, HOOK_UPDATE_VMA_MAP = 8,
       HOOK_RESUME_DEVICES_LATE = 9, HOOK_POST_FORKING = 12, HOOK_RESTORE_INIT = 13, HOOK_DUMP_DEVICES_LATE = 14 };
enum { STAGE_DUMP = 0, STAGE_RESTORE = 2 };

struct plugin_desc {
	const char *name;
	int (*init)(int stage);
	void (*exit)(int stage, int ret);
	unsigned int version;
	unsigned int max_hooks;
	void *hooks[];
};

static struct plugin_desc *desc;
static int criu_dev; /* the plugin has criu-dev's hooks: this host acts as criu-dev */

static void *hook(int n)
{
	if ((unsigned)n >= desc->max_hooks || !desc->hooks[n])
		die("the plugin has no hook %d", n);
	return desc->hooks[n];
}

/* A trace mark and a result line for one hook call. */
static int called(const char *what, int rc)
{
	char line[256];
	snprintf(line, sizeof(line), "return %s = %d", what, rc);
	kfdsim_trace_mark(line);
	printf("hook %s = %d\n", what, rc);
	fflush(stdout);
	return rc;
}

static void call_mark(const char *what)
{
	char line[256];
	snprintf(line, sizeof(line), "call %s", what);
	kfdsim_trace_mark(line);
}

static int read_file(const char *path, uint8_t **data, size_t *len)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	fseek(f, 0, SEEK_END);
	*len = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	*data = malloc(*len ? *len : 1);
	size_t n = *data ? fread(*data, 1, *len, f) : 0;
	fclose(f);
	return n == *len ? 0 : -1;
}

static int dump(void)
{
	/* the process as it runs before criu comes: its KFD process (seized by this thread) and its render fds */
	int kfd = kfdsim_create_process(sc.pid, (int)syscall(SYS_gettid));
	if (kfd < 0)
		die("cannot create the simulated process");
	for (int i = 0; i < sc.ngpus; i++)
		kfdsim_add_gpu(kfd, sc.gpu_actual[i], sc.gpu_user[i]);
	for (int i = 0; i < sc.nbos; i++) {
		if (kfdsim_add_bo(kfd, sc.bos[i].addr, sc.bos[i].size, sc.bos[i].gpu, sc.bos[i].flags, (uint32_t)i))
			die("cannot add BO %d", i);
		uint8_t *data;
		size_t len;
		if (strcmp(sc.bos[i].file, "-")) {
			if (read_file(sc.bos[i].file, &data, &len) || kfdsim_fill_bo(kfd, (uint32_t)i, data, len))
				die("cannot fill BO %d from %s", i, sc.bos[i].file);
			free(data);
		}
	}
	kfdsim_set_objects(kfd, sc.objects, sc.priv, sc.priv_size);
	for (int i = 0; i < sc.nsteps; i++)
		if (!sc.steps[i].is_vma)
			sc.steps[i].fd = strcmp(sc.steps[i].path, "kfd") ? open(sc.steps[i].path, O_RDWR) : kfd;

	kfdsim_trace_start(sc.trace);
	call_mark("init DUMP");
	called("init DUMP", desc->init(STAGE_DUMP));
	int (*vma)(int, const struct stat *) = hook(HOOK_HANDLE_DEVICE_VMA);
	int (*file)(int, int) = hook(HOOK_DUMP_EXT_FILE);
	for (int i = 0; i < sc.nsteps; i++) {
		char what[64];
		if (sc.steps[i].is_vma) {
			struct stat st = { .st_mode = S_IFCHR, .st_rdev = makedev(sc.steps[i].major, sc.steps[i].minor) };
			snprintf(what, sizeof(what), "HANDLE_DEVICE_VMA %u:%u", sc.steps[i].major, sc.steps[i].minor);
			call_mark(what);
			called(what, vma(-1, &st));
		} else {
			snprintf(what, sizeof(what), "DUMP_EXT_FILE %d", sc.steps[i].id);
			call_mark(what);
			called(what, file(sc.steps[i].fd, sc.steps[i].id));
		}
	}
	if (criu_dev) {
		call_mark("DUMP_DEVICES_LATE");
		called("DUMP_DEVICES_LATE", ((int (*)(int))hook(HOOK_DUMP_DEVICES_LATE))(sc.pid));
	}
	call_mark("exit DUMP");
	desc->exit(STAGE_DUMP, 0);
	kfdsim_trace_mark("return exit DUMP");
	printf("paused %d\n", kfdsim_paused(kfd));
	return 0;
}

/* The restored task's hooks (no context: upstream's plugin keeps its state in globals). */
static int task_restore(void *ctx, int id)
{
	(void)ctx;
	if (!criu_dev)
		return ((int (*)(int))hook(HOOK_RESTORE_EXT_FILE))(id);
	for (int i = 0; i < 8; i++) {
		_Bool retry = 0;
		int r = ((int (*)(int, _Bool *))hook(HOOK_RESTORE_EXT_FILE))(id, &retry);
		if (!retry)
			return r;
	}
	return -EAGAIN;
}

static int task_update(void *ctx, const char *path, uint64_t addr, uint64_t old, uint64_t *new_offset, int *fd)
{
	(void)ctx;
	return ((int (*)(const char *, uint64_t, uint64_t, uint64_t *, int *))hook(HOOK_UPDATE_VMA_MAP))(path, addr, old,
											   new_offset, fd);
}

static int restore(void)
{
	kfdsim_trace_start(sc.trace);
	call_mark("init RESTORE");
	if (called("init RESTORE", desc->init(STAGE_RESTORE)))
		return 0;
	if (criu_dev) {
		/* criu runs in its work dir, the images dir by default; criu-dev's RESTORE_INIT lists it */
		if (chdir(sc.images))
			die("cannot enter %s", sc.images);
		call_mark("RESTORE_INIT");
		if (called("RESTORE_INIT", ((int (*)(void))hook(HOOK_RESTORE_INIT))()))
			return 0;
	}
	int go, report;
	int pid = kfdsim_spawn_task(task_restore, task_update, NULL, sc.restore_ids, sc.nrestore, sc.q, sc.nq,
				    sc.save[0] ? sc.save : NULL, &go, &report);
	if (pid < 0)
		die("cannot fork the restored task");
	printf("task %d\n", pid);
	if (criu_dev && desc->hooks[HOOK_POST_FORKING]) {
		call_mark("POST_FORKING");
		called("POST_FORKING", ((int (*)(void))hook(HOOK_POST_FORKING))());
	}
	for (int i = 0; i < sc.nrestore; i++) {
		int32_t r;
		if (kfdsim_read_report(report, &r, sizeof(r)) != sizeof(r))
			die("the restored task died");
		printf("restore %d = %d\n", sc.restore_ids[i], r);
	}
	for (int i = 0; i < sc.nq; i++) {
		struct vma_answer a;
		if (kfdsim_read_report(report, &a, sizeof(a)) != sizeof(a))
			die("the restored task died");
		printf("vma %d = %d %d %lx\n", i, a.rc, a.minor, a.new_offset);
	}
	call_mark("RESUME_DEVICES_LATE task");
	called("RESUME_DEVICES_LATE task", ((int (*)(int))hook(HOOK_RESUME_DEVICES_LATE))(pid));
	printf("resumed %d\n", kfdsim_resumed(pid));
	fflush(stdout);
	if (kfdsim_release(go))
		die("cannot release the restored task");
	for (int i = 0; i < sc.nq; i++) {
		uint64_t h;
		if (kfdsim_read_report(report, &h, sizeof(h)) != sizeof(h))
			die("the restored task died");
		printf("hash %d = %016lx\n", i, h);
	}
	printf("task-exit %d\n", kfdsim_reap(pid, 0));
	call_mark("exit RESTORE");
	desc->exit(STAGE_RESTORE, 0);
	kfdsim_trace_mark("return exit RESTORE");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 4 || (strcmp(argv[1], "dump") && strcmp(argv[1], "restore")))
		die("usage: upstream-host dump|restore PLUGIN.so SCENARIO");
	setvbuf(stdout, NULL, _IOLBF, 0);
	read_scenario(argv[3]);
	kfdsim_set_next_offset(sc.next_offset);
	kfdsim_set_unused_fd_base(sc.unused_fd);
	kfdsim_set_shm_dir(sc.shm);
	/* criu links libprotobuf-c; the plugin uses it without naming it */
	if (!dlopen("libprotobuf-c.so.1", RTLD_NOW | RTLD_GLOBAL))
		die("%s", dlerror());
	void *h = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
	if (!h)
		die("%s", dlerror());
	desc = dlsym(h, "CR_PLUGIN_DESC");
	if (!desc)
		die("%s has no CR_PLUGIN_DESC", argv[2]);
	printf("plugin %s version %#x hooks %u\n", desc->name, desc->version, desc->max_hooks);
	criu_dev = desc->max_hooks > HOOK_DUMP_DEVICES_LATE;
	return !strcmp(argv[1], "dump") ? dump() : restore();
}
