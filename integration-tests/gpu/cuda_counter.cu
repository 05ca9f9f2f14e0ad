// GPU checkpoint test program: holds device memory filled with a known pattern and a device-side counter that
// one kernel advances every tick. Every tick prints "[tag pid] tick N" with N read back from the device, so a
// restored process shows its counter continuing (N+1, never 1). SIGUSR1 asks for a full check of the pattern on
// the GPU ("verify counter=N bad=M"); SIGTERM checks, prints "exit counter=N bad=M" and exits 0 only if M == 0.
//
// usage: cuda_counter [--mib N] [--children K] [--tick-ms T] [--busy-ms B]
//   --children K  fork K children before touching CUDA; every process (parent too) runs its own counter and
//                 memory; the parent forwards SIGUSR1/SIGTERM to the children and reaps them
//   --busy-ms B   every tick's kernel spins B ms on the GPU before advancing the counter (prints "busy N" after
//                 launching it), to hold a process inside a long kernel
#include <cuda_runtime.h>
#include <errno.h>
#include <stdarg.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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
static pid_t children[64];
static int n_children;

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    char line[512];
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

static void on_signal(int sig)
{
    if (sig == SIGUSR1)
        want_verify = 1;
    else
        want_exit = 1;
    for (int i = 0; i < n_children; i++)
        kill(children[i], sig);
}

static uint32_t seed_of(const char *t)
{
    uint32_t h = 2166136261u;
    for (; *t; t++)
        h = (h ^ (uint8_t)*t) * 16777619u;
    return h;
}

static unsigned long long check_pattern(uint32_t *buf, uint64_t words, uint32_t seed, unsigned long long *d_bad)
{
    unsigned long long bad = 0;
    CHECK(cudaMemset(d_bad, 0, sizeof(*d_bad)));
    verify<<<1024, 256>>>(buf, words, seed, d_bad);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(&bad, d_bad, sizeof(bad), cudaMemcpyDeviceToHost));
    return bad;
}

static int run_worker(uint64_t mib, long tick_ms, long busy_ms)
{
    uint64_t words = mib * (1024 * 1024 / sizeof(uint32_t));
    uint32_t seed = seed_of(tag);
    uint32_t *buf;
    unsigned long long *d_counter, *d_bad, counter = 0;

    CHECK(cudaSetDevice(0));
    CHECK(cudaMalloc(&buf, words * sizeof(uint32_t)));
    CHECK(cudaMalloc(&d_counter, sizeof(*d_counter)));
    CHECK(cudaMalloc(&d_bad, sizeof(*d_bad)));
    CHECK(cudaMemset(d_counter, 0, sizeof(*d_counter)));
    fill<<<1024, 256>>>(buf, words, seed);
    CHECK(cudaGetLastError());
    unsigned long long bad = check_pattern(buf, words, seed, d_bad);
    say("ready mib=%llu bad=%llu", (unsigned long long)mib, bad);
    if (bad)
        return 1;

    struct timespec pause = {tick_ms / 1000, (tick_ms % 1000) * 1000000L};
    while (!want_exit) {
        advance<<<1, 1>>>(d_counter, (uint64_t)busy_ms * 1000000ull);
        CHECK(cudaGetLastError());
        if (busy_ms)
            say("busy %llu", counter + 1);
        CHECK(cudaMemcpy(&counter, d_counter, sizeof(counter), cudaMemcpyDeviceToHost));
        say("tick %llu", counter);
        if (want_verify) {
            want_verify = 0;
            say("verify counter=%llu bad=%llu", counter, check_pattern(buf, words, seed, d_bad));
        }
        if (tick_ms)
            nanosleep(&pause, NULL); // pacing only; a signal cuts it short
    }
    bad = check_pattern(buf, words, seed, d_bad);
    say("exit counter=%llu bad=%llu", counter, bad);
    return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
    uint64_t mib = 256;
    long tick_ms = 50, busy_ms = 0;
    int want_children = 0;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) {
            fprintf(stderr, "cuda_counter: %s needs a value\n", a);
            return 2;
        }
        if (!strcmp(a, "--mib"))
            mib = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--children"))
            want_children = atoi(v);
        else if (!strcmp(a, "--tick-ms"))
            tick_ms = atol(v);
        else if (!strcmp(a, "--busy-ms"))
            busy_ms = atol(v);
        else {
            fprintf(stderr, "cuda_counter: unknown option %s\n", a);
            return 2;
        }
        i++;
    }
    if (mib == 0 || want_children < 0 || want_children > 64) {
        fprintf(stderr, "cuda_counter: bad --mib or --children\n");
        return 2;
    }

    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal; // no SA_RESTART: a signal ends the pacing sleep at once
    sigaction(SIGUSR1, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    // CUDA does not survive fork(): children are made before the first CUDA call.
    for (int c = 1; c <= want_children; c++) {
        pid_t pid = fork();
        if (pid < 0) {
            perror("fork");
            return 3;
        }
        if (pid == 0) {
            n_children = 0;
            snprintf(tag, sizeof(tag), "c%d", c);
            prctl(PR_SET_PDEATHSIG, SIGTERM);
            return run_worker(mib, tick_ms, busy_ms);
        }
        children[n_children++] = pid;
    }
    int rc = run_worker(mib, tick_ms, busy_ms);
    for (int i = 0; i < n_children; i++) {
        int status = 0;
        while (waitpid(children[i], &status, 0) < 0 && errno == EINTR)
            ;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            say("child %d ended badly (status 0x%x)", (int)children[i], status);
            rc = 1;
        }
    }
    if (n_children)
        say("tree exit rc=%d", rc);
    return rc;
}
