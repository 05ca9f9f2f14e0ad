/*
 * cuda_ckpt: the "manual flow" through the CUDA driver's checkpoint API (libcuda r570+), for tests and the
 * benchmark baseline. Each operation prints one line per pid with its result and duration.
 *
 *   cuda_ckpt state PID...                 RUNNING | LOCKED | CHECKPOINTED | FAILED
 *   cuda_ckpt restore-tid PID...
 *   cuda_ckpt lock [--timeout-ms N] PID... RUNNING -> LOCKED
 *   cuda_ckpt checkpoint PID...            LOCKED -> CHECKPOINTED (device memory moved into host memory)
 *   cuda_ckpt restore PID...               CHECKPOINTED -> LOCKED
 *   cuda_ckpt unlock PID...                LOCKED -> RUNNING
 *   cuda_ckpt suspend [--timeout-ms N] PID...   lock + checkpoint
 *   cuda_ckpt resume PID...                restore + unlock
 *   cuda_ckpt expect-state STATE PID...    exit 0 only if every pid is in STATE
 *
 * Exit status: 0 when every operation succeeded, 1 when one failed (its line says why), 2 on bad usage.
 * libcuda is loaded with dlopen so the program builds without the driver's stub library.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef CUresult (*init_fn)(unsigned int);
typedef CUresult (*driver_version_fn)(int *);
typedef CUresult (*error_name_fn)(CUresult, const char **);
typedef CUresult (*state_fn)(int, CUprocessState *);
typedef CUresult (*tid_fn)(int, int *);
typedef CUresult (*lock_fn)(int, CUcheckpointLockArgs *);
typedef CUresult (*checkpoint_fn)(int, CUcheckpointCheckpointArgs *);
typedef CUresult (*restore_fn)(int, CUcheckpointRestoreArgs *);
typedef CUresult (*unlock_fn)(int, CUcheckpointUnlockArgs *);

static struct {
    init_fn init;
    driver_version_fn driver_version;
    error_name_fn error_name;
    state_fn state;
    tid_fn restore_tid;
    lock_fn lock;
    checkpoint_fn checkpoint;
    restore_fn restore;
    unlock_fn unlock;
} cu;

static const char *state_names[] = {"RUNNING", "LOCKED", "CHECKPOINTED", "FAILED"};

static void *need(void *lib, const char *name)
{
    void *sym = dlsym(lib, name);
    if (!sym) {
        fprintf(stderr, "cuda_ckpt: libcuda.so.1 lacks %s (driver older than r570?)\n", name);
        exit(1);
    }
    return sym;
}

static void load_libcuda(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (!lib) {
        fprintf(stderr, "cuda_ckpt: cannot load libcuda.so.1: %s\n", dlerror());
        exit(1);
    }
    cu.init = (init_fn)need(lib, "cuInit");
    cu.driver_version = (driver_version_fn)need(lib, "cuDriverGetVersion");
    cu.error_name = (error_name_fn)need(lib, "cuGetErrorName");
    cu.state = (state_fn)need(lib, "cuCheckpointProcessGetState");
    cu.restore_tid = (tid_fn)need(lib, "cuCheckpointProcessGetRestoreThreadId");
    cu.lock = (lock_fn)need(lib, "cuCheckpointProcessLock");
    cu.checkpoint = (checkpoint_fn)need(lib, "cuCheckpointProcessCheckpoint");
    cu.restore = (restore_fn)need(lib, "cuCheckpointProcessRestore");
    cu.unlock = (unlock_fn)need(lib, "cuCheckpointProcessUnlock");
}

static const char *err_name(CUresult rc)
{
    const char *name = NULL;
    if (cu.error_name(rc, &name) != CUDA_SUCCESS || !name)
        return "unknown CUresult";
    return name;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int report(const char *op, int pid, CUresult rc, double t0)
{
    double ms = now_ms() - t0;
    if (rc == CUDA_SUCCESS) {
        printf("cuda_ckpt: %s pid=%d ok %.1f ms\n", op, pid, ms);
        return 0;
    }
    printf("cuda_ckpt: %s pid=%d failed: %s (%d) after %.1f ms\n", op, pid, err_name(rc), (int)rc, ms);
    return 1;
}

static int do_op(const char *op, int pid, unsigned timeout_ms)
{
    double t0 = now_ms();
    if (!strcmp(op, "lock")) {
        CUcheckpointLockArgs args;
        memset(&args, 0, sizeof(args));
        args.timeoutMs = timeout_ms;
        return report(op, pid, cu.lock(pid, &args), t0);
    }
    if (!strcmp(op, "checkpoint")) {
        CUcheckpointCheckpointArgs args;
        memset(&args, 0, sizeof(args));
        return report(op, pid, cu.checkpoint(pid, &args), t0);
    }
    if (!strcmp(op, "restore")) {
        CUcheckpointRestoreArgs args;
        memset(&args, 0, sizeof(args)); /* no gpuPairs: restore onto the same GPUs */
        return report(op, pid, cu.restore(pid, &args), t0);
    }
    if (!strcmp(op, "unlock")) {
        CUcheckpointUnlockArgs args;
        memset(&args, 0, sizeof(args));
        return report(op, pid, cu.unlock(pid, &args), t0);
    }
    if (!strcmp(op, "suspend"))
        return do_op("lock", pid, timeout_ms) || do_op("checkpoint", pid, 0);
    if (!strcmp(op, "resume"))
        return do_op("restore", pid, 0) || do_op("unlock", pid, 0);
    fprintf(stderr, "cuda_ckpt: unknown operation '%s'\n", op);
    exit(2);
}

static int get_state(int pid, CUprocessState *st)
{
    CUresult rc = cu.state(pid, st);
    if (rc != CUDA_SUCCESS) {
        printf("cuda_ckpt: state pid=%d failed: %s (%d)\n", pid, err_name(rc), (int)rc);
        return 1;
    }
    return 0;
}

static int parse_pid(const char *s)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v <= 0 || v > 0x3fffffff) {
        fprintf(stderr, "cuda_ckpt: '%s' is not a pid\n", s);
        exit(2);
    }
    return (int)v;
}

static int usage(void)
{
    fprintf(stderr, "usage: cuda_ckpt state|restore-tid|lock|checkpoint|restore|unlock|suspend|resume "
                    "[--timeout-ms N] PID...\n       cuda_ckpt expect-state STATE PID...\n");
    return 2;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return usage();
    const char *op = argv[1];
    int i = 2, failed = 0;

    unsigned timeout_ms = 0;
    const char *expected = NULL;
    if (!strcmp(op, "expect-state"))
        expected = argv[i++];
    if (i + 1 < argc && !strcmp(argv[i], "--timeout-ms")) {
        timeout_ms = (unsigned)strtoul(argv[i + 1], NULL, 10);
        i += 2;
    }
    if (i >= argc)
        return usage();

    load_libcuda();
    int version = 0;
    cu.driver_version(&version);
    if (version < 12080) {
        fprintf(stderr, "cuda_ckpt: driver API %d is older than 12.8 (r570)\n", version);
        return 1;
    }
    /* Restore needs cuInit in the caller unless persistence mode is on; it is cheap, so always. */
    if (!strcmp(op, "restore") || !strcmp(op, "resume")) {
        CUresult rc = cu.init(0);
        if (rc != CUDA_SUCCESS) {
            fprintf(stderr, "cuda_ckpt: cuInit failed: %s\n", err_name(rc));
            return 1;
        }
    }

    double t_all = now_ms();
    for (; i < argc; i++) {
        int pid = parse_pid(argv[i]);
        if (!strcmp(op, "state") || expected) {
            CUprocessState st;
            if (get_state(pid, &st)) {
                failed = 1;
                continue;
            }
            const char *name = (unsigned)st < 4 ? state_names[st] : "UNKNOWN";
            printf("cuda_ckpt: state pid=%d %s\n", pid, name);
            if (expected && strcmp(expected, name))
                failed = 1;
        } else if (!strcmp(op, "restore-tid")) {
            int tid = 0;
            CUresult rc = cu.restore_tid(pid, &tid);
            if (rc != CUDA_SUCCESS) {
                printf("cuda_ckpt: restore-tid pid=%d failed: %s (%d)\n", pid, err_name(rc), (int)rc);
                failed = 1;
            } else {
                printf("cuda_ckpt: restore-tid pid=%d tid=%d\n", pid, tid);
            }
        } else {
            failed |= do_op(op, pid, timeout_ms);
        }
    }
    if (argc - 2 > 1 && strcmp(op, "state") && !expected)
        printf("cuda_ckpt: %s total %.1f ms\n", op, now_ms() - t_all);
    fflush(stdout);
    return failed;
}
