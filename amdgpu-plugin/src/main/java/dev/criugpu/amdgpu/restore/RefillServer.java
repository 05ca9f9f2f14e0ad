package dev.criugpu.amdgpu.restore;

import dev.criugpu.amdgpu.sys.UnixSockets;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
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
        Map<Integer, Integer> waiting = new LinkedHashMap<>(channels);
        while (!waiting.isEmpty()) {
            List<Integer> files = new ArrayList<>(waiting.keySet());
            int[] fds = new int[files.size() + 1];
            for (int i = 0; i < files.size(); i++) fds[i] = waiting.get(files.get(i));
            fds[files.size()] = stopFd;
            int ready = UnixSockets.pollReadable(fds);
            boolean stopping = (ready & (1 << files.size())) != 0;
            for (int i = 0; i < files.size(); i++) {
                if (!stopping && (ready & (1 << i)) == 0) continue;
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

    /** Takes what is still waiting on the channels, then ends the thread (started or not). */
    public synchronized void stop() {
        if (poller == null) start();
        if (!poller.isAlive()) return;
        UnixSockets.signal(stopFd);
        boolean interrupted = false;
        while (true) {
            try {
                poller.join();
                break;
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) Thread.currentThread().interrupt();
    }

    @Override
    public synchronized void close() {
        stop();
        UnixSockets.close(stopFd);
    }
}
