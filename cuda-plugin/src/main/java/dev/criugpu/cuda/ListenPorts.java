package dev.criugpu.cuda;

import dev.criugpu.api.sys.ImageFiles;
import dev.criugpu.api.sys.SyscallException;
import dev.criugpu.api.sys.TcpTimeWait;
import dev.criugpu.inventory.ListenSockets;
import dev.criugpu.inventory.ListenSockets.Listen;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Frees the ports the restored job listens on from its own TIME_WAIT connections, before criu creates any task.
 * Measured on 2 × H100 (issue 32): a restore on the same host right after the dump of an NCCL job failed with "Can't
 * bind inet socket: Address already in use" on a rank's listener; its port held a TIME_WAIT entry of a connection the
 * listener's side had closed (NCCL's start-up), which carries the listener's own reuse setting (off), so criu's
 * SO_REUSEADDR/SO_REUSEPORT do not help; the same restore worked once the entry expired (60 s after the close).
 * Only the listen ports of an image restored into criu's own network namespace are touched; a TIME_WAIT entry only
 * guards against late segments of a connection that is over.
 */
final class ListenPorts {
    private static final Logger log = LoggerFactory.getLogger(ListenPorts.class);

    private ListenPorts() {
    }

    static void free(Path imagesDir) {
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
        for (Listen l : listens) {
            List<TcpTimeWait.Entry> blocking = new ArrayList<>();
            try {
                for (int family : families(l)) {
                    for (TcpTimeWait.Entry e : TcpTimeWait.on(family, l.port())) {
                        if (wildcard(l.address()) || Arrays.equals(e.local(), l.address())) blocking.add(e);
                    }
                }
                for (TcpTimeWait.Entry e : blocking) TcpTimeWait.destroy(e);
            } catch (SyscallException | IllegalStateException e) {
                log.warn("port {}: {} TIME_WAIT connection(s) hold the port the restored job listens on and cannot be "
                        + "removed ({}); criu's bind fails with \"Address already in use\" until they expire (60 s after "
                        + "they closed)", l.port(), blocking.size(), e.getMessage());
                continue;
            }
            if (!blocking.isEmpty()) {
                log.info("port {}: removed {} TIME_WAIT connection(s) ({}) that would fail criu's bind of the restored "
                        + "listener with \"Address already in use\"", l.port(), blocking.size(), blocking.getFirst());
            }
        }
    }

    /** A wildcard IPv6 listener also takes the port for IPv4. */
    private static int[] families(Listen l) {
        if (l.family() == TcpTimeWait.AF_INET6 && wildcard(l.address())) {
            return new int[] {TcpTimeWait.AF_INET6, TcpTimeWait.AF_INET};
        }
        return new int[] {l.family()};
    }

    private static boolean wildcard(byte[] address) {
        for (byte b : address) if (b != 0) return false;
        return true;
    }
}
