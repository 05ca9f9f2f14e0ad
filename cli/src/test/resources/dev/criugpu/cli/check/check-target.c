/*
 * A process for CheckCommandTest to check, built at test time with gcc. It sets up one thing criu-gpu check looks
 * for, prints "ready" (or why it could not) and waits for its stdin to close.
 *
 *   check-target idle
 *   check-target ghost DELETED_PATH MIB KEPT_PATH KEPT_MIB  a deleted file of MIB MiB, open and mapped; a kept one mapped
 *   check-target tcp                                        a loopback connection between it and a child it forks
 *   check-target uring                                      an io_uring (io_uring_setup, syscall 425)
 *   check-target timewait N                                 a loopback listener; N connections to it accepted and
 *                                                           closed on the accepted side first (TIME_WAIT on its port)
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void wait_for_eof(void)
{
	char b[64];
	while (read(0, b, sizeof(b)) > 0)
		;
}

static int die(const char *what)
{
	printf("failed: %s: %s\n", what, strerror(errno));
	fflush(stdout);
	return 1;
}

/* A file of MiB MiB, written (so its blocks are allocated), mapped shared; the fd stays open. */
static int file_of(const char *path, long mib, void **map)
{
	static char chunk[1 << 20];
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0)
		return -1;
	memset(chunk, 'x', sizeof(chunk));
	for (long i = 0; i < mib; i++)
		if (write(fd, chunk, sizeof(chunk)) != sizeof(chunk))
			return -1;
	*map = mmap(NULL, mib << 20, PROT_READ, MAP_SHARED, fd, 0);
	return *map == MAP_FAILED ? -1 : fd;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "idle";
	pid_t child = 0;

	if (!strcmp(mode, "ghost")) {
		void *a, *b;
		if (argc < 6 || file_of(argv[2], atol(argv[3]), &a) < 0 || unlink(argv[2]))
			return die("deleted file");
		int kept = file_of(argv[4], atol(argv[5]), &b);
		if (kept < 0)
			return die("kept file");
		close(kept); /* only mapped */
	} else if (!strcmp(mode, "tcp")) {
		struct sockaddr_in addr = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		socklen_t len = sizeof(addr);
		int l = socket(AF_INET, SOCK_STREAM, 0);
		if (l < 0 || bind(l, (struct sockaddr *)&addr, len) || listen(l, 1) ||
		    getsockname(l, (struct sockaddr *)&addr, &len))
			return die("listen");
		child = fork();
		if (child < 0)
			return die("fork");
		if (child == 0) {
			int c = socket(AF_INET, SOCK_STREAM, 0);
			if (c < 0 || connect(c, (struct sockaddr *)&addr, len))
				return die("connect");
			wait_for_eof();
			return 0;
		}
		if (accept(l, NULL, NULL) < 0)
			return die("accept");
	} else if (!strcmp(mode, "timewait")) {
		struct sockaddr_in addr = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		socklen_t len = sizeof(addr);
		int l = socket(AF_INET, SOCK_STREAM, 0);
		if (l < 0 || bind(l, (struct sockaddr *)&addr, len) || listen(l, 8) ||
		    getsockname(l, (struct sockaddr *)&addr, &len))
			return die("listen");
		for (long i = 0; i < (argc > 2 ? atol(argv[2]) : 1); i++) {
			char b;
			int c = socket(AF_INET, SOCK_STREAM, 0);
			if (c < 0 || connect(c, (struct sockaddr *)&addr, len))
				return die("connect");
			int a = accept(l, NULL, NULL);
			if (a < 0)
				return die("accept");
			close(a); /* the accepted side closes first: it is the one left in TIME_WAIT */
			if (read(c, &b, 1) != 0)
				return die("read EOF");
			close(c);
		}
		printf("port %d\n", ntohs(addr.sin_port));
		fflush(stdout);
		wait_for_eof();
		return 0;
	} else if (!strcmp(mode, "uring")) {
		static char params[120]; /* struct io_uring_params, zeroed */
		long fd = syscall(425, 4, params);
		if (fd < 0) {
			printf("refused: io_uring_setup: %s\n", strerror(errno));
			fflush(stdout);
			wait_for_eof();
			return 0;
		}
	} else if (strcmp(mode, "idle")) {
		errno = EINVAL;
		return die(mode);
	}
	printf("ready\n");
	fflush(stdout);
	wait_for_eof();
	if (child > 0)
		waitpid(child, NULL, 0);
	return 0;
}
