package dev.criugpu.cuda;

import dev.criugpu.api.CriuException;
import dev.criugpu.api.CriuServices;
import dev.criugpu.api.Errno;
import dev.criugpu.cuda.backend.CudaBackend;
import dev.criugpu.cuda.backend.CudaCallException;
import dev.criugpu.cuda.gpu.GpuInfo;
import dev.criugpu.cuda.hostcopy.TaskSpans;
import dev.criugpu.cuda.image.CudaGpuEntry;
import dev.criugpu.cuda.image.CudaTaskEntry;
import dev.criugpu.cuda.image.CudaTaskImages;
import dev.criugpu.cuda.state.CudaState;
import dev.criugpu.cuda.state.Transitions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The checkpoint wait: each CHECKPOINT_DEVICES wakes its task's restore thread (hook thread) and starts its
 * checkpoint on a worker; once every task criu paused has its checkpoint started, they are all joined and every
 * restore thread is stopped again before criu goes on to dump memory. A task the job lock touched that criu never
 * paused fails the dump before any checkpoint starts.
 */
final class CheckpointRound {
    private static final Logger log = LoggerFactory.getLogger(CheckpointRound.class);

    private final CriuServices services;
    private final CudaBackend backend;
    private final WokenWork work;
    private final JobTasks tasks;
    private boolean begun;

    CheckpointRound(CriuServices services, CudaBackend backend, WokenWork work, JobTasks tasks) {
        this.services = services;
        this.backend = backend;
        this.work = work;
        this.tasks = tasks;
    }

    /** CHECKPOINT_DEVICES for a task of ours. */
    void start(CudaTask task) {
        if (task.checkpointStarted) return;
        if (!begun) begin();
        task.checkpointStarted = true;
        try {
            if (Transitions.needsCheckpoint(task.initial)) {
                work.wake(task.pid, task.restoreTid);
                work.submit(task.pid, () -> checkpointOnWorker(task));
            } else {
                try {
                    writeRecord(task);
                } catch (IOException e) {
                    throw new CriuException(Errno.EIO, "pid " + task.pid + ": cannot write its CUDA record: " + e.getMessage());
                }
            }
            if (tasks.allCheckpointsStarted()) finish();
        } catch (RuntimeException e) {
            finishQuietly();
            throw e;
        }
    }

    private void begin() {
        begun = true;
        List<CudaTask> strays = tasks.touchedButNotPaused();
        if (!strays.isEmpty()) {
            throw new CriuException(Errno.ESRCH, strays.stream().map(t -> "pid " + t.pid).toList() + ": locked with the "
                    + "job, but criu never paused " + (strays.size() == 1 ? "it" : "them") + " (left the dumped tree "
                    + "meanwhile: a parent exited?), so criu would dump the job without " + (strays.size() == 1 ? "it" : "them")
                    + "; the dump is aborted and criu's exit unlocks every task");
        }
        tasks.recordMemory();
    }

    /** Whether checkpoints were started and not yet joined. */
    boolean underWay() {
        return work.underWay();
    }

    private void checkpointOnWorker(CudaTask task) throws CudaCallException, IOException {
        long t0 = System.nanoTime();
        List<TaskSpans.Span> before = mappings(task);
        try {
            backend.checkpoint(task.pid);
            task.current = CudaState.CHECKPOINTED;
        } catch (CudaCallException e) {
            if (e.code() == CudaCallException.AGENT_FAILED) {
                task.uncertain = true;
                throw e;
            }
            try {
                task.current = backend.state(task.pid);
            } catch (CudaCallException ignored) {
                task.current = CudaState.CHECKPOINTED; // unknown: assume the most to undo
            }
            throw e;
        }
        log.info("pid {}: CUDA checkpointed in {} ms", task.pid, (System.nanoTime() - t0) / 1_000_000);
        List<TaskSpans.Span> after = mappings(task);
        if (before != null && after != null) task.hostCopy = TaskSpans.added(before, after);
        writeRecord(task);
    }

    /** The task's private anonymous mappings, or null where /proc does not say (its host copy then stays with criu). */
    private static List<TaskSpans.Span> mappings(CudaTask task) {
        try {
            return TaskSpans.privateAnonymous(task.pid);
        } catch (IOException e) {
            log.debug("pid {}: cannot read its mappings: {}", task.pid, e.getMessage());
            return null;
        }
    }

    private void writeRecord(CudaTask task) throws IOException {
        Path dir = services.imageDir().orElseThrow(() -> new IOException("criu gave no images directory"));
        CudaTaskEntry.Builder b = CudaTaskEntry.newBuilder().setPid(task.nsPid).setInitialState(task.initial.value)
                .setBackend(backend.name());
        if (backend.apiVersion() > 0) b.setDriverApi(backend.apiVersion());
        for (GpuInfo g : task.gpus) b.addGpus(entry(g).setUsedMib(task.usedMib.getOrDefault(g.uuid(), 0L)));
        for (GpuInfo g : task.visible) b.addVisible(entry(g));
        CudaTaskImages.write(dir, b.build());
    }

    private static CudaGpuEntry.Builder entry(GpuInfo g) {
        return CudaGpuEntry.newBuilder().setUuid(g.uuid().text()).setModel(g.model()).setMinor(g.minor());
    }

    /** Joins every checkpoint, re-stops every woken restore thread, and reports the first failure. */
    private void finish() {
        WokenWork.Ended ended = work.finishLogged("the CUDA checkpoint");
        List<String> errors = new ArrayList<>();
        for (TaskWork.Failure f : ended.failures()) {
            errors.add("pid " + f.pid() + ": CUDA checkpoint failed: " + CudaErrors.describe(f.cause()));
        }
        errors.addAll(ended.restopErrors());
        if (errors.isEmpty()) return;
        List<TaskWork.Failure> failures = ended.failures();
        int errno = !failures.isEmpty() && failures.getFirst().cause() instanceof CudaCallException c ? CudaErrors.errno(c) : Errno.EIO;
        throw WokenWork.firstOf(errno, errors);
    }

    /** Joins what runs, logging each failure (the dump fails anyway). */
    void finishQuietly() {
        for (TaskWork.Failure f : work.finishLogged("the CUDA checkpoint").failures()) {
            log.error("pid {}: CUDA checkpoint failed: {}", f.pid(), CudaErrors.describe(f.cause()));
        }
    }
}
