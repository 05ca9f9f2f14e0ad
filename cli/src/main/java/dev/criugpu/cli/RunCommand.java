package dev.criugpu.cli;

import dev.criugpu.api.Errno;
import dev.criugpu.api.bindings.libc_h;
import dev.criugpu.cli.sys.IoUringFilter;

import java.io.File;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * {@code criu-gpu run [--] COMMAND [ARG...]}: COMMAND in place of this process, under {@link IoUringFilter}, so that
 * nothing it starts holds an io_uring and criu 4.2.1 can dump it: a job started by torchrun, whose elastic agent keeps
 * one for its rendezvous store's libuv whatever USE_LIBUV or UV_USE_IO_URING say (libuv 1.50 and later always set up
 * a ring for epoll batching). The environment, the working directory and fds 0-2 are the caller's; the JVM's own
 * descriptors are close-on-exec and do not reach COMMAND.
 */
final class RunCommand {
    static final String USAGE = "usage: criu-gpu run [--] COMMAND [ARG...]   (COMMAND with io_uring unavailable, as "
            + "criu 4.2.1 needs: e.g. criu-gpu run -- torchrun --nproc-per-node 4 train.py)";

    private RunCommand() {
    }

    /** Returns only when COMMAND could not be started: 2 for bad usage, 126 or 127 as a shell does. */
    static int run(String[] args, PrintStream err) {
        List<String> argv = Arrays.asList(args);
        if (!argv.isEmpty() && argv.getFirst().equals("--")) argv = argv.subList(1, argv.size());
        if (argv.isEmpty() || argv.getFirst().isEmpty()) {
            err.println(USAGE);
            return 2;
        }
        try {
            IoUringFilter.install();
        } catch (IllegalStateException e) {
            err.println("criu-gpu run: " + argv.getFirst() + " not started: " + e.getMessage());
            return 126;
        }
        jvmFilesCloseOnExec();
        err.flush();
        int errno = libc_h.execvp(argv);
        err.println("criu-gpu run: cannot run " + argv.getFirst() + ": " + Errno.name(errno));
        return errno == Errno.ENOENT ? 127 : 126;
    }

    /**
     * The JVM's own open files (the JDK's {@code lib/modules} image is opened without close-on-exec, measured) are
     * marked close-on-exec, so the command gets the caller's descriptors and none of the JVM's.
     */
    private static void jvmFilesCloseOnExec() {
        Path home = Path.of(System.getProperty("java.home"));
        Set<Path> classPath = Arrays.stream(System.getProperty("java.class.path", "").split(File.pathSeparator))
                .filter(s -> !s.isEmpty()).map(s -> Path.of(s).toAbsolutePath().normalize()).collect(Collectors.toSet());
        try (DirectoryStream<Path> fds = Files.newDirectoryStream(Path.of("/proc/self/fd"))) {
            for (Path fd : fds) {
                Path target;
                try {
                    target = Files.readSymbolicLink(fd);
                } catch (IOException e) {
                    continue;   // the listing's own descriptor, closed by now
                }
                if (target.startsWith(home) || classPath.contains(target)) {
                    libc_h.fcntl(Integer.parseInt(fd.getFileName().toString()), libc_h.F_SETFD, libc_h.FD_CLOEXEC);
                }
            }
        } catch (IOException e) {
            // no /proc: nothing to mark; the command then may see the JVM's files, which is harmless
        }
    }
}
