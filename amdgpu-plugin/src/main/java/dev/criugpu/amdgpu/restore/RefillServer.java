package dev.criugpu.amdgpu.restore;

import dev.criugpu.amdgpu.sys.UnixSockets;
import dev.criugpu.api.CriuException;
import dev.criugpu.api.Errno;

import java.util.OptionalInt;
import java.util.function.Consumer;

/**
 * The listening end of the refill socket in criu's main process. It is bound before criu forks (the restored
 * tasks inherit nothing but its abstract name through the plan); {@link #start} runs one accept thread that reads
 * each connection's request and hands it on; {@link #stop} makes the thread take every connection still
 * pending, then end. Reading a request never waits on another task: each task sends all of it before its
 * RESTORE_EXT_FILE returns.
 */
public final class RefillServer implements AutoCloseable {
    private final UnixSockets.Address address;
    private final int listenFd;
    private final int stopFd;
    private final Consumer<RefillRequest> onRequest;
    private final Consumer<CriuException> onBadRequest;
    private Thread acceptor;

    private RefillServer(UnixSockets.Address address, int listenFd, int stopFd, Consumer<RefillRequest> onRequest,
                         Consumer<CriuException> onBadRequest) {
        this.address = address;
        this.listenFd = listenFd;
        this.stopFd = stopFd;
        this.onRequest = onRequest;
        this.onBadRequest = onBadRequest;
    }

    /** Binds the abstract name {@code name}. */
    public static RefillServer bind(String name, Consumer<RefillRequest> onRequest, Consumer<CriuException> onBadRequest) {
        UnixSockets.Address address = UnixSockets.Address.abstractName(name);
        int listen = UnixSockets.listen(address);
        try {
            return new RefillServer(address, listen, UnixSockets.eventFd(), onRequest, onBadRequest);
        } catch (RuntimeException e) {
            UnixSockets.close(listen);
            throw e;
        }
    }

    public UnixSockets.Address address() {
        return address;
    }

    public synchronized void start() {
        if (acceptor != null) return;
        acceptor = Thread.ofPlatform().name("amdgpu-refill-accept").daemon().start(this::acceptLoop);
    }

    private void acceptLoop() {
        while (true) {
            int ready = UnixSockets.pollReadable(listenFd, stopFd);
            for (OptionalInt c = UnixSockets.accept(listenFd); c.isPresent(); c = UnixSockets.accept(listenFd)) {
                serve(c.getAsInt());
            }
            if ((ready & 2) != 0) return;
        }
    }

    private void serve(int conn) {
        try {
            onRequest.accept(RefillRequestReader.read(conn));
        } catch (CriuException e) {
            onBadRequest.accept(e);
        } catch (RuntimeException e) {
            onBadRequest.accept(new CriuException(Errno.EIO, "refill request failed: " + e, e));
        } finally {
            UnixSockets.close(conn);
        }
    }

    /** Takes the connections still pending, then ends the accept thread (started or not). */
    public synchronized void stop() {
        if (acceptor == null) {
            start();
        }
        if (!acceptor.isAlive()) return;
        UnixSockets.signal(stopFd);
        boolean interrupted = false;
        while (true) {
            try {
                acceptor.join();
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
        UnixSockets.close(listenFd);
        UnixSockets.close(stopFd);
    }
}
