/*
 * Waiting, with bounds, for a child that leads a process group of its own (it called setsid or setpgid), and killing
 * it with everything it started: the restore probe (shim_restore.c). Tests build it alone.
 */
#ifndef CRIU_GPU_CHILD_GROUP_H
#define CRIU_GPU_CHILD_GROUP_H

#include <sys/types.h>

enum child_end {
	CHILD_EXITED,      /* it ended within limit_ms: *status is its wait status */
	CHILD_KILLED,      /* past limit_ms: its group got SIGKILL and it was reaped; *status */
	CHILD_INTERRUPTED, /* a stop signal (INT, TERM, HUP, QUIT) came for this process first: killed and reaped as above */
	CHILD_STUCK,       /* killed, but not reaped within reap_ms more (a task asleep in a driver, uninterruptibly): left */
	CHILD_LOST,        /* waitid or waitpid failed: errno */
};

/*
 * Waits up to limit_ms for child to end, then kills its process group (what it started goes with it, whenever it
 * ends) and reaps it, waiting at most reap_ms for a killed child. Polls every 2 ms; never waits without a bound.
 */
enum child_end await_child_group(pid_t child, long limit_ms, long reap_ms, int *status);

#endif
