/* One launcher for a plugin's helper process: see helper_launch.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helper_launch.h"

#ifndef SYS_close_range
#define SYS_close_range 436 /* the same on every architecture */
#endif

/*
 * The helper's environment, named variables only (ChildEnvironment, the Java side's same list): anything else of
 * criu's could change what the dynamic loader, glibc or the JVM load or do, as root (LD_LIBRARY_PATH, GLIBC_TUNABLES,
 * GCONV_PATH, JAVA_TOOL_OPTIONS, ...). PATH keeps criu's absolute folders (the agent looks for cuda-checkpoint there
 * and runs only one that passes the trust check), or is DEFAULT_PATH; the locale is fixed.
 */
#define DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#define HELPER_LOCALE "LC_ALL=C.UTF-8"

static void helper_environment(char *path, size_t len, char *envp[3])
{
	const char *from = secure_getenv("PATH");
	size_t at = (size_t)snprintf(path, len, "PATH="), start = at;

	while (from && *from) {
		size_t n = strcspn(from, ":");
		if (from[0] == '/' && at + n + 2 <= len) { /* a folder too long to fit is left out */
			if (at > start)
				path[at++] = ':';
			memcpy(path + at, from, n);
			at += n;
		}
		from += n + (from[n] == ':');
	}
	if (at == start)
		snprintf(path, len, "PATH=%s", DEFAULT_PATH);
	else
		path[at] = '\0';
	envp[0] = path;
	envp[1] = (char *)HELPER_LOCALE;
	envp[2] = NULL;
}

static void close_all(int *fds, int n)
{
	for (int i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]), fds[i] = -1;
}

/* In the helper, from fork to exec: only async-signal-safe calls. */
static void exec_helper(char *const argv[], char *const envp[], int sock, int output, int in)
{
	struct sigaction ignore = { .sa_handler = SIG_IGN };
	/* above 3 first, so that no dup2 overwrites a source still to be copied */
	int s = fcntl(sock, F_DUPFD, 4), o = fcntl(output, F_DUPFD, 4), i = fcntl(in, F_DUPFD, 4);

	sigemptyset(&ignore.sa_mask);
	sigprocmask(SIG_SETMASK, &ignore.sa_mask, NULL);
	sigaction(SIGINT, &ignore, NULL);
	sigaction(SIGQUIT, &ignore, NULL);
	if (s < 0 || o < 0 || i < 0 || dup2(i, 0) < 0 || dup2(o, 1) < 0 || dup2(o, 2) < 0 || dup2(s, 3) < 0)
		_exit(127);
	/* the starter's own fds (criu's log, a --status-fd pipe, the images dir, a JVM's files) are not the helper's */
	if (syscall(SYS_close_range, 4U, ~0U, 0U))
		for (int f = 4; f < 4096; f++)
			close(f);
	execve(argv[0], argv, envp);
	_exit(127);
}

int criu_gpu_launch_helper(char *const argv[], char *out, size_t len)
{
	char *envp[3], path[4096], said[1024];
	int fds[6] = { -1, -1, -1, -1, -1, -1 }; /* socketpair, identity pipe, memfd, /dev/null */
	int *sv = fds, *id = fds + 2, *output = fds + 4, *in = fds + 5;

	if (!argv || !argv[0] || argv[0][0] != '/') {
		snprintf(out, len, "the helper's command must start with an absolute path");
		return -1;
	}
	helper_environment(path, sizeof(path), envp);
	*output = memfd_create("criu-gpu-helper-output", MFD_CLOEXEC);
	*in = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (*output < 0 || *in < 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) || pipe2(id, O_CLOEXEC)) {
		snprintf(out, len, "cannot set up its fds: %s", strerror(errno));
		close_all(fds, 6);
		return -1;
	}
	pid_t child = fork();
	if (child == 0) {
		char line[1024], stat_path[64];
		setsid();
		pid_t helper = fork();
		if (helper == 0)
			exec_helper(argv, envp, sv[1], *output, *in);
		/* The helper is this process's child until it exits: its pid cannot be reused before the starter has it. */
		snprintf(stat_path, sizeof(stat_path), "/proc/%d/stat", (int)helper);
		int st = helper > 0 ? open(stat_path, O_RDONLY) : -1;
		int at = helper > 0 ? snprintf(line, sizeof(line), "%d ", (int)helper) : 0;
		ssize_t k = st >= 0 ? read(st, line + at, sizeof(line) - 1 - at) : -1;
		close(st);
		if (k > 0)
			(void)!write(id[1], line, at + k);
		_exit(helper > 0 ? 0 : 1);
	}
	int err = errno, status = 0;
	close(sv[1]), close(id[1]), close(*in);
	sv[1] = id[1] = *in = -1;
	while (child > 0 && waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
	ssize_t k = child > 0 ? read(id[0], said, sizeof(said) - 1) : -1;
	if (child > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		said[k > 0 ? k : 0] = '\0';
		said[strcspn(said, "\n")] = '\0';
		snprintf(out, len, "%d %d %s", sv[0], *output, said);
		sv[0] = *output = -1; /* the caller's now */
		close_all(fds, 6);
		return 0;
	}
	snprintf(out, len, "could not start it (fork: %s)", child < 0 ? strerror(err) : "no helper");
	close_all(fds, 6);
	return -1;
}
