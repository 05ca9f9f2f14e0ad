package dev.criugpu.amdgpu.restore;

import dev.criugpu.amdgpu.images.proto.CriuKfd;
import dev.criugpu.amdgpu.kfd.BoBucket;
import dev.criugpu.amdgpu.sys.UnixSockets;
import dev.criugpu.api.CriuException;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * The BO-content refill of one restore: a {@link RefillServer} whose requests are checked against the plan and
 * queued on a {@link BoRefiller} as they arrive (while the tasks go on restoring their memory), and, once every
 * task is restored, the outcome per task: {@link #finish} takes the requests still pending, waits for every copy
 * and names what failed. Every KFD image of the plan must have been refilled by exactly one task.
 */
public final class RefillSession implements AutoCloseable {
    private final RestorePlan plan;
    private final BoRefiller refiller;
    private final RefillServer server;
    private final Map<Integer, Received> received = new HashMap<>();
    private final Map<Integer, List<String>> failuresByPid = new LinkedHashMap<>();
    private final List<String> failures = new ArrayList<>();
    private Outcome outcome;

    private record Received(int pid, CompletableFuture<Void> done) {
    }

    /** What {@link #finish} found: failures per restored task, and failures no task can be named for. */
    public record Outcome(Map<Integer, List<String>> failuresByPid, List<String> unattributed) {
        public boolean ok() {
            return failuresByPid.isEmpty() && unattributed.isEmpty();
        }
    }

    public RefillSession(RestorePlan plan, BoRefiller refiller, String socketName) {
        this.plan = plan;
        this.refiller = refiller;
        this.server = RefillServer.bind(socketName, this::accept, this::reject);
        plan.refillSocket(server.address());
    }

    /** Starts taking requests. */
    public void start() {
        server.start();
    }

    private synchronized void accept(RefillRequest r) {
        String file = "amdgpu-kfd-" + r.fileId() + ".img";
        CriuKfd kfd = plan.kfds().get(r.fileId());
        String problem = kfd == null ? "no such KFD image in the plan"
                : received.containsKey(r.fileId()) ? "already refilled for pid " + received.get(r.fileId()).pid()
                : mismatch(kfd, r.boIndices());
        if (problem != null) {
            UnixSockets.closeAll(r.fds());
            failed(r.senderPid(), "pid " + r.senderPid() + " sent a refill request for " + file + ": " + problem);
            return;
        }
        received.put(r.fileId(), new Received(r.senderPid(), refiller.refill(r, kfd, plan)));
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

    private synchronized void reject(CriuException e) {
        if (e instanceof RefillRequestReader.Refused r) failed(r.pid(), r.getMessage());
        else failures.add(e.getMessage());
    }

    private void failed(int pid, String message) {
        failuresByPid.computeIfAbsent(pid, p -> new ArrayList<>()).add(message);
    }

    /** Ends the server and waits for every copy; the same outcome on every later call. */
    public Outcome finish() {
        synchronized (this) {
            if (outcome != null) return outcome;
        }
        server.stop();
        Map<Integer, Received> all;
        synchronized (this) {
            all = new HashMap<>(received);
        }
        for (int fileId : plan.kfds().keySet()) {
            Received r = all.get(fileId);
            if (r == null) {
                synchronized (this) {
                    failures.add("no restored task sent the dma-bufs of amdgpu-kfd-" + fileId + ".img");
                }
                continue;
            }
            try {
                r.done().join();
            } catch (CompletionException e) {
                String why = e.getCause() instanceof CriuException c ? c.getMessage() : String.valueOf(e.getCause());
                synchronized (this) {
                    failed(r.pid(), why);
                }
            }
        }
        synchronized (this) {
            outcome = new Outcome(Map.copyOf(failuresByPid), List.copyOf(failures));
            return outcome;
        }
    }

    @Override
    public void close() {
        server.close();
        refiller.close();
    }
}
