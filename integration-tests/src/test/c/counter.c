/*
 * Test workload: appends "<n>\n" for n = 1, 2, 3, ... to a file, one line every few milliseconds, keeping the
 * counter only in memory. After a checkpoint and restore the file must continue with the next number: a reset
 * (1 again) or a gap (a number skipped) shows that the process did not continue where it stopped.
 *
 * usage: counter FILE            one process
 *        counter --tree FILE     a parent and one child; they write FILE.parent and FILE.child
 *        counter --fds N FILE    one process that also holds N open files (/dev/null), for criu to take (benchmarks)
 *        counter --threads N FILE  one process with N more threads, each blocked for ever (criu makes threads last)
 *        counter --listen FILE   one process that listens on 127.0.0.1 (no SO_REUSEADDR, as NCCL's listeners) and
 *                                has closed a connection to that listener from the listener's side first, so a
 *                                TIME_WAIT entry holds its port for 60 s; the port is written to FILE.port
 *        counter --host-copy MIB FILE  one process that plays a CUDA driver's host copy: when FILE.map-request
 *                                appears it maps MIB MiB of private anonymous memory, fills it with a pattern and makes
 *                                FILE.mapped; when FILE.verify-request appears it checks the pattern, writes
 *                                "bad=N" to FILE.verified and removes the request
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
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

/* --host-copy: run every tick */
static void (*tick_hook)(void);
static const char *copy_path;
static unsigned long copy_mib;
static unsigned long long *copy;

static unsigned long long copy_word(size_t i) { return (i + 1) * 0x9E3779B97F4A7C15ull; }

static void host_copy_tick(void) {
    char req[4096], done[4096];
    snprintf(req, sizeof req, "%s.map-request", copy_path);
    if (!copy && access(req, F_OK) == 0) {
        size_t words = copy_mib << 17;
        copy = mmap(NULL, words * 8, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (copy == MAP_FAILED) exit(8);
        for (size_t i = 0; i < words; i++) copy[i] = copy_word(i);
        snprintf(done, sizeof done, "%s.mapped", copy_path);
        close(open(done, O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
    }
    snprintf(req, sizeof req, "%s.verify-request", copy_path);
    if (copy && access(req, F_OK) == 0) {
        unsigned long bad = 0;
        for (size_t i = 0, words = copy_mib << 17; i < words; i++) bad += copy[i] != copy_word(i);
        snprintf(done, sizeof done, "%s.verified.tmp", copy_path);
        FILE *f = fopen(done, "w");
        if (!f) exit(9);
        fprintf(f, "bad=%lu\n", bad);
        fclose(f);
        char final[4096];
        snprintf(final, sizeof final, "%s.verified", copy_path);
        rename(done, final);
        unlink(req);
    }
}

static void count_forever(int fd, const char *path) {
    char line[32];
    for (unsigned long n = 1;; n++) {
        if (tick_hook) tick_hook();
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

static void die(const char *what) {
    fprintf(stderr, "counter: %s: %s\n", what, strerror(errno));
    exit(7);
}

/* A listener whose own side closed a connection first: the TIME_WAIT entry keeps its port and its reuse setting. */
static void listen_with_timewait(const char *path) {
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof a;
    int lsn = socket(AF_INET, SOCK_STREAM, 0), cli = socket(AF_INET, SOCK_STREAM, 0), srv;
    char c, *port_path = suffixed(path, "port");
    FILE *f;
    if (lsn < 0 || cli < 0) die("socket");
    if (bind(lsn, (struct sockaddr *)&a, sizeof a) || listen(lsn, 4) || getsockname(lsn, (struct sockaddr *)&a, &len)) die("listen");
    if (connect(cli, (struct sockaddr *)&a, sizeof a) || (srv = accept(lsn, NULL, NULL)) < 0) die("connect");
    close(srv);
    if (read(cli, &c, 1) != 0) die("read of the listener's FIN");
    close(cli);
    if (!(f = fopen(port_path, "w")) || fprintf(f, "%d\n", ntohs(a.sin_port)) < 0 || fclose(f)) die(port_path);
}

static void *block_for_ever(void *unused) {
    (void)unused;
    for (;;) pause();
    return NULL;
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
    } else if (argc == 4 && strcmp(argv[1], "--threads") == 0) {
        for (long i = strtol(argv[2], NULL, 10); i > 0; i--) {
            pthread_t t;
            if (pthread_create(&t, NULL, block_for_ever, NULL)) die("pthread_create");
        }
        count_forever(open_log(argv[3]), argv[3]);
    } else if (argc == 4 && strcmp(argv[1], "--host-copy") == 0) {
        copy_mib = strtoul(argv[2], NULL, 10);
        copy_path = argv[3];
        tick_hook = host_copy_tick;
        count_forever(open_log(argv[3]), argv[3]);
    } else if (argc == 3 && strcmp(argv[1], "--listen") == 0) {
        listen_with_timewait(argv[2]);
        count_forever(open_log(argv[2]), argv[2]);
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
    fprintf(stderr, "usage: counter FILE | counter --tree FILE | counter --fds N FILE | counter --threads N FILE | counter --listen FILE | counter --host-copy MIB FILE\n");
    return 1;
}
