// Shared by the GPU test programs (cuda_counter.cu, cuda_multi.cu): the "[tag pid] ..." line printer, the CUDA
// error check, the pattern kernels, the device-side counter, the signal flags and the forked-children bookkeeping.
// Each program is one translation unit that includes this header once; everything here is static.
#pragma once

#include <cuda_runtime.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_CHILDREN 64

#define CHECK(call)                                                                                  \
    do {                                                                                             \
        cudaError_t err_ = (call);                                                                   \
        if (err_ != cudaSuccess) {                                                                   \
            say("cuda error %s at %s:%d: %s", cudaGetErrorName(err_), __FILE__, __LINE__,            \
                cudaGetErrorString(err_));                                                           \
            exit(3);                                                                                 \
        }                                                                                            \
    } while (0)

static char tag[32] = "p";
static volatile sig_atomic_t want_verify, want_exit;
static pid_t children[MAX_CHILDREN];
static int n_children;

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    int n = snprintf(line, sizeof(line), "[%s %d] ", tag, (int)getpid());
    va_start(ap, fmt);
    n += vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
    va_end(ap);
    if (n > (int)sizeof(line) - 2)
        n = sizeof(line) - 2;
    line[n++] = '\n';
    // one write per line: processes of a tree share the log file (O_APPEND) without tearing lines
    ssize_t ignored = write(STDOUT_FILENO, line, n);
    (void)ignored;
}

__device__ __host__ static uint32_t pattern(uint64_t i, uint32_t seed)
{
    uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ull ^ seed;
    x ^= x >> 29;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 32;
    return (uint32_t)x;
}

__global__ void fill(uint32_t *buf, uint64_t words, uint32_t seed)
{
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < words; i += (uint64_t)gridDim.x * blockDim.x)
        buf[i] = pattern(i, seed);
}

__global__ void verify(const uint32_t *buf, uint64_t words, uint32_t seed, unsigned long long *bad)
{
    unsigned long long local = 0;
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < words; i += (uint64_t)gridDim.x * blockDim.x)
        local += buf[i] != pattern(i, seed);
    if (local)
        atomicAdd(bad, local);
}

__device__ static uint64_t now_ns()
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// One thread: spin busy_ns on the GPU (0 = none), then advance the counter.
__global__ void advance(unsigned long long *counter, uint64_t busy_ns)
{
    if (busy_ns) {
        uint64_t start = now_ns();
        while (now_ns() - start < busy_ns)
            __nanosleep(1000);
    }
    *counter += 1;
}

// The number of words of buf (on the current device) that do not hold pattern(i, seed).
static unsigned long long check_pattern(const uint32_t *buf, uint64_t words, uint32_t seed, unsigned long long *d_bad)
{
    unsigned long long bad = 0;
    CHECK(cudaMemset(d_bad, 0, sizeof(*d_bad)));
    verify<<<1024, 256>>>(buf, words, seed, d_bad);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(&bad, d_bad, sizeof(bad), cudaMemcpyDeviceToHost));
    return bad;
}

// FNV-1a of a tag: the base of each process's pattern seed.
static uint32_t tag_hash(const char *t)
{
    uint32_t h = 2166136261u;
    for (; *t; t++)
        h = (h ^ (uint8_t)*t) * 16777619u;
    return h;
}

static void on_signal(int sig)
{
    if (sig == SIGUSR1)
        want_verify = 1;
    else
        want_exit = 1;
    for (int i = 0; i < n_children; i++)
        kill(children[i], sig);
}

static void catch_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal; // no SA_RESTART: a signal ends the pacing sleep at once
    sigaction(SIGUSR1, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

// Forks one child tagged PREFIX<n> (before any CUDA call: CUDA does not survive fork()). Returns 0 in the child,
// 1 in the parent (the child is recorded for signal forwarding and reap_children), -1 when fork fails.
static int fork_child(const char *prefix, int n)
{
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return -1;
    }
    if (pid == 0) {
        n_children = 0;
        snprintf(tag, sizeof(tag), "%s%d", prefix, n);
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        return 0;
    }
    children[n_children++] = pid;
    return 1;
}

// Waits for every recorded child; 1 if any ended other than with exit status 0 (each such one is reported).
static int reap_children(void)
{
    int rc = 0;
    for (int i = 0; i < n_children; i++) {
        int status = 0;
        while (waitpid(children[i], &status, 0) < 0 && errno == EINTR)
            ;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            say("child %d ended badly (status 0x%x)", (int)children[i], status);
            rc = 1;
        }
    }
    return rc;
}

// Advances the counter on the current device (after busy_ms of spinning there, announced as "busy N" while the
// kernel runs), reads it back into *counter and prints "tick N".
static void tick(unsigned long long *d_counter, unsigned long long *counter, long busy_ms)
{
    advance<<<1, 1>>>(d_counter, (uint64_t)busy_ms * 1000000ull);
    CHECK(cudaGetLastError());
    if (busy_ms)
        say("busy %llu", *counter + 1);
    CHECK(cudaMemcpy(counter, d_counter, sizeof(*counter), cudaMemcpyDeviceToHost));
    say("tick %llu", *counter);
}
