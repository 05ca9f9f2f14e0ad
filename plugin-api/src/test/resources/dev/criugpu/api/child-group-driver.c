/*
 * For ProbeGroupTest: starts "sh -c CMD" as the shim starts its restore probe (a session of its own) and waits for it
 * with await_child_group (native/launch/child_group.c), then prints "END STATUS MS PID": END exited, killed,
 * interrupted, stuck or lost; STATUS "exit N", "signal N" or "-"; MS from the start of the wait.
 *   child-group-driver plain LIMIT_MS REAP_MS CMD
 *   child-group-driver interrupted ...  SIGINT is blocked and pending before the wait (criu told to stop)
 *   child-group-driver traced ...       a second child traces the probe and never waits for it, so the probe's
 *                                       parent cannot reap it once it is killed (as a probe that does not die); exits
 *                                       77 where the probe cannot be traced here
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "child_group.h"

static const char *const END[] = { "exited", "killed", "interrupted", "stuck", "lost" };

int main(int argc, char **argv)
{
	if (argc != 5)
		return 2;
	const char *mode = argv[1];
	long limit = atol(argv[2]), reap = atol(argv[3]);
	int go[2];
	pid_t tracer = -1;

	if (pipe(go))
		return 1;
	if (!strcmp(mode, "interrupted")) {
		sigset_t s;
		sigemptyset(&s);
		sigaddset(&s, SIGINT);
		sigprocmask(SIG_BLOCK, &s, NULL);
		raise(SIGINT);
	}
	pid_t probe = fork();
	if (probe == 0) {
		char traced = '1';
		dup2(open("/dev/null", O_WRONLY), 1); /* the driver's output ends with the driver */
		setsid();
		prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0); /* Yama: a tracer that is not an ancestor */
		close(go[1]);
		if (!strcmp(mode, "traced") && (read(go[0], &traced, 1) != 1 || traced != '1'))
			_exit(77);
		execl("/bin/sh", "sh", "-c", argv[4], (char *)NULL);
		_exit(127);
	}
	if (!strcmp(mode, "traced")) {
		tracer = fork();
		if (tracer == 0) {
			dup2(open("/dev/null", O_WRONLY), 1);
			char ok = ptrace(PTRACE_SEIZE, probe, NULL, NULL) == 0 ? '1' : '0';
			(void)!write(go[1], &ok, 1);
			if (ok != '1')
				_exit(1);
			for (;;)
				pause();
		}
	}
	close(go[0]);
	close(go[1]);
	struct timespec start, now;
	int status = 0;
	clock_gettime(CLOCK_MONOTONIC, &start);
	enum child_end end = await_child_group(probe, limit, reap, &status);
	clock_gettime(CLOCK_MONOTONIC, &now);
	long ms = (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
	char said[32] = "-";
	if (end != CHILD_STUCK && end != CHILD_LOST)
		snprintf(said, sizeof(said), WIFEXITED(status) ? "exit %d" : "signal %d",
			 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	printf("%s %s %ld %d\n", END[end], said, ms, (int)probe);
	fflush(stdout);
	if (tracer > 0) { /* the tracer's end lets the probe's zombie go to its parent */
		kill(tracer, SIGKILL);
		waitpid(tracer, NULL, 0);
		waitpid(probe, NULL, 0);
	}
	return 0;
}
