package dev.criugpu.cuda;

import dev.criugpu.api.sys.ImageFiles;
import dev.criugpu.api.sys.NetNamespace;
import dev.criugpu.api.sys.SyscallException;
import dev.criugpu.api.sys.TcpTimeWait;
import dev.criugpu.cuda.config.CriuCommandLine;
import dev.criugpu.inventory.ListenSockets;
import dev.criugpu.inventory.ListenSockets.Listen;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;

/**
 * Frees the ports the restored job listens on from its own TIME_WAIT connections, before criu creates any task.
 * Measured on 2 × H100 (issue 32): a restore on the same host right after the dump of an NCCL job failed with "Can't
 * bind inet socket: Address already in use" on a rank's listener; its port held a TIME_WAIT entry of a connection the
 * listener's side had closed (NCCL's start-up), which carries the listener's own reuse setting (off), so criu's
 * SO_REUSEADDR/SO_REUSEPORT do not help; the same restore worked once the entry expired (60 s after the close).
 * Only the listen ports of an image restored into an existing network namespace are touched: criu's own, or the one
 * {@code --join-ns net:...} names (the work runs there); under RPC the options are unknown and nothing is touched. A
 * port that another socket listens on now is left alone: its TIME_WAIT entries are that listener's, and criu's bind
 * fails there whatever they are. A TIME_WAIT entry only guards against late segments of a connection that is over.
 *
 * <p>Only the job's own entries go, and the kernel names no owner of one (sock_diag says uid 0 for every TIME_WAIT
 * entry). While the job's listener held the port, no other socket could take it (an ephemeral port is never one a
 * listener holds); it held it until criu's dump ended, after files.img was written. So an entry that entered
 * TIME_WAIT before files.img was written is the job's; a later one is someone else's (a client that got the port as
 * its ephemeral one once the dump freed it) and stays. When files.img was written is the earlier of its mtime and its
 * ctime (a copy keeps neither unless asked to; no one sets a ctime), with {@link #CLOCK_SLACK_MS} for the clocks.
 */
final class ListenPorts {
    private static final Logger log = LoggerFactory.getLogger(ListenPorts.class);

    /** How far the kernel's TIME_WAIT timer and the file's times may disagree about the same moment. */
    static final long CLOCK_SLACK_MS = 1000;

    private ListenPorts() {
    }

    static void free(Path imagesDir, CriuCommandLine criu) {
        List<Listen> listens;
        try {
            if (ImageFiles.list(imagesDir).stream().anyMatch(n -> n.startsWith("netns-"))) {
                log.debug("the image has its own network namespace: its ports are free there");
                return;
            }
            listens = ListenSockets.of(imagesDir);
        } catch (IOException e) {
            log.warn("cannot list the image's listening sockets ({}); a TIME_WAIT connection on one of their ports "
                    + "would fail the restore with \"Address already in use\"", e.getMessage());
            return;
        }
        if (listens.isEmpty()) return;
        if (criu.rpc()) {
            log.info("criu runs over RPC: the network namespace the job's {} listener(s) return to is unknown here, so no "
                    + "TIME_WAIT connection on their ports is removed", listens.size());
            return;
        }
        long written;
        try {
            written = writtenMs(imagesDir.resolve("files.img"));
        } catch (IOException e) {
            log.warn("cannot tell when the image's files.img was written ({}), so no TIME_WAIT connection can be told to "
                    + "be the job's; one on a port it listens on would fail the restore with \"Address already in use\"",
                    e.getMessage());
            return;
        }
        Optional<Path> netns = criu.joinNetNs();
        if (netns.isEmpty()) {
            listens.forEach(l -> free(l, written));
            return;
        }
        try {
            NetNamespace.run(netns.get(), () -> {
                listens.forEach(l -> free(l, written));
                return null;
            });
        } catch (SyscallException e) {
            log.warn("cannot enter the network namespace {} the restore joins ({}); a TIME_WAIT connection on a port "
                    + "the job listens on would fail the restore with \"Address already in use\"", netns.get(), e.getMessage());
        }
    }

    /** The earlier of {@code file}'s mtime and ctime, in ms since the epoch (not following a link). */
    static long writtenMs(Path file) throws IOException {
        FileTime modified = Files.getLastModifiedTime(file, LinkOption.NOFOLLOW_LINKS);
        FileTime changed = (FileTime) Files.getAttribute(file, "unix:ctime", LinkOption.NOFOLLOW_LINKS);
        return Math.min(modified.toMillis(), changed.toMillis());
    }

    /** In the calling thread's network namespace; {@code imageWrittenMs}: when files.img was written. */
    private static void free(Listen l, long imageWrittenMs) {
        List<TcpTimeWait.Entry> blocking = new ArrayList<>();
        List<TcpTimeWait.Entry> others = new ArrayList<>();
        try {
            for (int family : FAMILIES) {
                for (TcpTimeWait.Entry live : TcpTimeWait.listeners(family, l.port())) {
                    if (overlaps(l.family(), l.address(), live.family(), live.local())) {
                        log.warn("port {}: {} listens on it now, so criu cannot bind the restored listener there; its "
                                + "TIME_WAIT connections are left alone", l.port(), live);
                        return;
                    }
                }
            }
            long now = System.currentTimeMillis();
            for (int family : FAMILIES) {
                for (TcpTimeWait.Entry e : TcpTimeWait.on(family, l.port())) {
                    if (!overlaps(l.family(), l.address(), e.family(), e.local())) continue;
                    (e.beganMs(now) <= imageWrittenMs + CLOCK_SLACK_MS ? blocking : others).add(e);
                }
            }
            for (TcpTimeWait.Entry e : blocking) TcpTimeWait.destroy(e);
        } catch (SyscallException | IllegalStateException e) {
            log.warn("port {}: {} TIME_WAIT connection(s) hold the port the restored job listens on and cannot be "
                    + "removed ({}); criu's bind fails with \"Address already in use\" until they expire (60 s after "
                    + "they closed)", l.port(), blocking.size(), e.getMessage());
            return;
        }
        if (!others.isEmpty()) {
            log.warn("port {}: {} TIME_WAIT connection(s) ({}) entered TIME_WAIT after the image was written, so they "
                    + "are not the job's and are left alone; criu's bind of the restored listener fails with \"Address "
                    + "already in use\" if they hold the port (until 60 s after they closed)", l.port(), others.size(),
                    others.getFirst());
        }
        if (blocking.isEmpty()) {
            log.debug("port {}: no TIME_WAIT connection of the job holds it", l.port());
        } else {
            log.info("port {}: removed {} TIME_WAIT connection(s) ({}) that would fail criu's bind of the restored "
                    + "listener with \"Address already in use\"", l.port(), blocking.size(), blocking.getFirst());
        }
    }

    private static final int[] FAMILIES = {TcpTimeWait.AF_INET, TcpTimeWait.AF_INET6};

    /**
     * Whether a socket bound to {@code (family, address)} and one bound to {@code (otherFamily, other)} on the same
     * port hold it against each other: the same family with equal addresses or either a wildcard; an IPv6 wildcard
     * (without IPV6_V6ONLY, which the image does not tell) also takes the port for IPv4.
     */
    static boolean overlaps(int family, byte[] address, int otherFamily, byte[] other) {
        if (family == otherFamily) return wildcard(address) || wildcard(other) || Arrays.equals(address, other);
        return family == TcpTimeWait.AF_INET6 ? wildcard(address) : wildcard(other);
    }

    private static boolean wildcard(byte[] address) {
        for (byte b : address) if (b != 0) return false;
        return true;
    }
}
