/*
 * Test device: an AMD GPU at the syscall boundary for a real criu in a container without one (AmdgpuRestoreSigintIT).
 * A seccomp filter that criu starts under (and every task it forks inherits) hands the KFD and DRM ioctls to a
 * server process through a seccomp user-notification listener. This catches the calls wherever they are made —
 * the shim's executor in the restored task calls libc's ioctl directly, and libdrm_amdgpu in criu's JVM goes
 * through its own — which no LD_PRELOAD could. /dev/kfd and /dev/dri/renderD<N> are plain files in the container,
 * so open() works; the server recognises a call by the path of its fd.
 *
 * The server answers as the kernel would: GET_VERSION with this header's KFD version, CRIU_OP RESTORE with a
 * dma-buf per VRAM/GTT BO (a memfd of the BO's size, installed in the calling task). It never answers a DRM ioctl:
 * the refill in criu's main process blocks there, as on a GPU that no longer answers, until the test writes to
 * DIR/release (then the call fails with ENODEV). Files in DIR: sock (where the listener arrives), trace (one line
 * per answered call), blocked (written once a DRM call is held: "<pid> <tid> <request>").
 *
 * usage: fake-amd serve DIR           the server; ends when every task under the filter has ended
 *        fake-amd exec DIR CMD ARG... installs the filter, hands its listener to the server of DIR, execs CMD
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/kfd_ioctl.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#define DRM_IOCTL_TYPE 'd'
#define MAX_BOS 4096
#define MAX_HELD 64

static const char *dir;

static void die(const char *what)
{
	fprintf(stderr, "fake-amd: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void path_in(char *buf, size_t len, const char *name)
{
	if ((size_t)snprintf(buf, len, "%s/%s", dir, name) >= len) {
		fprintf(stderr, "fake-amd: %s/%s: path too long\n", dir, name);
		exit(2);
	}
}

static struct sockaddr_un address(void)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	path_in(a.sun_path, sizeof(a.sun_path), "sock");
	return a;
}

/* ---- exec: the filter, then criu ---- */

static int install_filter(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_ioctl, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		/* the request's low 32 bits (little-endian), which is all the kernel looks at */
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[1])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)AMDKFD_IOC_GET_VERSION, 3, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)AMDKFD_IOC_CRIU_OP, 2, 0),
		BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0xff00),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, DRM_IOCTL_TYPE << 8, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };
	int fd = (int)syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
	if (fd < 0)
		die("seccomp(SECCOMP_FILTER_FLAG_NEW_LISTENER)");
	return fd;
}

static int run_exec(char **argv)
{
	int listener = install_filter();
	int sk = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un a = address();
	if (sk < 0 || connect(sk, (struct sockaddr *)&a, sizeof(a)))
		die(a.sun_path);
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int))];
	} control = { 0 };
	char byte = 0;
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
			      .msg_controllen = sizeof(control.buf) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &listener, sizeof(int));
	if (sendmsg(sk, &msg, 0) != 1)
		die("send the listener");
	/* the server acknowledges once it serves the listener: no call can find nobody answering */
	if (read(sk, &byte, 1) != 1)
		die("no acknowledgement from the server");
	close(sk);
	close(listener);
	execvp(argv[0], argv);
	die(argv[0]);
	return 1;
}

/* ---- serve: the device ---- */

static FILE *trace;

static int receive_listener(void)
{
	struct sockaddr_un a = address();
	unlink(a.sun_path);
	int srv = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (srv < 0 || bind(srv, (struct sockaddr *)&a, sizeof(a)) || listen(srv, 1))
		die(a.sun_path);
	int sk = accept4(srv, NULL, NULL, SOCK_CLOEXEC);
	if (sk < 0)
		die("accept");
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int))];
	} control;
	char byte;
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
			      .msg_controllen = sizeof(control.buf) };
	if (recvmsg(sk, &msg, MSG_CMSG_CLOEXEC) != 1)
		die("receive the listener");
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	if (!c || c->cmsg_type != SCM_RIGHTS)
		die("no listener in the message");
	int listener;
	memcpy(&listener, CMSG_DATA(c), sizeof(int));
	if (write(sk, &byte, 1) != 1)
		die("acknowledge");
	close(sk);
	close(srv);
	unlink(a.sun_path);
	return listener;
}

static void respond(int listener, uint64_t id, int64_t val, int error, uint32_t flags)
{
	struct seccomp_notif_resp r = { .id = id, .val = val, .error = error, .flags = flags };
	if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &r) && errno != ENOENT) /* ENOENT: the caller is gone */
		die("SECCOMP_IOCTL_NOTIF_SEND");
}

static int fd_path(pid_t tid, uint64_t fd, char *buf, size_t len)
{
	char link[64];
	snprintf(link, sizeof(link), "/proc/%d/fd/%llu", tid, (unsigned long long)fd);
	ssize_t n = readlink(link, buf, len - 1);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return 0;
}

static int tgid_of(pid_t tid)
{
	char path[64], line[128];
	snprintf(path, sizeof(path), "/proc/%d/status", tid);
	FILE *f = fopen(path, "re");
	int tgid = -1;
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Tgid: %d", &tgid) == 1)
			break;
	fclose(f);
	return tgid;
}

/* Reads or writes the caller's memory; 0 or -errno. */
static int task_mem(pid_t tid, uint64_t addr, void *buf, size_t len, int write)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/mem", tid);
	int fd = open(path, (write ? O_WRONLY : O_RDONLY) | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = write ? pwrite(fd, buf, len, (off_t)addr) : pread(fd, buf, len, (off_t)addr);
	int err = n < 0 ? errno : EIO;
	close(fd);
	return n == (ssize_t)len ? 0 : -err;
}

static int get_version(pid_t tid, uint64_t argp)
{
	struct kfd_ioctl_get_version_args v = { .major_version = KFD_IOCTL_MAJOR_VERSION,
						 .minor_version = KFD_IOCTL_MINOR_VERSION };
	int ret = task_mem(tid, argp, &v, sizeof(v), 1);
	fprintf(trace, "GET_VERSION pid %d: %s\n", tgid_of(tid), ret ? strerror(-ret) : "ok");
	return ret;
}

/* RESTORE: a memfd of each VRAM/GTT BO's size as its dma-buf, installed in the caller. */
static int criu_restore(int listener, uint64_t id, pid_t tid, uint64_t argp)
{
	static struct kfd_criu_bo_bucket bos[MAX_BOS];
	struct kfd_ioctl_criu_args a;
	int ret = task_mem(tid, argp, &a, sizeof(a), 0);
	if (ret)
		return ret;
	if (a.op != KFD_CRIU_OP_RESTORE || a.num_bos > MAX_BOS) {
		fprintf(trace, "CRIU_OP %u with %u BOs pid %d: refused\n", a.op, a.num_bos, tgid_of(tid));
		return -EINVAL;
	}
	if ((ret = task_mem(tid, a.bos, bos, sizeof(bos[0]) * a.num_bos, 0)))
		return ret;
	unsigned dmabufs = 0;
	for (uint32_t i = 0; i < a.num_bos; i++) {
		struct kfd_criu_bo_bucket *b = &bos[i];
		b->restored_offset = b->offset;
		if (!(b->alloc_flags & (KFD_IOC_ALLOC_MEM_FLAGS_VRAM | KFD_IOC_ALLOC_MEM_FLAGS_GTT)))
			continue;
		int mfd = memfd_create("fake-amd-dmabuf", MFD_CLOEXEC);
		if (mfd < 0 || ftruncate(mfd, (off_t)b->size))
			return -errno;
		struct seccomp_notif_addfd add = { .id = id, .srcfd = (uint32_t)mfd, .newfd_flags = O_CLOEXEC };
		int tfd = ioctl(listener, SECCOMP_IOCTL_NOTIF_ADDFD, &add);
		int err = errno;
		close(mfd);
		if (tfd < 0)
			return -err;
		b->dmabuf_fd = (uint32_t)tfd;
		dmabufs++;
	}
	if ((ret = task_mem(tid, a.bos, bos, sizeof(bos[0]) * a.num_bos, 1)))
		return ret;
	fprintf(trace, "RESTORE pid %d: %u BOs, %u dma-bufs\n", tgid_of(tid), a.num_bos, dmabufs);
	return 0;
}

static void publish_blocked(pid_t tid, uint64_t request)
{
	char tmp[PATH_MAX], final[PATH_MAX];
	path_in(tmp, sizeof(tmp), "blocked.new");
	path_in(final, sizeof(final), "blocked");
	FILE *f = fopen(tmp, "we");
	if (!f)
		die(tmp);
	fprintf(f, "%d %d 0x%llx\n", tgid_of(tid), tid, (unsigned long long)request);
	if (fclose(f) || rename(tmp, final))
		die(final);
}

static int run_serve(void)
{
	char path[PATH_MAX];
	path_in(path, sizeof(path), "trace");
	trace = fopen(path, "we");
	if (!trace)
		die(path);
	setvbuf(trace, NULL, _IOLBF, 0);
	path_in(path, sizeof(path), "release");
	if (mkfifo(path, 0600) && errno != EEXIST)
		die(path);
	int release = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC); /* O_RDWR: no end-of-file between writers */
	if (release < 0)
		die(path);
	int listener = receive_listener();

	struct seccomp_notif_sizes sizes;
	if (syscall(__NR_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes))
		die("SECCOMP_GET_NOTIF_SIZES");
	struct seccomp_notif *req = calloc(1, sizes.seccomp_notif > sizeof(*req) ? sizes.seccomp_notif : sizeof(*req));
	uint64_t held[MAX_HELD];
	unsigned num_held = 0;
	for (;;) {
		struct pollfd p[2] = { { .fd = listener, .events = POLLIN }, { .fd = release, .events = POLLIN } };
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			die("poll");
		}
		if (p[1].revents & POLLIN) {
			char buf[64];
			while (read(release, buf, sizeof(buf)) > 0)
				;
			for (unsigned i = 0; i < num_held; i++)
				respond(listener, held[i], -1, -ENODEV, 0);
			fprintf(trace, "released %u held DRM call(s) with ENODEV\n", num_held);
			num_held = 0;
		}
		if (p[0].revents & POLLIN) {
			memset(req, 0, sizes.seccomp_notif);
			if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, req)) {
				if (errno == EINTR || errno == ENOENT)
					continue;
				die("SECCOMP_IOCTL_NOTIF_RECV");
			}
			pid_t tid = (pid_t)req->pid;
			uint64_t fd = req->data.args[0], request = (uint32_t)req->data.args[1], argp = req->data.args[2];
			char target[PATH_MAX];
			if (fd_path(tid, fd, target, sizeof(target))) {
				respond(listener, req->id, 0, 0, SECCOMP_USER_NOTIF_FLAG_CONTINUE);
				continue;
			}
			int ret;
			if (strcmp(target, "/dev/kfd") == 0 && request == (uint32_t)AMDKFD_IOC_GET_VERSION) {
				ret = get_version(tid, argp);
			} else if (strcmp(target, "/dev/kfd") == 0 && request == (uint32_t)AMDKFD_IOC_CRIU_OP) {
				ret = criu_restore(listener, req->id, tid, argp);
			} else if (strncmp(target, "/dev/dri/renderD", 16) == 0 && num_held < MAX_HELD) {
				held[num_held++] = req->id;
				fprintf(trace, "holding DRM ioctl 0x%llx on %s of pid %d\n", (unsigned long long)request,
					target, tgid_of(tid));
				publish_blocked(tid, request);
				continue;
			} else {
				respond(listener, req->id, 0, 0, SECCOMP_USER_NOTIF_FLAG_CONTINUE);
				continue;
			}
			respond(listener, req->id, ret ? -1 : 0, ret, 0);
		} else if (p[0].revents & (POLLHUP | POLLERR)) {
			fprintf(trace, "every task under the filter has ended\n");
			return 0;
		}
	}
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "serve") == 0) {
		dir = argv[2];
		return run_serve();
	}
	if (argc >= 4 && strcmp(argv[1], "exec") == 0) {
		dir = argv[2];
		return run_exec(argv + 3);
	}
	fprintf(stderr, "usage: fake-amd serve DIR | fake-amd exec DIR CMD [ARG...]\n");
	return 2;
}
