/*
 * Test workload: appends "<n>\n" for n = 1, 2, 3, ... to a file, one line every few milliseconds, keeping the
 * counter only in memory. After a checkpoint and restore the file must continue with the next number: a reset
 * (1 again) or a gap (a number skipped) shows that the process did not continue where it stopped.
 *
 * usage: counter FILE            one process
 *        counter --tree FILE     a parent and one child; they write FILE.parent and FILE.child
 *        counter --fds N FILE    one process that also holds N open files (/dev/null), for criu to take (benchmarks)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const struct timespec TICK = { 0, 5 * 1000 * 1000 };

static int open_log(const char *path) {
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
        fprintf(stderr, "counter: cannot open %s: %s\n", path, strerror(errno));
        exit(2);
    }
    return fd;
}

static void count_forever(int fd, const char *path) {
    char line[32];
    for (unsigned long n = 1;; n++) {
        int len = snprintf(line, sizeof line, "%lu\n", n);
        if (write(fd, line, (size_t)len) != len) {
            fprintf(stderr, "counter: write to %s failed: %s\n", path, strerror(errno));
            exit(3);
        }
        nanosleep(&TICK, NULL);
    }
}

static char *suffixed(const char *path, const char *suffix) {
    char *s;
    if (asprintf(&s, "%s.%s", path, suffix) < 0) exit(4);
    return s;
}

int main(int argc, char **argv) {
    if (argc == 2) {
        count_forever(open_log(argv[1]), argv[1]);
    } else if (argc == 4 && strcmp(argv[1], "--fds") == 0) {
        for (long i = strtol(argv[2], NULL, 10); i > 0; i--) {
            if (open("/dev/null", O_RDONLY) < 0) {
                fprintf(stderr, "counter: cannot hold %s files: %s\n", argv[2], strerror(errno));
                return 6;
            }
        }
        count_forever(open_log(argv[3]), argv[3]);
    } else if (argc == 3 && strcmp(argv[1], "--tree") == 0) {
        char *parent_path = suffixed(argv[2], "parent"), *child_path = suffixed(argv[2], "child");
        pid_t child = fork();
        if (child < 0) {
            perror("counter: fork");
            return 5;
        }
        if (child == 0) count_forever(open_log(child_path), child_path);
        count_forever(open_log(parent_path), parent_path);
    }
    fprintf(stderr, "usage: counter FILE | counter --tree FILE | counter --fds N FILE\n");
    return 1;
}
