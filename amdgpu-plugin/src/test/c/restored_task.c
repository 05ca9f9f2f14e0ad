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

#include "kfd_sim.h"

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


static int write_all(int fd, const void *buf, size_t len)
{
	for (size_t done = 0; done < len;) {
		ssize_t n = write(fd, (const char *)buf + done, len - done);
		if (n <= 0)
			return -1;
		done += (size_t)n;
	}
	return 0;
}

/* The bytes behind a moved mapping: hashed, and written to save_dir/vma-<i>.bin when save_dir is set. */
static uint64_t read_mapping(const struct sized_query *q, int i, int fd, uint64_t off, const char *save_dir)
{
	void *m = kfdsim_mmap(NULL, q->size, PROT_READ, MAP_SHARED, fd, (off_t)off);
	if (m == MAP_FAILED)
		return 0;
	uint64_t h = kfdsim_fnv1a(m, q->size);
	if (save_dir) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/vma-%d.bin", save_dir, i);
		int out = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (out < 0 || write_all(out, m, q->size))
			h = 0;
		if (out >= 0)
			close(out);
	}
	munmap(m, q->size);
	return h;
}

/*
 * Forks a restored task as criu does: RESTORE_EXT_FILE for each of `ids` in order, then UPDATE_VMA_MAP for each
 * query. It reports on *report_fd an int32 result per id and a struct vma_answer per query, then waits for a byte on
 * *go_fd (meanwhile criu's main process may refill and resume it); then it maps each moved mapping through its
 * answer and reports the FNV-1a hash of its bytes (u64 per query, 0 for one that did not move or has no fd),
 * writing them to save_dir/vma-<i>.bin if save_dir is not NULL, and exits.
 */
int kfdsim_spawn_task(int (*restore)(void *, int),
		      int (*update)(void *, const char *, uint64_t, uint64_t, uint64_t *, int *), void *ctx,
		      const int *ids, int nids, const struct sized_query *q, int nq, const char *save_dir, int *go_fd,
		      int *report_fd)
{
	int go[2], rep[2];
	if (nq > 64 || pipe2(go, O_CLOEXEC) || pipe2(rep, O_CLOEXEC))
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		close(go[1]);
		close(rep[0]);
		char what[32];
		for (int i = 0; i < nids; i++) {
			kfdsim_trace("call RESTORE_EXT_FILE %d", ids[i]);
			int32_t r = restore(ctx, ids[i]);
			if (r >= 0)
				describe_fd(r, what, sizeof(what));
			kfdsim_trace("return RESTORE_EXT_FILE %d = %s", ids[i], r >= 0 ? what : "error");
			if (write_all(rep[1], &r, sizeof(r)))
				_exit(1);
		}
		int fd[64];
		uint64_t off[64];
		for (int i = 0; i < nq; i++) {
			struct vma_answer a = { 0, -1, 0 };
			off[i] = 0;
			fd[i] = -1;
			kfdsim_trace("call UPDATE_VMA_MAP %s 0x%llx 0x%llx", q[i].path, (unsigned long long)q[i].addr,
				     (unsigned long long)q[i].old_offset);
			a.rc = update(ctx, q[i].path, q[i].addr, q[i].old_offset, &off[i], &fd[i]);
			if (a.rc == 1) {
				a.new_offset = off[i];
				int minor = fd[i] >= 0 ? kfdsim_render_minor(fd[i]) : -1;
				a.minor = fd[i] >= 0 && minor < 0 ? -2 : minor; /* an fd that is no render node: -2 */
				if (a.minor >= 0)
					snprintf(what, sizeof(what), "renderD%d", a.minor);
				else
					snprintf(what, sizeof(what), "%s", fd[i] >= 0 ? "other" : "none");
				kfdsim_trace("return UPDATE_VMA_MAP %s 0x%llx = 1 offset=0x%llx fd=%s", q[i].path,
					     (unsigned long long)q[i].addr, (unsigned long long)off[i], what);
			} else {
				fd[i] = -1;
				kfdsim_trace("return UPDATE_VMA_MAP %s 0x%llx = %d", q[i].path, (unsigned long long)q[i].addr, a.rc);
			}
			if (write_all(rep[1], &a, sizeof(a)))
				_exit(1);
		}
		char c;
		if (read(go[0], &c, 1) != 1)
			_exit(1);
		for (int i = 0; i < nq; i++) {
			uint64_t h = fd[i] >= 0 ? read_mapping(&q[i], i, fd[i], off[i], save_dir) : 0;
			if (write_all(rep[1], &h, sizeof(h)))
				_exit(1);
		}
		_exit(0);
	}
	close(go[0]);
	close(rep[1]);
	if (pid < 0) {
		close(go[1]);
		close(rep[0]);
		return -1;
	}
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
