/* Waiting for a child that leads a process group of its own: see child_group.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "child_group.h"

static long elapsed_ms(const struct timespec *start)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - start->tv_sec) * 1000 + (now.tv_nsec - start->tv_nsec) / 1000000;
}

static void nap(void)
{
	nanosleep(&(struct timespec){ .tv_nsec = 2000000 }, NULL);
}

/* A signal sent to stop this process is pending (blocked, so it waits) and not ignored: waiting on would hold it. */
static bool stop_pending(void)
{
	static const int stops[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
	sigset_t pending;
	struct sigaction action;

	if (sigpending(&pending))
		return false;
	for (size_t i = 0; i < sizeof(stops) / sizeof(stops[0]); i++)
		if (sigismember(&pending, stops[i]) == 1 && !sigaction(stops[i], NULL, &action) &&
		    action.sa_handler != SIG_IGN)
			return true;
	return false;
}

/* Its group, or itself where it has not made one yet; while it is unreaped its pid names nothing else. */
static void kill_group(pid_t child)
{
	if (kill(-child, SIGKILL) && errno == ESRCH)
		kill(child, SIGKILL);
}

enum child_end await_child_group(pid_t child, long limit_ms, long reap_ms, int *status)
{
	struct timespec start;
	enum child_end end = CHILD_EXITED;

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		siginfo_t info;
		memset(&info, 0, sizeof(info));
		/* WNOWAIT: it stays a zombie, so its group is still its own when the rest of it is killed below */
		int r = waitid(P_PID, child, &info, WEXITED | WNOHANG | WNOWAIT);
		if (r == 0 && info.si_pid == child)
			break;
		if (r < 0 && errno != EINTR)
			return CHILD_LOST;
		if (stop_pending()) {
			end = CHILD_INTERRUPTED;
			break;
		}
		if (elapsed_ms(&start) > limit_ms) {
			end = CHILD_KILLED;
			break;
		}
		nap();
	}
	kill_group(child);
	struct timespec killed;
	clock_gettime(CLOCK_MONOTONIC, &killed);
	for (;;) {
		pid_t w = waitpid(child, status, WNOHANG);
		if (w == child)
			return end;
		if (w < 0 && errno != EINTR)
			return CHILD_LOST;
		if (end != CHILD_EXITED && elapsed_ms(&killed) > reap_ms)
			return CHILD_STUCK;
		nap();
	}
}
