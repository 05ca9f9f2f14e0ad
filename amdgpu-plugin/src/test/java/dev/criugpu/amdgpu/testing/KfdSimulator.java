package dev.criugpu.amdgpu.testing;

import dev.criugpu.api.sys.Syscalls;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/** Test handle on the simulated KFD (src/test/c/kfd_sim.c): its syscall table and its set-up calls. */
public final class KfdSimulator {
    private static final Linker LINKER = Linker.nativeLinker();
    private static final SymbolLookup LIB =
            SymbolLookup.libraryLookup(NativeTestPrograms.path("libkfdsim.so"), Arena.global());
    private static final Syscalls SYSCALLS = Syscalls.fromLibrary("kfdsim", LIB, "kfdsim_");

    private static final MethodHandle RESET = fn("kfdsim_reset", FunctionDescriptor.ofVoid());
    private static final MethodHandle SET_VERSION_MINOR = fn("kfdsim_set_version_minor", FunctionDescriptor.ofVoid(JAVA_INT));
    private static final MethodHandle CREATE_PROCESS = fn("kfdsim_create_process", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT));
    private static final MethodHandle ADD_GPU = fn("kfdsim_add_gpu", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT));
    private static final MethodHandle ADD_BO = fn("kfdsim_add_bo",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT));
    private static final MethodHandle FILL_BO = fn("kfdsim_fill_bo", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS, JAVA_LONG));
    private static final MethodHandle DRM_FAULT = fn("kfdsim_drm_fault", FunctionDescriptor.ofVoid(JAVA_INT, JAVA_INT, JAVA_INT));
    private static final MethodHandle DRM_RELEASE = fn("kfdsim_drm_release_fences", FunctionDescriptor.ofVoid());
    private static final MethodHandle DRM_LIVE = fn("kfdsim_drm_live", FunctionDescriptor.of(JAVA_INT));
    private static final MethodHandle DRM_SUBMITS = fn("kfdsim_drm_submits", FunctionDescriptor.of(JAVA_INT, JAVA_INT));
    private static final MethodHandle SET_OBJECTS = fn("kfdsim_set_objects",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT));
    private static final MethodHandle PAUSED = fn("kfdsim_paused", FunctionDescriptor.of(JAVA_INT, JAVA_INT));
    private static final MethodHandle RESUMED = fn("kfdsim_resumed", FunctionDescriptor.of(JAVA_INT, JAVA_INT));
    private static final MethodHandle RESTORED_DRM_FD = fn("kfdsim_restored_drm_fd", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT));
    private static final MethodHandle LAST_LOG = fn("kfdsim_last_log", FunctionDescriptor.of(ADDRESS));
    private static final MethodHandle LOG_LINES = fn("kfdsim_log_lines", FunctionDescriptor.of(JAVA_INT));
    private static final MethodHandle GETTID = LINKER.downcallHandle(LINKER.defaultLookup().find("gettid").orElseThrow(),
            FunctionDescriptor.of(JAVA_INT));

    private static final MethodHandle SPAWN_RESTORE = fn("kfdsim_spawn_restore",
            FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_INT, ADDRESS));
    private static final MethodHandle REAP = fn("kfdsim_reap", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT));
    private static final MethodHandle SEND_PARTIAL_REFILL = fn("kfdsim_send_partial_refill", FunctionDescriptor.of(JAVA_INT,
            JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT));
    private static final MethodHandle FDSTORE_GET = fn("kfdsim_fdstore_get", FunctionDescriptor.of(JAVA_INT, JAVA_INT));

    private static final MethodHandle REPORT_CHILD = fn("kfdsim_report_child", FunctionDescriptor.of(JAVA_INT, ADDRESS,
            ADDRESS, ADDRESS, ADDRESS, JAVA_INT, ADDRESS, JAVA_INT, ADDRESS, JAVA_INT));

    private static final MethodHandle SPAWN_TASK = fn("kfdsim_spawn_task", FunctionDescriptor.of(JAVA_INT,
            ADDRESS, ADDRESS, ADDRESS, ADDRESS, JAVA_INT, ADDRESS, JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
    private static final MethodHandle READ_REPORT = fn("kfdsim_read_report", FunctionDescriptor.of(JAVA_INT, JAVA_INT,
            ADDRESS, JAVA_INT));
    private static final MethodHandle RELEASE = fn("kfdsim_release", FunctionDescriptor.of(JAVA_INT, JAVA_INT));

    private static final MethodHandle FAIL_IOCTL = fn("kfdsim_fail_ioctl", FunctionDescriptor.ofVoid(JAVA_INT, JAVA_INT));
    private static final MethodHandle SET_NEXT_OFFSET = fn("kfdsim_set_next_offset", FunctionDescriptor.ofVoid(JAVA_LONG));
    private static final MethodHandle TRACE_START = fn("kfdsim_trace_start", FunctionDescriptor.of(JAVA_INT, ADDRESS));
    private static final MethodHandle TRACE_STOP = fn("kfdsim_trace_stop", FunctionDescriptor.ofVoid());
    private static final MethodHandle TRACE_MARK = fn("kfdsim_trace_mark", FunctionDescriptor.ofVoid(ADDRESS));
    private static final MethodHandle SET_SHM_DIR = fn("kfdsim_set_shm_dir", FunctionDescriptor.ofVoid(ADDRESS));
    /** {@link #failIoctl} of GET_VERSION (other values are the KFD CRIU ops). */
    public static final int GET_VERSION = 100;

    private static MethodHandle fn(String name, FunctionDescriptor d) {
        return LINKER.downcallHandle(LIB.find(name).orElseThrow(), d);
    }

    private KfdSimulator() {
    }

    /** Address of a simulator function, for C function-pointer tables. */
    public static MemorySegment symbol(String name) {
        return LIB.find(name).orElseThrow(() -> new IllegalStateException("libkfdsim.so has no " + name));
    }

    /** The drm fd RESTORE bound to GPU {@code index} of the restored process {@code pid}, or -1. */
    public static int restoredDrmFd(int pid, int index) {
        return callInt(() -> (int) RESTORED_DRM_FD.invokeExact(pid, index));
    }

    /** "level message" of the last line the executor logged through the simulator's criu log stand-in. */
    public static String lastLog() {
        try {
            return ((MemorySegment) LAST_LOG.invokeExact()).reinterpret(512).getString(0);
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    public static int logLines() {
        return callInt(() -> (int) LOG_LINES.invokeExact());
    }

    public static Syscalls syscalls() {
        return SYSCALLS;
    }

    public static int gettid() {
        try {
            return (int) GETTID.invokeExact();
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    public static int pid() {
        return (int) ProcessHandle.current().pid();
    }

    public static void reset() {
        call(() -> { RESET.invokeExact(); });
    }

    public static void setVersionMinor(int minor) {
        call(() -> { SET_VERSION_MINOR.invokeExact(minor); });
    }

    /** A KFD process owned by {@code ownerPid} and seized by thread {@code tracerTid}; returns its fd. */
    public static int createProcess(int ownerPid, int tracerTid) {
        return check(callInt(() -> (int) CREATE_PROCESS.invokeExact(ownerPid, tracerTid)), "create process");
    }

    public static void addGpu(int fd, int actualGpuId, int userGpuId) {
        check(callInt(() -> (int) ADD_GPU.invokeExact(fd, actualGpuId, userGpuId)), "add gpu");
    }

    /** A BO whose byte i is (seed + i) & 0xff. */
    public static void addBo(int fd, long addr, long size, int userGpuId, int flags, int seed) {
        check(callInt(() -> (int) ADD_BO.invokeExact(fd, addr, size, userGpuId, flags, seed)), "add bo");
    }

    /** Replaces the contents of BO number {@code index} (bucket order) with {@code data}. */
    public static void fillBo(int fd, int index, byte[] data) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment p = a.allocate(Math.max(1, data.length));
            MemorySegment.copy(data, 0, p, JAVA_BYTE, 0, data.length);
            check(callInt(() -> (int) FILL_BO.invokeExact(fd, index, p, (long) data.length)), "fill bo");
        }
    }

    /** How the simulated SDMA misbehaves on one submission. */
    public enum DrmFault {
        /** amdgpu_cs_submit fails with -EIO, nothing is copied. */
        SUBMIT_FAILS(1),
        /** The first packet copies half its bytes and the fence never signals (a hung engine). */
        FENCE_HANGS(2),
        /** The copy is done but the fence wait blocks until {@link #drmReleaseFences()} (a busy engine). */
        FENCE_WAITS(3);

        final int mode;

        DrmFault(int mode) {
            this.mode = mode;
        }
    }

    /** Submission {@code nth} (0-based, since the last reset) on render minor {@code minor} misbehaves. */
    public static void drmFault(int minor, int nth, DrmFault fault) {
        call(() -> { DRM_FAULT.invokeExact(minor, nth, fault.mode); });
    }

    /** Ends every fence wait that {@link DrmFault#FENCE_WAITS} holds (a reset does too). */
    public static void drmReleaseFences() {
        call(() -> { DRM_RELEASE.invokeExact(); });
    }

    /** Simulated libdrm objects (devices, BOs, VA ranges, BO lists, contexts) not freed yet. */
    public static int drmLive() {
        return callInt(() -> (int) DRM_LIVE.invokeExact());
    }

    /** SDMA submissions on render minor {@code minor} since the last reset. */
    public static int drmSubmits(int minor) {
        return callInt(() -> (int) DRM_SUBMITS.invokeExact(minor));
    }

    public static void setObjects(int fd, int count, byte[] priv) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment p = a.allocate(Math.max(1, priv.length));
            MemorySegment.copy(priv, 0, p, JAVA_BYTE, 0, priv.length);
            check(callInt(() -> (int) SET_OBJECTS.invokeExact(fd, count, p, priv.length)), "set objects");
        }
    }

    public static boolean paused(int fd) {
        return check(callInt(() -> (int) PAUSED.invokeExact(fd)), "paused") == 1;
    }

    /** 1 resumed, 0 restored but not resumed, -1 no restored process for the pid. */
    public static int resumed(int pid) {
        return callInt(() -> (int) RESUMED.invokeExact(pid));
    }

    private interface IntCall {
        int call() throws Throwable;
    }

    private interface VoidCall {
        void call() throws Throwable;
    }

    private static int callInt(IntCall c) {
        try {
            return c.call();
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    private static void call(VoidCall c) {
        try {
            c.call();
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    private static int check(int r, String what) {
        if (r < 0) throw new IllegalStateException("kfdsim " + what + " failed");
        return r;
    }

    /** A forked restored task: its pid and what RESTORE_EXT_FILE returned in it. */
    public record Task(int pid, int result) {
        /** Waits for the task to end (killing it first if asked); returns the signal that ended it, or 0. */
        public int reap(boolean killFirst) {
            return callInt(() -> (int) REAP.invokeExact(pid, killFirst ? 1 : 0));
        }
    }

    /** Forks a task (no JVM runs in it) that calls {@code fn(ctx, id)} and then waits for a signal. */
    public static Task spawnRestore(MemorySegment fn, MemorySegment ctx, int id) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment result = a.allocate(JAVA_INT);
            int pid = callInt(() -> (int) SPAWN_RESTORE.invokeExact(fn, ctx, id, result));
            return new Task(check(pid, "spawn a restored task"), result.get(JAVA_INT, 0));
        }
    }

    /**
     * A refill peer that stops part way, on the socket criu's fdstore (the simulated one) holds as {@code fdstoreId}:
     * a head of {@code headBytes} bytes announcing {@code announced} fds, then only the first {@code sent} of
     * {@code fds}. Returns 0 or -errno.
     */
    public static int sendPartialRefill(int fdstoreId, int magic, int fileId, int announced, int[] fds, int sent,
                                        int headBytes) {
        try (Arena a = Arena.ofConfined()) {
            int sk = check(callInt(() -> (int) FDSTORE_GET.invokeExact(fdstoreId)), "fdstore_get");
            MemorySegment f = a.allocateFrom(JAVA_INT, fds.length == 0 ? new int[1] : fds);
            return callInt(() -> (int) SEND_PARTIAL_REFILL.invokeExact(sk, magic, fileId, announced, f, sent, headBytes));
        }
    }

    /** An UPDATE_VMA_MAP call for {@link #reportChild}. */
    public record VmaQuery(String path, long addr, long oldOffset) {
    }

    /**
     * Forks a task (no JVM in it) that runs {@code restore(ctx, id)} for each id, then {@code update(ctx, ...)} for
     * each query, and returns its report: "file ID: WHAT" and "vma PATH ADDR OLD: RC NEW WHAT" lines (hex numbers,
     * WHAT an fd's /proc link without "/memfd:", or the error / plugin fd number).
     */
    public static String reportChild(MemorySegment restore, MemorySegment update, MemorySegment ctx, int[] ids,
                                     List<VmaQuery> queries) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment q = a.allocate(24L * Math.max(1, queries.size()), 8);
            for (int i = 0; i < queries.size(); i++) {
                q.set(JAVA_LONG, 24L * i, queries.get(i).addr());
                q.set(JAVA_LONG, 24L * i + 8, queries.get(i).oldOffset());
                q.set(ADDRESS, 24L * i + 16, a.allocateFrom(queries.get(i).path()));
            }
            MemorySegment out = a.allocate(1 << 16);
            MemorySegment idSeg = a.allocateFrom(JAVA_INT, ids);
            int n = callInt(() -> (int) REPORT_CHILD.invokeExact(restore, update, ctx, idSeg, ids.length, q,
                    queries.size(), out, (int) out.byteSize()));
            return out.getString(0).substring(0, check(n, "report child"));
        }
    }

    /** A BO mapping a verifier checks: where criu would ask, and how many bytes to hash. */
    public record SizedQuery(String path, long addr, long oldOffset, long size) {
    }

    /**
     * What UPDATE_VMA_MAP answered in a restored task: its result, the new offset, and the render minor of the fd
     * it gave (-1 none, -2 an fd that is not a render node).
     */
    public record VmaAnswer(int rc, int minor, long newOffset) {
    }

    /**
     * A forked restored task that ran RESTORE_EXT_FILE for each file id ({@link #results}) and UPDATE_VMA_MAP for each
     * query ({@link #answers}), and now waits; once released it hashes (FNV-1a 64) the bytes behind each moved
     * mapping, so a test can check contents the main process filled.
     */
    public record Verifier(int pid, int goFd, int reportFd, int[] results, List<VmaAnswer> answers) {
        /** What RESTORE_EXT_FILE returned in the task for the first file. */
        public int restored() {
            return results[0];
        }

        /** Releases the task and returns its hashes (0 for a mapping that did not move); the task then exits. */
        public long[] hashes() {
            try (Arena a = Arena.ofConfined()) {
                check(callInt(() -> (int) RELEASE.invokeExact(goFd)), "release verifier");
                int queries = answers.size();
                MemorySegment h = a.allocate(JAVA_LONG, Math.max(1, queries));
                int n = callInt(() -> (int) READ_REPORT.invokeExact(reportFd, h, 8 * queries));
                check(n == 8 * queries ? 0 : -1, "verifier hashes");
                syscalls().close(reportFd);
                return h.asSlice(0, 8L * queries).toArray(JAVA_LONG);
            }
        }

        public int reap() {
            return callInt(() -> (int) REAP.invokeExact(pid, 0));
        }
    }

    public static Verifier spawnVerifier(MemorySegment restore, MemorySegment update, MemorySegment ctx, int id,
                                         List<SizedQuery> queries) {
        return spawnTask(restore, update, ctx, new int[]{id}, queries, null);
    }

    /**
     * A forked restored task (no JVM in it) that restores {@code ids} in order, asks for each query's mapping and
     * waits; once released it also writes the bytes of each moved mapping i to {@code saveDir/vma-<i>.bin} when
     * {@code saveDir} is not null. Each call is a line of the trace, if one runs.
     */
    public static Verifier spawnTask(MemorySegment restore, MemorySegment update, MemorySegment ctx, int[] ids,
                                     List<SizedQuery> queries, Path saveDir) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment q = a.allocate(32L * Math.max(1, queries.size()), 8);
            for (int i = 0; i < queries.size(); i++) {
                q.set(JAVA_LONG, 32L * i, queries.get(i).addr());
                q.set(JAVA_LONG, 32L * i + 8, queries.get(i).oldOffset());
                q.set(ADDRESS, 32L * i + 16, a.allocateFrom(queries.get(i).path()));
                q.set(JAVA_LONG, 32L * i + 24, queries.get(i).size());
            }
            MemorySegment idSeg = a.allocateFrom(JAVA_INT, ids);
            MemorySegment save = saveDir == null ? MemorySegment.NULL : a.allocateFrom(saveDir.toString());
            MemorySegment go = a.allocate(JAVA_INT);
            MemorySegment report = a.allocate(JAVA_INT);
            int pid = check(callInt(() -> (int) SPAWN_TASK.invokeExact(restore, update, ctx, idSeg, ids.length, q,
                    queries.size(), save, go, report)), "spawn a restored task");
            int reportFd = report.get(JAVA_INT, 0);
            MemorySegment results = a.allocate(JAVA_INT, Math.max(1, ids.length));
            check(callInt(() -> (int) READ_REPORT.invokeExact(reportFd, results, 4 * ids.length)) == 4 * ids.length
                    ? 0 : -1, "restored task's results");
            MemorySegment rows = a.allocate(16L * Math.max(1, queries.size()), 8);
            int rowBytes = 16 * queries.size();
            check(callInt(() -> (int) READ_REPORT.invokeExact(reportFd, rows, rowBytes)) == rowBytes ? 0 : -1,
                    "restored task's mapping answers");
            List<VmaAnswer> answers = new ArrayList<>();
            for (int i = 0; i < queries.size(); i++) {
                answers.add(new VmaAnswer(rows.get(JAVA_INT, 16L * i), rows.get(JAVA_INT, 16L * i + 4),
                        rows.get(JAVA_LONG, 16L * i + 8)));
            }
            return new Verifier(pid, go.get(JAVA_INT, 0), reportFd,
                    results.asSlice(0, 4L * ids.length).toArray(JAVA_INT), List.copyOf(answers));
        }
    }

    /** The mmap offset the next BO created or restored in this process (and tasks forked later) gets. */
    public static void setNextOffset(long offset) {
        call(() -> { SET_NEXT_OFFSET.invokeExact(offset); });
    }

    /**
     * Starts a trace into {@code file}: every open of /dev/kfd or a render node, every KFD ioctl with its argument
     * fields and every SDMA submission, in this process and in tasks forked later, one line each prefixed with who
     * made it ({@code criu}: the calling thread, {@code criu-thread}: another thread of this process, {@code task}
     * and {@code task-thread}: a forked task's main and other threads).
     */
    public static void traceStart(Path file) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment p = a.allocateFrom(file.toString());
            check(callInt(() -> (int) TRACE_START.invokeExact(p)), "trace start");
        }
    }

    public static void traceStop() {
        call(() -> { TRACE_STOP.invokeExact(); });
    }

    /** The folder that stands for /dev/shm: named semaphores (kfdsim_sem_open) are files sem.NAME in it. */
    public static void setShmDir(Path dir) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment p = a.allocateFrom(dir.toString());
            call(() -> { SET_SHM_DIR.invokeExact(p); });
        }
    }

    /** A line of the test's own in the trace (a hook call or its result). */
    public static void traceMark(String text) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment p = a.allocateFrom(text);
            call(() -> { TRACE_MARK.invokeExact(p); });
        }
    }

    /** 64-bit FNV-1a, as the verifier computes it. */
    public static long fnv1a(byte[] bytes) {
        long h = 0xcbf29ce484222325L;
        for (byte b : bytes) h = (h ^ (b & 0xff)) * 0x100000001b3L;
        return h;
    }

    /** The next GET_VERSION ({@link #GET_VERSION}) or KFD CRIU {@code op} ioctl fails with {@code errno}, once. */
    public static void failIoctl(int op, int errno) {
        call(() -> { FAIL_IOCTL.invokeExact(op, errno); });
    }
}
