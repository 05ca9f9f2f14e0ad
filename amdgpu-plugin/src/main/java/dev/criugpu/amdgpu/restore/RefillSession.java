package dev.criugpu.amdgpu.restore;

import dev.criugpu.amdgpu.images.ImageNames;
import dev.criugpu.amdgpu.images.proto.CriuKfd;
import dev.criugpu.amdgpu.kfd.BoBucket;
import dev.criugpu.amdgpu.sys.UnixSockets;
import dev.criugpu.api.CriuException;
import dev.criugpu.api.Interrupts;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;

/**
 * The BO-content refill of one restore: a {@link RefillServer} over the plan's {@link RefillChannels}, whose
 * requests are checked against the plan and queued on a {@link BoRefiller} as they arrive (while the tasks go on
 * restoring their memory); then, once every task is restored, {@link #finish} takes what is still waiting, waits
 * for every copy, and says per task (its pid in its own pid namespace) what failed. A KFD image whose task never
 * sent its request counts against the pid the image records, which criu restores the task with.
 */
public final class RefillSession implements AutoCloseable {
    private final RestorePlan plan;
    private final BoRefiller refiller;
    private final RefillServer server;
    private final Map<Integer, Received> received = new HashMap<>();
    private final Map<Integer, List<String>> failuresByTask = new LinkedHashMap<>();
    private Outcome outcome;

    private record Received(int taskPid, CompletableFuture<Void> done) {
    }

    /** What {@link #finish} found: the failures per restored task (pid in the task's own pid namespace). */
    public record Outcome(Map<Integer, List<String>> failuresByTask) {
        public boolean ok() {
            return failuresByTask.isEmpty();
        }
    }

    public RefillSession(RestorePlan plan, BoRefiller refiller, RefillChannels channels) {
        this.plan = plan;
        this.refiller = refiller;
        this.server = new RefillServer(channels.mainEnds(), this::accept, this::refused);
    }

    /** Starts taking requests. */
    public void start() {
        server.start();
    }

    private synchronized void accept(RefillRequest r) {
        CriuKfd kfd = plan.kfds().get(r.fileId());
        String problem = received.containsKey(r.fileId()) ? "it was refilled already" : mismatch(kfd, r.boIndices());
        if (problem != null) {
            UnixSockets.closeAll(r.fds());
            failed(r.taskPid(), ImageNames.kfd(r.fileId()) + ": refill request from pid " + r.taskPid() + ": " + problem);
            received.putIfAbsent(r.fileId(), new Received(r.taskPid(), CompletableFuture.completedFuture(null)));
            return;
        }
        received.put(r.fileId(), new Received(r.taskPid(), refiller.refill(r, kfd, plan)));
    }

    /** Null when the indices are exactly the image's VRAM/GTT BOs, in order. */
    private static String mismatch(CriuKfd kfd, int[] indices) {
        int[] expected = new int[kfd.getBoEntriesCount()];
        int n = 0;
        for (int i = 0; i < kfd.getBoEntriesCount(); i++) {
            if (BoBucket.hasContents(kfd.getBoEntries(i).getAllocFlags())) expected[n++] = i;
        }
        expected = Arrays.copyOf(expected, n);
        return Arrays.equals(expected, indices) ? null : "it sent dma-bufs for BOs " + Arrays.toString(indices)
                + " but the image's VRAM/GTT BOs are " + Arrays.toString(expected);
    }

    private synchronized void refused(RefillRequestReader.Refused e) {
        int task = e.taskPid() != 0 ? e.taskPid() : plan.kfds().get(e.fileId()).getPid();
        failed(task, e.getMessage());
        received.putIfAbsent(e.fileId(), new Received(task, CompletableFuture.completedFuture(null)));
    }

    private void failed(int taskPid, String message) {
        failuresByTask.computeIfAbsent(taskPid, p -> new ArrayList<>()).add(message);
    }

    /**
     * Ends the server and waits for every copy; the same outcome on every later call. Gives up with EINTR when criu
     * is told to stop meanwhile ({@link Interrupts}); the copies still running go on until criu's process ends.
     */
    public Outcome finish() {
        synchronized (this) {
            if (outcome != null) return outcome;
        }
        server.stop();
        Map<Integer, Received> all;
        synchronized (this) {
            all = new HashMap<>(received);
        }
        for (var e : plan.kfds().entrySet()) {
            Received r = all.get(e.getKey());
            if (r == null) {
                synchronized (this) {
                    failed(e.getValue().getPid(), "no restored task sent the dma-bufs of " + ImageNames.kfd(e.getKey()));
                }
                continue;
            }
            try {
                Interrupts.await(r.done(), "the GPU memory refill of " + ImageNames.kfd(e.getKey()) + " (pid "
                        + r.taskPid() + ")");
            } catch (ExecutionException ex) {
                String why = ex.getCause() instanceof CriuException c ? c.getMessage() : String.valueOf(ex.getCause());
                synchronized (this) {
                    failed(r.taskPid(), why);
                }
            }
        }
        synchronized (this) {
            Map<Integer, List<String>> copy = new LinkedHashMap<>();
            failuresByTask.forEach((k, v) -> copy.put(k, List.copyOf(v)));
            outcome = new Outcome(copy);
            return outcome;
        }
    }

    @Override
    public void close() {
        server.close();
        refiller.close();
    }
}
