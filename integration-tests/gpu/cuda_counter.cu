// GPU checkpoint test program: holds device memory filled with a known pattern and a device-side counter that
// one kernel advances every tick. Every tick prints "[tag pid] tick N" with N read back from the device, so a
// restored process shows its counter continuing (N+1, never 1). SIGUSR1 asks for a full check of the pattern on
// the GPU ("verify counter=N bad=M"); SIGTERM checks, prints "exit counter=N bad=M" and exits 0 only if M == 0.
//
// usage: cuda_counter [--mib N] [--children K] [--tick-ms T] [--busy-ms B] [--late-child 1]
//   --children K  fork K children before touching CUDA; every process (parent too) runs its own counter and
//                 memory; the parent forwards SIGUSR1/SIGTERM to the children and reaps them
//   --busy-ms B   every tick's kernel spins B ms on the GPU before advancing the counter (prints "busy N" after
//                 launching it), to hold a process inside a long kernel
//   --late-child 1  fork a child (tag lc1) AFTER the parent initialised CUDA, as PyTorch's DataLoader does: it holds
//                 the parent's /dev/nvidia* descriptors and mappings and never calls CUDA, until SIGUSR1 (forwarded
//                 by the parent) makes it try once and print "cuda after fork: <error name>"
#include "gpu_common.cuh"

static int late_child = 0;

// The child forked after CUDA is initialised: it waits, and on SIGUSR1 tries one CUDA call (CUDA refuses to work in
// a child of an initialised process; the point is that it answers with an error instead of crashing).
static int run_late_child(void)
{
    say("waiting");
    while (!want_exit) {
        pause();
        if (want_verify) {
            want_verify = 0;
            void *p = NULL;
            cudaError_t err = cudaMalloc(&p, 1);
            say("cuda after fork: %s", cudaGetErrorName(err));
        }
    }
    return 0;
}

static int run_worker(uint64_t mib, long tick_ms, long busy_ms)
{
    uint64_t words = mib * (1024 * 1024 / sizeof(uint32_t));
    uint32_t seed = tag_hash(tag);
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
    if (late_child) {
        int forked = fork_child("lc", 1);
        if (forked < 0)
            return 3;
        if (forked == 0)
            exit(run_late_child());
    }

    struct timespec pause = {tick_ms / 1000, (tick_ms % 1000) * 1000000L};
    while (!want_exit) {
        tick(d_counter, &counter, busy_ms);
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
        else if (!strcmp(a, "--late-child"))
            late_child = atoi(v);
        else {
            fprintf(stderr, "cuda_counter: unknown option %s\n", a);
            return 2;
        }
        i++;
    }
    if (mib == 0 || want_children < 0 || want_children > MAX_CHILDREN) {
        fprintf(stderr, "cuda_counter: bad --mib or --children\n");
        return 2;
    }

    catch_signals();

    // CUDA does not survive fork(): children are made before the first CUDA call.
    for (int c = 1; c <= want_children; c++) {
        int forked = fork_child("c", c);
        if (forked < 0)
            return 3;
        if (forked == 0)
            return run_worker(mib, tick_ms, busy_ms);
    }
    int rc = run_worker(mib, tick_ms, busy_ms);
    if (reap_children())
        rc = 1;
    if (n_children)
        say("tree exit rc=%d", rc);
    return rc;
}
