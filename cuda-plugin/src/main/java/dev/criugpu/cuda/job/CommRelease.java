package dev.criugpu.cuda.job;

import dev.criugpu.api.CriuException;
import dev.criugpu.api.Errno;
import dev.criugpu.api.Interrupts;
import dev.criugpu.api.sys.ProcessTree;
import dev.criugpu.api.sys.SyscallException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import java.util.stream.Collectors;

/**
 * NCCL ranks that give up their communicators for the length of a dump, so that a job trains with NVLink P2P on and
 * is still checkpointed by a driver that cannot return P2P mappings (rule 13). The ranks opt in with the Python
 * package the plugin dir ships ({@code python/criu_gpu}: {@code criu_gpu.checkpointable(ddp)}), which gives each rank
 * a channel of its own, a sealed memfd ({@link RankChannel}). Before criu freezes the tree (the dump's init) this
 * writes a request into each rank's channel and waits until every rank has answered it and has no PyTorch NCCL thread
 * left; once criu has frozen the tree (the first CHECKPOINT_DEVICES, before criu dumps any file), or at criu's exit
 * if the dump ends before that, it takes the request back, so that the ranks make new communicators when they run
 * again: after the return of {@code -R}, or in the process restored from the images, whose channel was dumped
 * without the request. A job that does not opt in, or whose ranks do not all answer in time, is left to the check at
 * the first PAUSE_DEVICES, which refuses it with every task running.
 */
public final class CommRelease implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(CommRelease.class);
    private static final long POLL_MS = 20;

    private final List<RankChannel> asked;
    private boolean closed;

    private CommRelease(List<RankChannel> asked) {
        this.asked = asked;
    }

    /** Nothing asked. */
    public static CommRelease none() {
        return new CommRelease(List.of());
    }

    /** The pids of the ranks that released their communicators for this dump. */
    public List<Integer> pids() {
        return asked.stream().map(RankChannel::pid).toList();
    }

    /**
     * Asks the NCCL ranks of the tree under {@code root} to release their communicators and waits up to
     * {@code timeoutMs} for all of them. Nothing is asked unless two or more ranks use NCCL on a transport the driver
     * cannot return and every one of them has its criu_gpu channel.
     *
     * @param proc /proc (a test's stand-in tree elsewhere)
     * @throws CriuException when criu is told to stop meanwhile (the ranks asked are told to go on first)
     */
    public static CommRelease ask(Path proc, int root, long timeoutMs) {
        List<NcclTransports.Rank> ranks = new ProcessTree(proc).list(root).stream()
                .map(pid -> NcclTransports.Rank.read(proc, pid)).filter(NcclTransports.Rank::usesNccl).toList();
        if (NcclTransports.blockers(ranks).isEmpty()) return none();
        List<RankChannel> channels = new ArrayList<>();
        for (NcclTransports.Rank r : ranks) {
            Optional<RankChannel> channel = RankChannel.open(proc, r.pid());
            if (channel.isEmpty()) {
                log.info("NCCL rank pid {} has no criu_gpu channel: its communicators stay (the NCCL check decides)", r.pid());
                channels.forEach(RankChannel::close);
                return none();
            }
            channels.add(channel.get());
        }
        CommRelease release = new CommRelease(List.copyOf(channels));
        // tells this dump's answers from an earlier one's; SecureRandom would load the JDK's security providers in
        // criu's JVM (and fail where its JDK's conf is not mounted: a CRI node, fresh-machine.sh)
        int token = ThreadLocalRandom.current().nextInt(1, Integer.MAX_VALUE);
        long t0 = System.nanoTime();
        for (RankChannel c : channels) release.request(c, token);
        log.info("asked NCCL ranks {} to release their communicators for the dump", release.pids());
        List<RankChannel> waiting = channels;
        while (true) {
            waiting = waiting.stream().filter(c -> !released(proc, c, token)).toList();
            long ms = (System.nanoTime() - t0) / 1_000_000;
            if (waiting.isEmpty()) {
                log.info("NCCL ranks {} released their communicators in {} ms", release.pids(), ms);
                return release;
            }
            Optional<String> stop = Interrupts.pendingStop();
            if (stop.isPresent() || ms >= timeoutMs) {
                String pids = waiting.stream().map(c -> "pid " + c.pid()).collect(Collectors.joining(", "));
                release.close();
                if (stop.isPresent()) {
                    throw new CriuException(Errno.EINTR, "criu received " + stop.get() + " while NCCL ranks " + pids
                            + " released their communicators; they were told to go on");
                }
                log.error("NCCL ranks {} did not release their communicators within {} ms (no criu_gpu check point "
                        + "reached: is the job training?); every rank was told to go on", pids, timeoutMs);
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

    private void request(RankChannel c, int token) {
        try {
            c.request(token);
        } catch (SyscallException e) {
            log.warn("pid {}: cannot ask for the release of its communicators: {}", c.pid(), e.getMessage());
        }
    }

    /** Whether the rank answered {@code token} and no ProcessGroupNCCL thread of PyTorch's is left in it (or it ended). */
    private static boolean released(Path proc, RankChannel c, int token) {
        Path procDir = proc.resolve(Integer.toString(c.pid()));
        if (!Files.isDirectory(procDir)) return true; // ended: nothing of it to return
        try {
            if (c.released() != token) return false;
        } catch (SyscallException e) {
            return false;
        }
        return NcclTransports.threadNames(procDir).stream().noneMatch(t -> t.startsWith("pt_nccl"));
    }

    /**
     * Whether the process at {@code pid} shows a criu_gpu channel among its descriptors ({@code criu-gpu check}'s
     * question: a dump with its tree pid asks it to release); the dump itself also checks the descriptor's shape.
     */
    public static boolean optedIn(Path proc, int pid) {
        return RankChannel.shown(proc, pid);
    }

    /**
     * Takes the request back from every rank asked: they make new communicators once they run again. Called once criu
     * has frozen the tree, before it dumps the channels, and again (doing nothing) at criu's exit.
     */
    @Override
    public void close() {
        if (closed) return;
        closed = true;
        for (RankChannel c : asked) {
            try {
                c.request(0);
            } catch (SyscallException e) {
                log.warn("pid {}: cannot tell it to make its communicators again: {}", c.pid(), e.getMessage());
            }
            c.close();
        }
        if (!asked.isEmpty()) log.info("NCCL ranks {} were told to make their communicators again", pids());
    }
}
