/*
 * Restored tasks for tests (part of libkfdsim.so): a forked process that runs the executor's RESTORE_EXT_FILE
 * the way criu's child does, without the JVM, and a peer that sends a refill request and hangs up part way.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/*
 * Forks a task that calls fn(ctx, id), reports the result into *result, then waits for a signal. Returns the
 * task's pid, or -1.
 */
int kfdsim_spawn_restore(int (*fn)(void *, int), void *ctx, int id, int *result)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC))
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		int r = fn(ctx, id);
		if (write(p[1], &r, sizeof(r)) != sizeof(r))
			_exit(1);
		for (;;)
			pause();
	}
	close(p[1]);
	ssize_t n = pid > 0 ? read(p[0], result, sizeof(*result)) : -1;
	close(p[0]);
	return n == sizeof(*result) ? pid : -1;
}

/* Waits for a spawned task, killing it first if asked; returns the signal that ended it, or 0. */
int kfdsim_reap(int pid, int kill_first)
{
	int status;
	if (kill_first)
		kill(pid, SIGKILL);
	if (waitpid(pid, &status, 0) < 0)
		return -1;
	return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

/*
 * Sends on socket sk a refill head announcing `announced` fds for KFD file `file_id` (BO indices 0..) with this
 * process's pid, then only the first `sent` of `fds` (one SCM_RIGHTS message each), and closes sk.
 * head_bytes < 16 cuts the head.
 */
int kfdsim_send_partial_refill(int sk, unsigned magic, int file_id, unsigned announced, const int *fds, unsigned sent,
			       int head_bytes)
{
	unsigned head[4] = { magic, (unsigned)file_id, announced, (unsigned)getpid() };
	int ret = 0;
	if (send(sk, head, (size_t)head_bytes, MSG_NOSIGNAL) != head_bytes)
		ret = -errno;
	for (unsigned i = 0; !ret && head_bytes == sizeof(head) && i < announced; i++)
		if (send(sk, &i, sizeof(i), MSG_NOSIGNAL) != sizeof(i))
			ret = -errno;
	for (unsigned i = 0; !ret && head_bytes == sizeof(head) && i < sent; i++) {
		char byte = 0;
		union { struct cmsghdr align; char buf[CMSG_SPACE(sizeof(int))]; } c;
		struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
		struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.buf, .msg_controllen = sizeof(c.buf) };
		memset(&c, 0, sizeof(c));
		struct cmsghdr *h = CMSG_FIRSTHDR(&m);
		h->cmsg_level = SOL_SOCKET;
		h->cmsg_type = SCM_RIGHTS;
		h->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(h), &fds[i], sizeof(int));
		if (sendmsg(sk, &m, MSG_NOSIGNAL) != 1)
			ret = -errno;
	}
	close(sk);
	return ret;
}

struct vma_query {
	uint64_t addr;
	uint64_t old_offset;
	const char *path;
};

/* What an fd is: its /proc link without "/memfd:" and " (deleted)", e.g. "kfdsim-render-129". */
static void describe_fd(int fd, char *out, size_t n)
{
	char link[64], target[256];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	ssize_t len = readlink(link, target, sizeof(target) - 1);
	if (len < 0) {
		snprintf(out, n, "closed");
		return;
	}
	target[len] = 0;
	char *t = strncmp(target, "/memfd:", 7) == 0 ? target + 7 : target;
	char *d = strstr(t, " (deleted)");
	if (d)
		*d = 0;
	snprintf(out, n, "%s", t);
}

/*
 * Forks a task that runs RESTORE_EXT_FILE for each id, then UPDATE_VMA_MAP for each query, and writes one report
 * line per call into out (NUL-terminated). Returns the report's length or -1. The format is the one
 * RestoreExecutorTest's Java reference writes.
 */
int kfdsim_report_child(int (*restore)(void *, int),
			int (*update)(void *, const char *, uint64_t, uint64_t, uint64_t *, int *), void *ctx,
			const int *ids, int nids, const struct vma_query *q, int nq, char *out, int outlen)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC))
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		char line[512], what[256];
		close(p[0]);
		for (int i = 0; i < nids; i++) {
			int fd = restore(ctx, ids[i]);
			if (fd < 0)
				snprintf(what, sizeof(what), "error %d", fd);
			else
				describe_fd(fd, what, sizeof(what));
			int n = snprintf(line, sizeof(line), "file %d: %s\n", ids[i], what);
			if (write(p[1], line, (size_t)n) != n)
				_exit(1);
		}
		for (int i = 0; i < nq; i++) {
			uint64_t off = 0;
			int fd = -1;
			int r = update(ctx, q[i].path, q[i].addr, q[i].old_offset, &off, &fd);
			if (r == 1 && fd >= 0)
				describe_fd(fd, what, sizeof(what));
			else
				snprintf(what, sizeof(what), "%d", fd);
			int n = snprintf(line, sizeof(line), "vma %s %llx %llx: %d %llx %s\n", q[i].path,
					 (unsigned long long)q[i].addr, (unsigned long long)q[i].old_offset, r,
					 (unsigned long long)(r == 1 ? off : 0), what);
			if (write(p[1], line, (size_t)n) != n)
				_exit(1);
		}
		_exit(0);
	}
	close(p[1]);
	int len = 0;
	ssize_t n;
	while (pid > 0 && len < outlen - 1 && (n = read(p[0], out + len, (size_t)(outlen - 1 - len))) > 0)
		len += (int)n;
	close(p[0]);
	out[len] = 0;
	int status;
	if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
		return -1;
	return len;
}

void *kfdsim_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off); /* kfd_sim.c */

/* 64-bit FNV-1a */
static uint64_t fnv1a(const uint8_t *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	return h;
}

struct sized_query {
	uint64_t addr;
	uint64_t old_offset;
	const char *path;
	uint64_t size;
};

/*
 * Forks a restored task: RESTORE_EXT_FILE(id), UPDATE_VMA_MAP for each query, then it reports the restore's
 * result (an int) on *report_fd and waits for a byte on *go_fd; then it maps each moved BO through its answer and
 * reports the FNV-1a hash of its bytes (u64 per query, 0 for one that did not move) and exits.
 */
int kfdsim_spawn_verifier(int (*restore)(void *, int),
			  int (*update)(void *, const char *, uint64_t, uint64_t, uint64_t *, int *), void *ctx, int id,
			  const struct sized_query *q, int nq, int *go_fd, int *report_fd)
{
	int go[2], rep[2];
	if (pipe2(go, O_CLOEXEC) || pipe2(rep, O_CLOEXEC))
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		close(go[1]);
		close(rep[0]);
		int r = restore(ctx, id);
		uint64_t off[64];
		int fd[64];
		for (int i = 0; i < nq && i < 64; i++) {
			fd[i] = -1;
			if (update(ctx, q[i].path, q[i].addr, q[i].old_offset, &off[i], &fd[i]) != 1)
				fd[i] = -2;
		}
		char c;
		if (write(rep[1], &r, sizeof(r)) != sizeof(r) || read(go[0], &c, 1) != 1)
			_exit(1);
		for (int i = 0; i < nq && i < 64; i++) {
			uint64_t h = 0;
			if (fd[i] >= 0) {
				void *m = kfdsim_mmap(NULL, q[i].size, PROT_READ, MAP_SHARED, fd[i], (off_t)off[i]);
				if (m != MAP_FAILED) {
					h = fnv1a(m, q[i].size);
					munmap(m, q[i].size);
				}
			}
			if (write(rep[1], &h, sizeof(h)) != sizeof(h))
				_exit(1);
		}
		_exit(0);
	}
	close(go[0]);
	close(rep[1]);
	*go_fd = go[1];
	*report_fd = rep[0];
	return pid;
}

/* Reads an int or u64s from a verifier's report pipe; returns the bytes read. */
int kfdsim_read_report(int fd, void *buf, int len)
{
	int done = 0;
	ssize_t n;
	while (done < len && (n = read(fd, (char *)buf + done, (size_t)(len - done))) > 0)
		done += (int)n;
	return done;
}

/* Lets a verifier go on: one byte on its go pipe. */
int kfdsim_release(int go_fd)
{
	char c = 1;
	int r = write(go_fd, &c, 1) == 1 ? 0 : -errno;
	close(go_fd);
	return r;
}
