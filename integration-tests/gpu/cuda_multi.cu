// Multi-GPU checkpoint test program. Each worker holds --mib MiB of device memory on every GPU it uses, filled
// with a pattern seeded by its tag and the GPU's position, and a device-side counter on its first GPU that one
// kernel advances every tick ("[tag pid] tick N", N read back from the device). With two or more GPUs, --peer
// copies a slice of each GPU's buffer onto the next GPU (cudaMemcpyPeer, peer access enabled where the hardware
// allows) and checks the copy there, at start and on every check. No multicast object is ever created.
//
// Every start and every check names the GPUs the worker runs on, as CUDA reports them now (after a remapping
// restore CUDA still reports the GPUs of the dump: the process keeps its devices' identity; nvidia-smi shows where
// its memory really is):
//   "[tag pid] ready gpus=UUID[,UUID] mib=N bad=M peer=ok|none|fail"
//   "[tag pid] verify counter=N bad=M peer=ok|none|fail gpus=UUID[,UUID] bus=BUSID[,BUSID]"   (SIGUSR1)
//   "[tag pid] exit counter=N bad=M peer=..."                                                    (SIGTERM; rc 0 iff clean)
//
// usage: cuda_multi [--mib N] [--gpus 0,1] [--peer] [--no-peer-access] [--pad-step-mib S] [--per-gpu N] [--tick-ms T]
//   --no-peer-access  with --peer: copies without enabling peer access (staged by the driver)
//   --pad-step-mib S  the k-th GPU of the process also holds k*S MiB, untouched (tells GPUs apart in nvidia-smi)
//   --gpus LIST   device ordinals this process uses (default 0)
//   --per-gpu N   the process itself uses no CUDA: it forks N workers, worker i (tag gi) uses device i alone;
//                 it forwards SIGUSR1/SIGTERM to them and reaps them
//   --hog LEAVE   takes all but LEAVE MiB of the first GPU's free memory and holds it until SIGTERM
//                 ("[hog pid] hog held=N free=M"), to make a GPU too small for a restore
#include "gpu_common.cuh"

#define MAX_GPUS 16
#define PEER_BYTES (64ull << 20)

static uint32_t seed_of(const char *t, int k)
{
    return (tag_hash(t) ^ (uint32_t)k) * 16777619u;
}

struct gpu_buf {
    int dev;
    uint32_t seed;
    uint32_t *buf;
    uint32_t *scratch;              // receives the previous GPU's slice in the peer check
    unsigned long long *d_bad;
};

static int n_gpus;
static struct gpu_buf gpus[MAX_GPUS];
static uint64_t words;

static unsigned long long check_on(int dev, const uint32_t *buf, uint64_t n, uint32_t seed, unsigned long long *d_bad)
{
    CHECK(cudaSetDevice(dev));
    return check_pattern(buf, n, seed, d_bad);
}

static unsigned long long check_all(void)
{
    unsigned long long bad = 0;
    for (int k = 0; k < n_gpus; k++)
        bad += check_on(gpus[k].dev, gpus[k].buf, words, gpus[k].seed, gpus[k].d_bad);
    return bad;
}

// Copies the first PEER_BYTES of GPU k's buffer onto GPU k+1 and checks them there.
static const char *check_peer(int enabled)
{
    if (!enabled || n_gpus < 2)
        return "none";
    uint64_t n = PEER_BYTES / sizeof(uint32_t) < words ? PEER_BYTES / sizeof(uint32_t) : words;
    unsigned long long bad = 0;
    for (int k = 0; k < n_gpus; k++) {
        struct gpu_buf *from = &gpus[k], *to = &gpus[(k + 1) % n_gpus];
        CHECK(cudaSetDevice(to->dev));
        CHECK(cudaMemset(to->scratch, 0, n * sizeof(uint32_t)));
        CHECK(cudaMemcpyPeer(to->scratch, to->dev, from->buf, from->dev, n * sizeof(uint32_t)));
        CHECK(cudaDeviceSynchronize());
        bad += check_on(to->dev, to->scratch, n, from->seed, to->d_bad);
    }
    return bad ? "fail" : "ok";
}

// The UUIDs (and PCI bus ids) of the GPUs in use, as CUDA reports them at this moment.
static void describe_gpus(char *uuids, size_t ulen, char *buses, size_t blen)
{
    uuids[0] = buses[0] = 0;
    for (int k = 0; k < n_gpus; k++) {
        cudaDeviceProp p;
        char bus[32] = "?";
        CHECK(cudaGetDeviceProperties(&p, gpus[k].dev));
        cudaDeviceGetPCIBusId(bus, sizeof(bus), gpus[k].dev);
        const unsigned char *b = (const unsigned char *)p.uuid.bytes;
        char one[64];
        snprintf(one, sizeof(one), "%sGPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                 k ? "," : "", b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
                 b[13], b[14], b[15]);
        strncat(uuids, one, ulen - strlen(uuids) - 1);
        if (k)
            strncat(buses, ",", blen - strlen(buses) - 1);
        strncat(buses, bus, blen - strlen(buses) - 1);
    }
}

// peer_access: enable direct peer access where the GPUs allow it (0: cudaMemcpyPeer stays staged through the host).
// pad_step: GPU k of the process also holds an untouched k * pad_step MiB, so nvidia-smi tells its GPUs apart.
static int peer_access = 1;
static uint64_t pad_step;

static int run_worker(uint64_t mib, const int *devs, int ndev, int peer, long tick_ms)
{
    char uuids[MAX_GPUS * 48], buses[MAX_GPUS * 24];
    unsigned long long *d_counter, counter = 0;
    int peer_on = peer && ndev > 1;

    n_gpus = ndev;
    words = mib * (1024 * 1024 / sizeof(uint32_t));
    for (int k = 0; k < ndev; k++) {
        struct gpu_buf *g = &gpus[k];
        g->dev = devs[k];
        g->seed = seed_of(tag, k);
        CHECK(cudaSetDevice(g->dev));
        CHECK(cudaMalloc(&g->buf, words * sizeof(uint32_t)));
        CHECK(cudaMalloc(&g->d_bad, sizeof(*g->d_bad)));
        if (peer_on)
            CHECK(cudaMalloc(&g->scratch, PEER_BYTES));
        if (pad_step * k) {
            void *pad;
            CHECK(cudaMalloc(&pad, pad_step * k * 1024 * 1024));
            CHECK(cudaMemset(pad, 0, pad_step * k * 1024 * 1024));
        }
        fill<<<1024, 256>>>(g->buf, words, g->seed);
        CHECK(cudaGetLastError());
    }
    int access = 0;
    if (peer_on && peer_access) {
        // direct peer access where the GPUs allow it; cudaMemcpyPeer works (staged) either way
        access = 1;
        for (int k = 0; k < ndev; k++) {
            for (int j = 0; j < ndev; j++) {
                int can = 0;
                if (j == k)
                    continue;
                CHECK(cudaDeviceCanAccessPeer(&can, devs[k], devs[j]));
                if (can) {
                    CHECK(cudaSetDevice(devs[k]));
                    cudaError_t e = cudaDeviceEnablePeerAccess(devs[j], 0);
                    if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled)
                        CHECK(e);
                } else {
                    access = 0;
                }
            }
        }
    }
    CHECK(cudaSetDevice(devs[0]));
    CHECK(cudaMalloc(&d_counter, sizeof(*d_counter)));
    CHECK(cudaMemset(d_counter, 0, sizeof(*d_counter)));
    unsigned long long bad = check_all();
    const char *p = check_peer(peer_on);
    describe_gpus(uuids, sizeof(uuids), buses, sizeof(buses));
    say("ready gpus=%s bus=%s mib=%llu bad=%llu peer=%s peer-access=%d", uuids, buses, (unsigned long long)mib, bad,
        p, access);
    if (bad || !strcmp(p, "fail"))
        return 1;

    struct timespec pause = {tick_ms / 1000, (tick_ms % 1000) * 1000000L};
    while (!want_exit) {
        CHECK(cudaSetDevice(devs[0]));
        tick(d_counter, &counter, 0);
        if (want_verify) {
            want_verify = 0;
            bad = check_all();
            p = check_peer(peer_on);
            describe_gpus(uuids, sizeof(uuids), buses, sizeof(buses));
            say("verify counter=%llu bad=%llu peer=%s gpus=%s bus=%s", counter, bad, p, uuids, buses);
        }
        if (tick_ms)
            nanosleep(&pause, NULL); // pacing only; a signal cuts it short
    }
    bad = check_all();
    p = check_peer(peer_on);
    say("exit counter=%llu bad=%llu peer=%s", counter, bad, p);
    return bad || !strcmp(p, "fail") ? 1 : 0;
}

static int run_hog(int dev, uint64_t leave_mib)
{
    size_t free_b = 0, total_b = 0;
    void *p = NULL;
    snprintf(tag, sizeof(tag), "hog");
    CHECK(cudaSetDevice(dev));
    CHECK(cudaMemGetInfo(&free_b, &total_b));
    size_t want = free_b > (leave_mib << 20) ? free_b - (leave_mib << 20) : 0;
    if (want)
        CHECK(cudaMalloc(&p, want));
    CHECK(cudaMemGetInfo(&free_b, &total_b));
    say("hog held=%zu free=%zu", want >> 20, free_b >> 20);
    while (!want_exit)
        pause();
    return 0;
}

static int parse_gpus(const char *v, int *devs)
{
    int n = 0;
    char *copy = strdup(v), *save = NULL;
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (n == MAX_GPUS) {
            n = -1;
            break;
        }
        devs[n++] = atoi(t);
    }
    free(copy);
    return n;
}

int main(int argc, char **argv)
{
    uint64_t mib = 256;
    long tick_ms = 50;
    int devs[MAX_GPUS] = {0}, ndev = 1, peer = 0, per_gpu = 0;
    long long hog = -1;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--peer")) {
            peer = 1;
            continue;
        }
        if (!strcmp(a, "--no-peer-access")) {
            peer_access = 0;
            continue;
        }
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) {
            fprintf(stderr, "cuda_multi: %s needs a value\n", a);
            return 2;
        }
        if (!strcmp(a, "--mib"))
            mib = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--gpus"))
            ndev = parse_gpus(v, devs);
        else if (!strcmp(a, "--per-gpu"))
            per_gpu = atoi(v);
        else if (!strcmp(a, "--hog"))
            hog = atoll(v);
        else if (!strcmp(a, "--pad-step-mib"))
            pad_step = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--tick-ms"))
            tick_ms = atol(v);
        else {
            fprintf(stderr, "cuda_multi: unknown option %s\n", a);
            return 2;
        }
        i++;
    }
    if (mib == 0 || ndev < 1 || per_gpu < 0 || per_gpu > MAX_GPUS) {
        fprintf(stderr, "cuda_multi: bad --mib, --gpus or --per-gpu\n");
        return 2;
    }

    catch_signals();

    if (hog >= 0)
        return run_hog(devs[0], (uint64_t)hog);
    if (!per_gpu)
        return run_worker(mib, devs, ndev, peer, tick_ms);

    // CUDA does not survive fork(): the workers are made before any CUDA call, and this process makes none.
    for (int c = 0; c < per_gpu; c++) {
        int forked = fork_child("g", c);
        if (forked < 0)
            return 3;
        if (forked == 0) {
            int dev = c;
            return run_worker(mib, &dev, 1, 0, tick_ms);
        }
    }
    int rc = reap_children();
    say("tree exit rc=%d", rc);
    return rc;
}
