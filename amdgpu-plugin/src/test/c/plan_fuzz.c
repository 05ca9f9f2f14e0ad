/*
 * Runs a restore plan whose numbers a fuzz test mutated (PlanFuzzTest) in a forked task, as criu's restored task
 * runs it, and reports what happened: each program's result and log lines, the bytes it changed outside the ranges
 * it may write, or that it crashed or hung. The task is disposable: whatever the executor does to fds and memory
 * there does not reach the test's JVM.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/kfd_ioctl.h>

#include "kfd_sim.h"

#define FUZZ_MAX_IDS 16

/* kfd_sim.c's log of criu's stand-in print_on_level */
int kfdsim_log_lines(void);
const char *kfdsim_last_log(void);

struct fuzz_range {
	uint64_t addr;
	uint64_t len;
};

struct fuzz_result {
	int32_t rc[FUZZ_MAX_IDS];
	int32_t lines[FUZZ_MAX_IDS];
	char log[FUZZ_MAX_IDS][256]; /* the last line each program logged */
	uint64_t stray;              /* watched bytes changed outside every allowed range */
	uint64_t first_stray;        /* the address of the first */
	int32_t ended;               /* 1 once every program ran */
	int32_t pad;
};

/*
 * The open of the fuzz's seam: the simulated devices, and /dev/null for stand-ins; a mutated step that takes
 * another buffer of the plan for a path reaches no real file (it could otherwise create or truncate one).
 */
int kfdsim_fuzz_open(const char *path, int flags, ...)
{
	if (strcmp(path, "/dev/kfd") == 0 || strncmp(path, "/dev/dri/renderD", 16) == 0)
		return kfdsim_open(path, flags & ~O_CREAT);
	if (strcmp(path, "/dev/null") == 0)
		return open(path, flags & ~(O_CREAT | O_TMPFILE));
	errno = ENOENT;
	return -1;
}

/* The ioctl of the fuzz's seam: KFD's two requests reach the simulator, any other request no driver. */
int kfdsim_fuzz_ioctl(int fd, unsigned long request, ...)
{
	va_list ap;
	va_start(ap, request);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	if (request == AMDKFD_IOC_GET_VERSION || request == AMDKFD_IOC_CRIU_OP)
		return kfdsim_ioctl(fd, request, arg);
	errno = ENOTTY;
	return -1;
}

static int in_any(uint64_t addr, const struct fuzz_range *r, int n)
{
	for (int i = 0; i < n; i++)
		if (addr >= r[i].addr && addr - r[i].addr < r[i].len)
			return 1;
	return 0;
}

static void run_child(int (*restore)(void *, int), void *ctx, const int *ids, int nids, const struct fuzz_range *watch,
		      int nwatch, const struct fuzz_range *allowed, int nallowed, struct fuzz_result *res)
{
	uint64_t total = 0;
	for (int i = 0; i < nwatch; i++)
		total += watch[i].len;
	uint8_t *before = mmap(NULL, total + 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (before == MAP_FAILED)
		_exit(2);
	uint8_t *at = before;
	for (int i = 0; i < nwatch; i++, at += watch[i - 1].len)
		memcpy(at, (const void *)(uintptr_t)watch[i].addr, watch[i].len);
	for (int i = 0; i < nids; i++) {
		int lines = kfdsim_log_lines();
		res->rc[i] = restore(ctx, ids[i]);
		res->lines[i] = kfdsim_log_lines() - lines;
		if (res->lines[i])
			snprintf(res->log[i], sizeof(res->log[i]), "%s", kfdsim_last_log());
	}
	at = before;
	for (int i = 0; i < nwatch; i++) {
		const uint8_t *now = (const uint8_t *)(uintptr_t)watch[i].addr;
		for (uint64_t k = 0; k < watch[i].len; k++, at++) {
			if (now[k] == *at || in_any(watch[i].addr + k, allowed, nallowed))
				continue;
			if (!res->stray++)
				res->first_stray = watch[i].addr + k;
		}
	}
	res->ended = 1;
	_exit(0);
}

/* Receives whatever the task sent on the refill channel (drain_fd's peer) and closes the fds that came with it. */
static void drain(int fd)
{
	for (;;) {
		union {
			struct cmsghdr align;
			char buf[CMSG_SPACE(sizeof(int) * 64)];
		} control;
		char data[4096];
		struct iovec iov = { .iov_base = data, .iov_len = sizeof(data) };
		struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
				      .msg_controllen = sizeof(control.buf) };
		if (recvmsg(fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC) <= 0)
			return;
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
			if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
				continue;
			int n = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
			int fds[64];
			memcpy(fds, CMSG_DATA(c), sizeof(int) * (size_t)n);
			for (int k = 0; k < n; k++)
				close(fds[k]);
		}
	}
}

/*
 * Forks a task that snapshots the watched ranges, runs restore(ctx, id) for each id, and counts the watched bytes
 * that changed outside every allowed range; then drains drain_fd (when >= 0). Returns 0 when the task ended
 * normally (*out filled in), -1 when it had not ended after timeout_ms (it is killed), the signal number when a
 * signal ended it, 1000 + its exit status when it exited early, -2 when no task could be started.
 */
int kfdsim_fuzz_child(int (*restore)(void *, int), void *ctx, const int *ids, int nids, const struct fuzz_range *watch,
		      int nwatch, const struct fuzz_range *allowed, int nallowed, int drain_fd, int timeout_ms,
		      struct fuzz_result *out)
{
	if (nids > FUZZ_MAX_IDS)
		return -2;
	struct fuzz_result *res = mmap(NULL, sizeof(*res), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (res == MAP_FAILED)
		return -2;
	memset(res, 0, sizeof(*res));
	pid_t pid = fork();
	if (pid == 0)
		run_child(restore, ctx, ids, nids, watch, nwatch, allowed, nallowed, res);
	int pidfd = pid > 0 ? (int)syscall(SYS_pidfd_open, pid, 0) : -1;
	int ret = -2;
	if (pidfd >= 0) {
		struct pollfd p = { .fd = pidfd, .events = POLLIN };
		int r;
		while ((r = poll(&p, 1, timeout_ms)) < 0 && errno == EINTR)
			;
		if (r == 0)
			kill(pid, SIGKILL);
		int status;
		if (waitpid(pid, &status, 0) == pid)
			ret = r == 0 ? -1
			      : WIFSIGNALED(status) ? WTERMSIG(status)
			      : WEXITSTATUS(status) || !res->ended ? 1000 + WEXITSTATUS(status)
								     : 0;
		close(pidfd);
	} else if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	if (drain_fd >= 0)
		drain(drain_fd);
	memcpy(out, res, sizeof(*res));
	munmap(res, sizeof(*res));
	return ret;
}
