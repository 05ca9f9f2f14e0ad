/*
 * The one launcher of a plugin's helper process (the CUDA agent): the shim calls it before criu's JVM exists, and the
 * Java side calls it later through the services struct (launch_helper). Tests load it alone (make helper-launcher).
 */
#ifndef CRIU_GPU_HELPER_LAUNCH_H
#define CRIU_GPU_HELPER_LAUNCH_H

#include <stddef.h>

/*
 * Starts argv[0] (an absolute path) with argv and an environment of named variables only: PATH's absolute folders
 * and a fixed locale (ChildEnvironment). The helper gets one end of a new socketpair as fd 3, /dev/null as stdin, a new memfd as
 * stdout and stderr, and no other fd; it runs in a session of its own, ignores SIGINT and SIGQUIT, and is never this
 * process's child. On success writes "SOCKET_FD OUTPUT_FD PID STATLINE" into out (this process's end of the
 * socketpair, the memfd, the helper's pid and /proc stat line; both fds are the caller's) and returns 0; otherwise
 * writes why into out and returns -1. Async-signal-safe between fork and exec: the caller may run threads (a JVM).
 */
int criu_gpu_launch_helper(char *const argv[], char *out, size_t len);

#endif
