// The host's memory limits that a checkpoint's big phases meet, measured the way those phases move memory.
//   host_limits touch GIB          first write of fresh anonymous memory with 4 KiB pages, with MADV_HUGEPAGE,
//                                  and a second write of the same memory
//   host_limits fill GIB THREADS small|huge SRC_FILE
//                                  a child holds GIB of fresh anonymous memory (huge: MADV_HUGEPAGE first); THREADS
//                                  threads copy SRC_FILE (GIB long, in the page cache) into it with process_vm_writev,
//                                  from a shared read-only mapping of the file: how fast a restorer can fill a task
//   host_limits pread GIB small|huge SRC_FILE
//                                  one thread preads SRC_FILE into fresh anonymous memory (criu's restorer does so)
// Prints one line "MODE ... GiB/s".
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (32UL << 20)

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void *fresh(size_t len, int huge)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) { perror("mmap"); exit(1); }
    if (huge && madvise(p, len, MADV_HUGEPAGE)) { perror("madvise"); exit(1); }
    return p;
}

static double rate(size_t len, double s) { return (double)len / (1UL << 30) / s; }

static int touch(size_t len)
{
    for (int huge = 0; huge < 2; huge++) {
        char *p = fresh(len, huge);
        double t0 = now();
        memset(p, 1, len);
        double t1 = now();
        memset(p, 2, len);
        double t2 = now();
        printf("touch %s first %.2f GiB/s second %.2f GiB/s\n", huge ? "huge" : "small", rate(len, t1 - t0), rate(len, t2 - t1));
        munmap(p, len);
    }
    return 0;
}

struct job { pid_t pid; char *src; uintptr_t dst; size_t off, end; int err; };

static void *fill_part(void *arg)
{
    struct job *j = arg;
    for (size_t o = j->off; o < j->end; o += CHUNK) {
        size_t n = j->end - o < CHUNK ? j->end - o : CHUNK;
        struct iovec l = { j->src + o, n }, r = { (void *)(j->dst + o), n };
        if (process_vm_writev(j->pid, &l, 1, &r, 1, 0) != (ssize_t)n) { j->err = errno ? errno : EIO; return NULL; }
    }
    return NULL;
}

static char *map_source(const char *path, size_t len)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0) { perror(path); exit(1); }
    char *src = mmap(NULL, len, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0);
    if (src == MAP_FAILED) { perror("mmap source"); exit(1); }
    close(fd);
    return src;
}

static int fill(size_t len, int threads, int huge, const char *path)
{
    int pfd[2];
    if (pipe(pfd)) { perror("pipe"); return 1; }
    pid_t pid = fork();
    if (pid == 0) {
        uintptr_t a = (uintptr_t)fresh(len, huge);
        if (write(pfd[1], &a, sizeof a) != sizeof a) _exit(1);
        pause();
        _exit(0);
    }
    uintptr_t dst;
    if (read(pfd[0], &dst, sizeof dst) != sizeof dst) { perror("read"); return 1; }
    char *src = map_source(path, len);
    pthread_t tid[256];
    struct job jobs[256];
    size_t part = (len / threads + CHUNK - 1) / CHUNK * CHUNK;
    double t0 = now();
    for (int i = 0; i < threads; i++) {
        size_t off = i * part < len ? i * part : len, end = off + part < len ? off + part : len;
        jobs[i] = (struct job){ pid, src, dst, off, end, 0 };
        pthread_create(&tid[i], NULL, fill_part, &jobs[i]);
    }
    int err = 0;
    for (int i = 0; i < threads; i++) { pthread_join(tid[i], NULL); if (jobs[i].err) err = jobs[i].err; }
    double t1 = now();
    char path_s[64], line[256];
    snprintf(path_s, sizeof path_s, "/proc/%d/smaps_rollup", pid);
    long huge_kb = -1;
    FILE *f = fopen(path_s, "r");
    while (f && fgets(line, sizeof line, f)) sscanf(line, "AnonHugePages: %ld kB", &huge_kb);
    if (f) fclose(f);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    if (err) { fprintf(stderr, "process_vm_writev: %s\n", strerror(err)); return 1; }
    printf("fill %s threads %d %.2f GiB/s (%.2f s, AnonHugePages %ld MiB)\n", huge ? "huge" : "small", threads,
           rate(len, t1 - t0), t1 - t0, huge_kb / 1024);
    return 0;
}

static int pread_into(size_t len, int huge, const char *path)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0) { perror(path); return 1; }
    char *p = fresh(len, huge);
    double t0 = now();
    for (size_t o = 0; o < len;) {
        ssize_t n = pread(fd, p + o, len - o, o);
        if (n <= 0) { perror("pread"); return 1; }
        o += n;
    }
    printf("pread %s %.2f GiB/s\n", huge ? "huge" : "small", rate(len, now() - t0));
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) goto usage;
    size_t len = strtoull(argv[2], NULL, 10) << 30;
    if (!strcmp(argv[1], "touch")) return touch(len);
    if (!strcmp(argv[1], "fill") && argc == 6) {
        int threads = atoi(argv[3]);
        if (threads < 1 || threads > 256) goto usage;
        return fill(len, threads, !strcmp(argv[4], "huge"), argv[5]);
    }
    if (!strcmp(argv[1], "pread") && argc == 5) return pread_into(len, !strcmp(argv[3], "huge"), argv[4]);
usage:
    fprintf(stderr, "usage: host_limits touch GIB | fill GIB THREADS small|huge FILE | pread GIB small|huge FILE\n");
    return 2;
}
