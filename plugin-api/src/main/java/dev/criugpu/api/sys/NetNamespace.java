package dev.criugpu.api.sys;

import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;

/**
 * Work done in another network namespace: on a thread of its own that joins the namespace (setns with CLONE_NEWNET
 * moves only the calling thread) and ends with the work, so no other thread of this process changes namespace.
 */
public final class NetNamespace {
    private NetNamespace() {
    }

    /**
     * {@code work} on a new thread inside the network namespace of {@code nsFile} (such as /proc/PID/ns/net or a
     * file under /run/netns), its result or its exception passed on.
     *
     * @throws SyscallException where the namespace cannot be opened or joined
     */
    public static <T> T run(Path nsFile, Supplier<T> work) {
        AtomicReference<T> result = new AtomicReference<>();
        AtomicReference<RuntimeException> failure = new AtomicReference<>();
        Thread t = Thread.ofPlatform().name("netns-" + nsFile.getFileName()).unstarted(() -> {
            try {
                int fd = Syscalls.libc().open(nsFile.toString(), Syscalls.O_RDONLY | Syscalls.O_CLOEXEC);
                try {
                    Syscalls.libc().setns(fd, Syscalls.CLONE_NEWNET);
                } finally {
                    Syscalls.libc().close(fd);
                }
                result.set(work.get());
            } catch (RuntimeException e) {
                failure.set(e);
            }
        });
        t.start();
        try {
            t.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while working in the network namespace " + nsFile, e);
        }
        if (failure.get() != null) throw failure.get();
        return result.get();
    }
}
