// One-GPU stand-in for two NCCL ranks inside back-to-back collectives (issue 24): two processes, the parent (tag
// pair0) and one forked child (tag pair1), whose every step is a kernel that waits until the other process's kernel
// of the same step has started, then spins --busy-ms on the GPU and advances a device-side counter. A lock waits for
// the work a process already submitted, so neither process can be locked while the other is locked before its kernel
// of that step started: locking them one after the other times out, locking both at once does not. Like
// cuda_counter, every step prints "[tag pid] tick N" with N read back from the device, each process holds --mib of
// device memory filled with a pattern, SIGUSR1 prints "verify counter=N bad=M" and SIGTERM ends both processes with
// "exit counter=N bad=M" (exit status 0 only if M == 0). The parent forwards both signals to the child.
//
// Where the flags live. A kernel reads only memory its own CUDA context maps, and a context does not survive fork():
// memory from cudaHostAlloc is the driver's private mapping in one process, so the two kernels cannot poll one
// shared pinned page. Each process instead polls its own mapped pinned page (cudaHostAlloc, the kind of host memory
// NCCL's socket transport stages data in, and which the checkpoint API restores), and a host thread of its own
// relays between that page and one page of MAP_SHARED|MAP_ANONYMOUS memory made before the fork (plain host memory,
// which criu dumps and restores as memory shared by the two): its kernel's "arrived at step n" goes out, the peer's
// arrival and the stop flag come in, much as NCCL's proxy thread carries a collective between host buffers and a
// socket. The relay makes no CUDA call, so it goes on while its process is locked. (cudaHostRegister of the shared
// page would need no relay, but the checkpoint API's handling of registered memory of a shared mapping is not
// documented; this program is meant to test the lock, not that.)
//
// usage: cuda_pair [--mib N] [--busy-ms B]
#include "gpu_common.cuh"

#include <pthread.h>
#include <sys/mman.h>

// Plain host memory shared by the two processes (made before the fork).
struct shared_page {
    volatile unsigned long long arrived[2]; // the step each process's kernel last arrived at
    volatile int stop;                      // set by a SIGTERM in either process: waiting kernels give up
};

// Each process's own pinned page, mapped into its kernels' address space.
struct gpu_flags {
    volatile unsigned long long mine; // written by this process's kernel
    volatile unsigned long long peer; // written by the relay: the other process's arrival
    volatile int stop;                // written by the relay
};

static struct shared_page *shared;
static struct gpu_flags *flags;
static int me; // 0 parent, 1 child

// Arrive at STEP, wait until the peer arrived there too (or stop), spin busy_ns, advance the counter. A kernel that
// stops early leaves the counter alone, so the printed ticks stay contiguous.
__global__ void step_kernel(struct gpu_flags *f, unsigned long long step, unsigned long long *counter, uint64_t busy_ns)
{
    f->mine = step;
    __threadfence_system();
    while (f->peer < step) {
        if (f->stop)
            return;
        __nanosleep(1000);
    }
    if (busy_ns) {
        uint64_t start = now_ns();
        while (now_ns() - start < busy_ns)
            __nanosleep(1000);
    }
    *counter += 1;
}

static void *relay(void *unused)
{
    (void)unused;
    struct timespec nap = {0, 20000};
    for (;;) {
        shared->arrived[me] = flags->mine;
        flags->peer = shared->arrived[1 - me];
        flags->stop = shared->stop;
        __sync_synchronize();
        nanosleep(&nap, NULL);
    }
    return NULL;
}

// At any exit (a failed CUDA call included) the peer's waiting kernel is let go.
static void stop_peer(void)
{
    shared->stop = 1;
}

static void on_pair_signal(int sig)
{
    if (sig == SIGTERM)
        shared->stop = 1;
    on_signal(sig); // sets want_verify/want_exit, forwards to the child
}

static int run_worker(uint64_t mib, long busy_ms)
{
    uint64_t words = mib * (1024 * 1024 / sizeof(uint32_t));
    uint32_t seed = tag_hash(tag);
    uint32_t *buf;
    unsigned long long *d_counter, *d_bad, counter = 0;
    struct gpu_flags *d_flags;
    pthread_t relay_thread;

    CHECK(cudaSetDevice(0));
    CHECK(cudaMalloc(&buf, words * sizeof(uint32_t)));
    CHECK(cudaMalloc(&d_counter, sizeof(*d_counter)));
    CHECK(cudaMalloc(&d_bad, sizeof(*d_bad)));
    CHECK(cudaMemset(d_counter, 0, sizeof(*d_counter)));
    CHECK(cudaHostAlloc((void **)&flags, sizeof(*flags), cudaHostAllocMapped));
    memset((void *)flags, 0, sizeof(*flags));
    CHECK(cudaHostGetDevicePointer((void **)&d_flags, (void *)flags, 0));
    fill<<<1024, 256>>>(buf, words, seed);
    CHECK(cudaGetLastError());
    unsigned long long bad = check_pattern(buf, words, seed, d_bad);
    if (pthread_create(&relay_thread, NULL, relay, NULL) != 0) {
        say("cannot start the relay thread");
        return 3;
    }
    say("ready mib=%llu bad=%llu", (unsigned long long)mib, bad);
    if (bad)
        return 1;

    while (!want_exit && !shared->stop) {
        step_kernel<<<1, 1>>>(d_flags, counter + 1, d_counter, (uint64_t)busy_ms * 1000000ull);
        CHECK(cudaGetLastError());
        unsigned long long now;
        CHECK(cudaMemcpy(&now, d_counter, sizeof(now), cudaMemcpyDeviceToHost));
        if (now == counter)
            break; // the kernel stopped early: the peer is ending
        counter = now;
        say("tick %llu", counter);
        if (want_verify) {
            want_verify = 0;
            say("verify counter=%llu bad=%llu", counter, check_pattern(buf, words, seed, d_bad));
        }
    }
    shared->stop = 1; // whichever ends first lets the other's waiting kernel go
    bad = check_pattern(buf, words, seed, d_bad);
    say("exit counter=%llu bad=%llu", counter, bad);
    return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
    uint64_t mib = 256;
    long busy_ms = 20;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) {
            fprintf(stderr, "cuda_pair: %s needs a value\n", a);
            return 2;
        }
        if (!strcmp(a, "--mib"))
            mib = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--busy-ms"))
            busy_ms = atol(v);
        else {
            fprintf(stderr, "cuda_pair: unknown option %s\n", a);
            return 2;
        }
        i++;
    }
    if (mib == 0 || busy_ms < 0) {
        fprintf(stderr, "cuda_pair: bad --mib or --busy-ms\n");
        return 2;
    }

    shared = (struct shared_page *)mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shared == MAP_FAILED) {
        perror("mmap");
        return 3;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_pair_signal; // no SA_RESTART, as catch_signals
    sigaction(SIGUSR1, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    atexit(stop_peer);

    // CUDA does not survive fork(): the child is made before the first CUDA call
    snprintf(tag, sizeof(tag), "pair0");
    int forked = fork_child("pair", 1);
    if (forked < 0)
        return 3;
    if (forked == 0) {
        me = 1;
        return run_worker(mib, busy_ms);
    }
    int rc = run_worker(mib, busy_ms);
    if (reap_children())
        rc = 1;
    say("tree exit rc=%d", rc);
    return rc;
}
