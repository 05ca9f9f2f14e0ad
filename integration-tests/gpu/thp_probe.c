// LD_PRELOAD probe: how a process's libraries (the CUDA driver's checkpoint above all) make their big anonymous
// mappings, and what MADV_HUGEPAGE on them does. Every private anonymous mmap of 2 MiB or more is logged to
// THP_PROBE_LOG (caller's object, length); with THP_PROBE_ADVISE=1 it is also given MADV_HUGEPAGE.
// A measuring tool for issue 54, not part of the product.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static int log_fd = -2, advise;

static void note(void *p, size_t len, void *caller, const char *via)
{
    if (log_fd == -2) {
        const char *path = getenv("THP_PROBE_LOG");
        log_fd = path ? open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600) : -1;
        advise = getenv("THP_PROBE_ADVISE") && !strcmp(getenv("THP_PROBE_ADVISE"), "1");
    }
    int adv = advise ? madvise(p, len, MADV_HUGEPAGE) : 1;
    if (log_fd >= 0) {
        Dl_info info;
        const char *obj = dladdr(caller, &info) && info.dli_fname ? info.dli_fname : "?";
        char line[512];
        int n = snprintf(line, sizeof line, "%s len=%zu MiB=%zu at=%p advise=%d tid=%ld from=%s\n", via, len, len >> 20,
                         p, adv, (long)syscall(SYS_gettid), obj);
        if (n > 0) (void)!write(log_fd, line, (size_t)n);
    }
}

static void *raw(void *a, size_t len, int prot, int flags, int fd, off_t off)
{
    return (void *)syscall(SYS_mmap, a, len, prot, flags, fd, off);
}

static void *probe(void *a, size_t len, int prot, int flags, int fd, off_t off, void *caller, const char *via)
{
    void *p = raw(a, len, prot, flags, fd, off);
    if (p != MAP_FAILED && (flags & MAP_ANONYMOUS) && (flags & MAP_PRIVATE) && len >= (2UL << 20))
        note(p, len, caller, via);
    return p;
}

void *mmap(void *a, size_t len, int prot, int flags, int fd, off_t off)
{
    return probe(a, len, prot, flags, fd, off, __builtin_return_address(0), "mmap");
}

void *mmap64(void *a, size_t len, int prot, int flags, int fd, off_t off)
{
    return probe(a, len, prot, flags, fd, off, __builtin_return_address(0), "mmap64");
}
