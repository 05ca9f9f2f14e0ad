package dev.criugpu.cuda.job;

import dev.criugpu.api.CriuException;
import dev.criugpu.api.Errno;
import dev.criugpu.api.Interrupts;
import dev.criugpu.api.sys.ProcessTree;
import dev.criugpu.api.sys.Tasks;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SecureDirectoryStream;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributeView;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.UserPrincipal;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * NCCL ranks that give up their communicators for the length of a dump, so that a job trains with NVLink P2P on and
 * is still checkpointed by a driver that cannot return P2P mappings (rule 13). The ranks opt in with the Python
 * package the plugin dir ships ({@code python/criu_gpu}: {@code criu_gpu.checkpointable(ddp)}), which gives each rank
 * the directory {@code /dev/shm/criu-gpu/NSPID}, mode 0700, its own. Before criu freezes the tree (the dump's init)
 * this creates {@code request} in each rank's directory and waits until every rank has written {@code released} and
 * has no PyTorch NCCL thread left; at criu's exit (after the return of {@code -R}, or with the tree gone) it removes
 * {@code request} again and the ranks make new communicators. A job that does not opt in, or whose ranks do not all
 * answer in time, is left to the check at the first PAUSE_DEVICES, which refuses it with every task running.
 *
 * <p>criu runs as root and the directories belong to the ranks' user: every access goes through directory handles
 * opened without following links ({@link SecureDirectoryStream}), the directory's owner must be the rank's, and the
 * only files touched are {@code request} (created new, removed) and {@code released} (looked at).
 */
public final class CommRelease implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(CommRelease.class);
    static final String REQUEST = "request";
    static final String RELEASED = "released";
    private static final long POLL_MS = 20;

    /** One rank asked: its pid and the handle of its control directory. */
    private record Asked(int pid, SecureDirectoryStream<Path> dir) {
    }

    private final List<Asked> asked;
    private boolean closed;

    private CommRelease(List<Asked> asked) {
        this.asked = asked;
    }

    /** Nothing asked. */
    public static CommRelease none() {
        return new CommRelease(List.of());
    }

    /** The pids of the ranks that released their communicators for this dump. */
    public List<Integer> pids() {
        return asked.stream().map(Asked::pid).toList();
    }

    /**
     * Asks the NCCL ranks of the tree under {@code root} to release their communicators and waits up to
     * {@code timeoutMs} for all of them. Nothing is asked unless two or more ranks use NCCL on a transport the driver
     * cannot return and every one of them has its control directory.
     *
     * @param proc /proc (a test's stand-in tree elsewhere)
     * @throws CriuException when criu is told to stop meanwhile (the ranks asked are told to go on first)
     */
    public static CommRelease ask(Path proc, int root, long timeoutMs) {
        List<NcclTransports.Rank> ranks = new ProcessTree(proc).list(root).stream()
                .map(pid -> NcclTransports.Rank.read(proc, pid)).filter(NcclTransports.Rank::usesNccl).toList();
        if (NcclTransports.blockers(ranks).isEmpty()) return none();
        List<Asked> dirs = new ArrayList<>();
        for (NcclTransports.Rank r : ranks) {
            Optional<SecureDirectoryStream<Path>> dir = controlDir(proc, r.pid());
            if (dir.isEmpty()) {
                log.info("NCCL rank pid {} has no criu_gpu control directory: its communicators stay (the NCCL check "
                        + "decides)", r.pid());
                dirs.forEach(a -> closeQuietly(a.dir()));
                return none();
            }
            dirs.add(new Asked(r.pid(), dir.get()));
        }
        CommRelease release = new CommRelease(List.copyOf(dirs));
        long t0 = System.nanoTime();
        for (Asked a : dirs) release.request(a);
        log.info("asked NCCL ranks {} to release their communicators for the dump", release.pids());
        List<Integer> waiting = release.pids();
        while (true) {
            waiting = waiting.stream().filter(pid -> !released(proc, pid, release.dirOf(pid))).toList();
            long ms = (System.nanoTime() - t0) / 1_000_000;
            if (waiting.isEmpty()) {
                log.info("NCCL ranks {} released their communicators in {} ms", release.pids(), ms);
                return release;
            }
            Optional<String> stop = Interrupts.pendingStop();
            if (stop.isPresent() || ms >= timeoutMs) {
                release.close();
                if (stop.isPresent()) {
                    throw new CriuException(Errno.EINTR, "criu received " + stop.get() + " while NCCL ranks "
                            + waiting + " released their communicators; they were told to go on");
                }
                log.error("NCCL ranks {} did not release their communicators within {} ms (no criu_gpu check point "
                        + "reached: is the job training?); every rank was told to go on", waiting.stream()
                        .map(p -> "pid " + p).collect(Collectors.joining(", ")), timeoutMs);
                return none();
            }
            try {
                Thread.sleep(POLL_MS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                release.close();
                throw new CriuException(Errno.EINTR, "interrupted while NCCL ranks released their communicators");
            }
        }
    }

    private SecureDirectoryStream<Path> dirOf(int pid) {
        return asked.stream().filter(a -> a.pid() == pid).findFirst().orElseThrow().dir();
    }

    private void request(Asked a) {
        try {
            a.dir().newByteChannel(Path.of(REQUEST), Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE,
                    LinkOption.NOFOLLOW_LINKS)).close();
        } catch (FileAlreadyExistsException e) {
            // left by a dump that ended without its exit: it asks the same
        } catch (IOException e) {
            log.warn("pid {}: cannot ask for the release of its communicators: {}", a.pid(), e.toString());
        }
    }

    /** Whether the rank wrote {@code released} and no ProcessGroupNCCL thread of PyTorch's is left in it (or it ended). */
    private static boolean released(Path proc, int pid, SecureDirectoryStream<Path> dir) {
        Path procDir = proc.resolve(Integer.toString(pid));
        if (!Files.isDirectory(procDir)) return true; // ended: nothing of it to return
        try {
            dir.getFileAttributeView(Path.of(RELEASED), BasicFileAttributeView.class, LinkOption.NOFOLLOW_LINKS).readAttributes();
        } catch (IOException e) {
            return false;
        }
        return NcclTransports.threadNames(procDir).stream().noneMatch(t -> t.startsWith("pt_nccl"));
    }

    /** Whether the process at {@code pid} has its criu_gpu control directory: a dump with its tree pid asks it to release. */
    public static boolean optedIn(Path proc, int pid) {
        Optional<SecureDirectoryStream<Path>> dir = controlDir(proc, pid);
        dir.ifPresent(CommRelease::closeQuietly);
        return dir.isPresent();
    }

    /** The rank's control directory, opened without following links, if it is a directory of the rank's user. */
    static Optional<SecureDirectoryStream<Path>> controlDir(Path proc, int pid) {
        Path procDir = proc.resolve(Integer.toString(pid));
        SecureDirectoryStream<Path> shm = null;
        SecureDirectoryStream<Path> root = null;
        try {
            UserPrincipal owner = Files.getOwner(procDir);
            int nsPid = Tasks.innermostPid(Files.readString(procDir.resolve("status"))).orElse(pid);
            DirectoryStream<Path> opened = Files.newDirectoryStream(procDir.resolve("root/dev/shm"));
            if (!(opened instanceof SecureDirectoryStream<Path> s)) {
                opened.close();
                return Optional.empty();
            }
            shm = s;
            root = shm.newDirectoryStream(Path.of("criu-gpu"), LinkOption.NOFOLLOW_LINKS);
            SecureDirectoryStream<Path> mine = root.newDirectoryStream(Path.of(Integer.toString(nsPid)), LinkOption.NOFOLLOW_LINKS);
            if (!owner.equals(mine.getFileAttributeView(PosixFileAttributeView.class).readAttributes().owner())) {
                log.warn("pid {}: /dev/shm/criu-gpu/{} is not its user's: not asked to release its communicators", pid, nsPid);
                mine.close();
                return Optional.empty();
            }
            return Optional.of(mine);
        } catch (IOException | RuntimeException e) {
            return Optional.empty();
        } finally {
            closeQuietly(root);
            closeQuietly(shm);
        }
    }

    /** Tells every rank asked to go on (removes its {@code request}); they make new communicators. */
    @Override
    public void close() {
        if (closed) return;
        closed = true;
        for (Asked a : asked) {
            try {
                a.dir().deleteFile(Path.of(REQUEST));
            } catch (NoSuchFileException e) {
                // removed already
            } catch (IOException e) {
                log.warn("pid {}: cannot tell it to make its communicators again: {}", a.pid(), e.toString());
            }
            closeQuietly(a.dir());
        }
        if (!asked.isEmpty()) log.info("NCCL ranks {} were told to make their communicators again", pids());
    }

    private static void closeQuietly(AutoCloseable c) {
        if (c == null) return;
        try {
            c.close();
        } catch (Exception e) {
            // nothing left to do with it
        }
    }
}
