/*
 * Restored tasks for tests (part of libkfdsim.so): a forked process that runs the executor's RESTORE_EXT_FILE
 * the way criu's child does, without the JVM, and a peer that sends a refill request and hangs up part way.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
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
 * Connects to addr, sends a refill head announcing `announced` fds for KFD file `file_id` (BO indices 0..),
 * then only the first `sent` of `fds` (one SCM_RIGHTS message each), and closes. head_bytes < 16 cuts the head.
 */
int kfdsim_send_partial_refill(const void *addr, int addr_len, unsigned magic, int file_id, unsigned announced,
			       const int *fds, unsigned sent, int head_bytes)
{
	int sk = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (sk < 0 || connect(sk, addr, (socklen_t)addr_len))
		return -errno;
	unsigned head[4] = { magic, (unsigned)file_id, announced, 0 };
	if (send(sk, head, (size_t)head_bytes, MSG_NOSIGNAL) != head_bytes)
		return -errno;
	for (unsigned i = 0; head_bytes == sizeof(head) && i < announced; i++)
		if (send(sk, &i, sizeof(i), MSG_NOSIGNAL) != sizeof(i))
			return -errno;
	for (unsigned i = 0; head_bytes == sizeof(head) && i < sent; i++) {
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
			return -errno;
	}
	close(sk);
	return 0;
}
