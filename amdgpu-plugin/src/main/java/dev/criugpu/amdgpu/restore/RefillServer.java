package dev.criugpu.amdgpu.restore;

import dev.criugpu.amdgpu.sys.UnixSockets;
import dev.criugpu.api.Interrupts;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.function.Consumer;

/**
 * The main-process end of the refill channels: one thread polls every KFD image's channel and reads the request
 * a restored task sends there, handing each on as it arrives, so the copies overlap the tasks' own restore.
 * {@link #stop} (once every task is restored) makes it take what is still waiting and end; a request that is
 * incomplete by then never will be.
 */
public final class RefillServer implements AutoCloseable {
    private final Map<Integer, Integer> channels;
    private final int stopFd;
    private final Consumer<RefillRequest> onRequest;
    private final Consumer<RefillRequestReader.Refused> onRefused;
    private Thread poller;
    private final CompletableFuture<Void> ended = new CompletableFuture<>();

    public RefillServer(Map<Integer, Integer> channels, Consumer<RefillRequest> onRequest,
                        Consumer<RefillRequestReader.Refused> onRefused) {
        this.channels = new LinkedHashMap<>(channels);
        this.stopFd = UnixSockets.eventFd();
        this.onRequest = onRequest;
        this.onRefused = onRefused;
    }

    public synchronized void start() {
        if (poller != null) return;
        poller = Thread.ofPlatform().name("amdgpu-refill").daemon().start(this::pollLoop);
    }

    private void pollLoop() {
        try {
            serveAll();
        } finally {
            ended.complete(null);
        }
    }

    private void serveAll() {
        Map<Integer, Integer> waiting = new LinkedHashMap<>(channels);
        while (!waiting.isEmpty()) {
            List<Integer> files = new ArrayList<>(waiting.keySet());
            int[] fds = new int[files.size() + 1];
            for (int i = 0; i < files.size(); i++) fds[i] = waiting.get(files.get(i));
            fds[files.size()] = stopFd;
            boolean[] ready = UnixSockets.pollReadable(fds);
            boolean stopping = ready[files.size()];
            for (int i = 0; i < files.size(); i++) {
                if (!stopping && !ready[i]) continue;
                int file = files.get(i);
                if (serve(file, waiting.get(file)) || stopping) waiting.remove(file);
            }
            if (stopping) return;
        }
    }

    /** True when the channel is done (a request, or a refused one). */
    private boolean serve(int fileId, int channel) {
        try {
            RefillRequest r = RefillRequestReader.read(channel, fileId, stopFd);
            if (r == null) return false;
            onRequest.accept(r);
        } catch (RefillRequestReader.Refused e) {
            onRefused.accept(e);
        } catch (RuntimeException e) {
            onRefused.accept(new RefillRequestReader.Refused(fileId, 0, "amdgpu-kfd-" + fileId + ".img: refill request"
                    + " failed: " + e));
        }
        return true;
    }

    /**
     * Takes what is still waiting on the channels, then ends the thread (started or not). The wait for it gives up
     * when criu is told to stop ({@link Interrupts}).
     */
    public synchronized void stop() {
        if (poller == null) start();
        if (ended.isDone()) return;
        UnixSockets.signal(stopFd);
        try {
            Interrupts.await(ended, "the AMD refill poller to take the last refill requests");
        } catch (ExecutionException e) {
            throw new IllegalStateException(e.getCause()); // ended is only ever completed normally
        }
    }

    @Override
    public synchronized void close() {
        try {
            stop();
        } finally {
            if (ended.isDone()) UnixSockets.close(stopFd); // a poller still running keeps polling it: leave it open
        }
    }
}
