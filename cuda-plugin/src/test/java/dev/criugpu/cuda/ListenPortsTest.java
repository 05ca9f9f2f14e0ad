package dev.criugpu.cuda;

import dev.criugpu.api.sys.TcpTimeWait;
import dev.criugpu.cuda.config.CriuCommandLine;
import dev.criugpu.inventory.ImageIO;
import dev.criugpu.inventory.ImageMagic;
import dev.criugpu.inventory.images.FileEntry;
import dev.criugpu.inventory.images.InetSkEntry;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.BindException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * A listener's port held by a TIME_WAIT connection its own side closed, as an NCCL rank's after its start-up: a bind
 * the way criu restores a listener (SO_REUSEADDR and SO_REUSEPORT) fails until the entry expires; the restore's
 * port check finds the image's listener in files.img and removes the entry, and the bind works.
 */
class ListenPortsTest {
    @TempDir
    Path images;

    @Test
    void aTimeWaitEntryOnTheImagesListenPortIsRemovedSoCriusBindWorks() throws Exception {
        Assumptions.assumeTrue(hasNetAdmin(), "NOT RUN: removing a TIME_WAIT entry (sock_diag SOCK_DESTROY) needs "
                + "CAP_NET_ADMIN, which this test process lacks");
        int port = listenerPortLeftInTimeWait();
        String hex = String.format(":%04X ", port);
        assertEquals(1, TcpTimeWait.on(TcpTimeWait.AF_INET, port).size(), "the listener's side closed first: "
                + Files.readAllLines(Path.of("/proc/net/tcp")).stream().filter(l -> l.contains(hex)).toList());
        assertThrows(BindException.class, () -> bindAsCriu(port).close(), "a TIME_WAIT entry with reuse off blocks it");

        writeFilesImage(port);
        ListenPorts.free(images, CriuCommandLine.UNKNOWN);

        assertEquals(List.of(), TcpTimeWait.on(TcpTimeWait.AF_INET, port));
        bindAsCriu(port).close();
    }

    /**
     * Another user's client got the port as its ephemeral one once the dump had freed it, and closed first: its
     * TIME_WAIT entry began after the image was written, so it is not the job's and stays; the same entry with an
     * image written after it goes.
     */
    @Test
    void aClientsTimeWaitEntryThatBeganAfterTheImageWasWrittenStays() throws Exception {
        Assumptions.assumeTrue(hasNetAdmin(), "NOT RUN: needs CAP_NET_ADMIN (the removal it must not do would work)");
        int port = clientPortLeftInTimeWait();
        writeFilesImage(port, WILDCARD);
        Path files = images.resolve("files.img");
        Files.setLastModifiedTime(files, FileTime.fromMillis(System.currentTimeMillis() - 10_000));

        ListenPorts.free(images, CriuCommandLine.UNKNOWN);
        assertEquals(1, TcpTimeWait.on(TcpTimeWait.AF_INET, port).size(), "a client's entry, 10 s younger than the image");

        Files.setLastModifiedTime(files, FileTime.fromMillis(System.currentTimeMillis()));
        ListenPorts.free(images, CriuCommandLine.UNKNOWN);
        assertEquals(List.of(), TcpTimeWait.on(TcpTimeWait.AF_INET, port), "the same entry, older than the image");
    }

    @Test
    void whenTheImageWasWrittenIsTheEarlierOfItsTimes() throws Exception {
        Path f = Files.writeString(images.resolve("files.img"), "");
        long changed = Files.getLastModifiedTime(f).toMillis();
        Files.setLastModifiedTime(f, FileTime.fromMillis(changed - 5000));
        assertEquals(changed - 5000, ListenPorts.writtenMs(f), "a copy that kept the dump's mtime");
        Files.setLastModifiedTime(f, FileTime.fromMillis(changed + 3_600_000));
        assertTrue(ListenPorts.writtenMs(f) <= System.currentTimeMillis(), "an mtime set in the future: its ctime");
    }

    @Test
    void anImageWithItsOwnNetworkNamespaceIsLeftAlone() throws Exception {
        int port = listenerPortLeftInTimeWait();
        writeFilesImage(port);
        Files.writeString(images.resolve("netns-11.img"), "");
        ListenPorts.free(images, CriuCommandLine.UNKNOWN);
        assertEquals(1, TcpTimeWait.on(TcpTimeWait.AF_INET, port).size(), "criu restores that job in a new namespace");
    }

    @Test
    void underRpcTheNamespaceIsUnknownAndNothingIsTouched() throws Exception {
        int port = listenerPortLeftInTimeWait();
        writeFilesImage(port, WILDCARD);
        ListenPorts.free(images, CriuCommandLine.parse(List.of("criu", "swrk", "3")));
        assertEquals(1, TcpTimeWait.on(TcpTimeWait.AF_INET, port).size());
    }

    @Test
    void aPortAnotherSocketListensOnNowKeepsItsTimeWaitEntries() throws Exception {
        Assumptions.assumeTrue(hasNetAdmin(), "NOT RUN: needs CAP_NET_ADMIN (the removal it must not do would work)");
        int port = listenerPortLeftInTimeWait();
        // 127.0.0.2 is on lo as well; a listener there does not collide with the entry on 127.0.0.1, but it does with
        // the image's wildcard listener, whose bind criu cannot carry out here whatever this test removes
        try (ServerSocketChannel other = ServerSocketChannel.open(java.net.StandardProtocolFamily.INET)) {
            other.bind(new InetSocketAddress(InetAddress.getByAddress(new byte[] {127, 0, 0, 2}), port));
            writeFilesImage(port, WILDCARD);
            ListenPorts.free(images, CriuCommandLine.UNKNOWN);
            assertEquals(1, TcpTimeWait.on(TcpTimeWait.AF_INET, port).size(), "another listener's port");
        }
    }

    @Test
    void withJoinNsTheEntriesOfThatNamespaceAreTheOnesLookedAt() throws Exception {
        Assumptions.assumeTrue(hasNetAdmin(), "NOT RUN: removing a TIME_WAIT entry needs CAP_NET_ADMIN");
        int port = listenerPortLeftInTimeWait();
        writeFilesImage(port, LOOPBACK);
        Process other = new ProcessBuilder("unshare", "--net", "cat").redirectErrorStream(true).start();
        try {
            Path otherNs = Path.of("/proc", Long.toString(other.pid()), "ns", "net");
            Assumptions.assumeTrue(awaitOtherNamespace(other, otherNs), "NOT RUN: unshare --net did not make a network "
                    + "namespace here (util-linux missing or no CAP_SYS_ADMIN)");
            ListenPorts.free(images, CriuCommandLine.parse(List.of("criu", "restore", "--join-ns", "net:" + other.pid())));
            assertEquals(1, TcpTimeWait.on(TcpTimeWait.AF_INET, port).size(), "this namespace's entry is not that one's");
        } finally {
            other.destroy();
            other.waitFor();
        }
        ListenPorts.free(images, CriuCommandLine.parse(List.of("criu", "restore", "-J", "net:/proc/self/ns/net")));
        assertEquals(List.of(), TcpTimeWait.on(TcpTimeWait.AF_INET, port), "joined by path: this namespace");
    }

    @Test
    void whichBoundAddressesHoldAPortAgainstEachOther() {
        byte[] any4 = new byte[4], lo4 = {127, 0, 0, 1}, lo4b = {127, 0, 0, 2}, any6 = new byte[16], lo6 = new byte[16];
        lo6[15] = 1;
        int v4 = TcpTimeWait.AF_INET, v6 = TcpTimeWait.AF_INET6;
        assertTrue(ListenPorts.overlaps(v4, lo4, v4, lo4));
        assertFalse(ListenPorts.overlaps(v4, lo4, v4, lo4b));
        assertTrue(ListenPorts.overlaps(v4, any4, v4, lo4b));
        assertTrue(ListenPorts.overlaps(v4, lo4, v4, any4));
        assertTrue(ListenPorts.overlaps(v6, any6, v4, lo4), "an IPv6 wildcard takes IPv4 too");
        assertTrue(ListenPorts.overlaps(v4, lo4, v6, any6), "and is taken by one");
        assertFalse(ListenPorts.overlaps(v6, lo6, v4, lo4));
        assertFalse(ListenPorts.overlaps(v4, lo4, v6, lo6));
    }

    /** Polls (bounded: 10 s) until the process runs in a network namespace other than this one's. */
    private static boolean awaitOtherNamespace(Process p, Path ns) throws Exception {
        String own = Files.readSymbolicLink(Path.of("/proc/self/ns/net")).toString();
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (System.nanoTime() < deadline && p.isAlive()) {
            try {
                if (!Files.readSymbolicLink(ns).toString().equals(own)) return true;
            } catch (IOException e) {
                // not there yet
            }
            Thread.sleep(5);
        }
        return false;
    }

    /** Whether CAP_NET_ADMIN (bit 12) is in this process's effective capabilities. */
    private static boolean hasNetAdmin() throws IOException {
        return Files.readAllLines(Path.of("/proc/self/status")).stream().filter(l -> l.startsWith("CapEff:"))
                .map(l -> (Long.parseUnsignedLong(l.substring(7).strip(), 16) >>> 12 & 1) == 1).findFirst().orElse(false);
    }

    /** A listener without SO_REUSEADDR (as NCCL's), a connection it accepts and closes first, then the listener closed. */
    private static int listenerPortLeftInTimeWait() throws IOException {
        try (ServerSocketChannel listener = ServerSocketChannel.open(java.net.StandardProtocolFamily.INET)) {
            listener.setOption(StandardSocketOptions.SO_REUSEADDR, false);
            listener.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            int port = ((InetSocketAddress) listener.getLocalAddress()).getPort();
            try (SocketChannel client = SocketChannel.open(java.net.StandardProtocolFamily.INET)) {
                client.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
                listener.accept().close();
                assertEquals(-1, client.read(ByteBuffer.allocate(1)), "the server's FIN");
            }
            return port;
        }
    }

    /**
     * A client's connection on loopback that the client closes first: its ephemeral port is left in TIME_WAIT (polled
     * for, 10 s at most: the server's FIN moves it there).
     */
    private static int clientPortLeftInTimeWait() throws Exception {
        int port;
        try (ServerSocketChannel server = ServerSocketChannel.open(java.net.StandardProtocolFamily.INET)) {
            server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            SocketChannel client = SocketChannel.open(java.net.StandardProtocolFamily.INET);
            client.connect(server.getLocalAddress());
            port = ((InetSocketAddress) client.getLocalAddress()).getPort();
            try (SocketChannel accepted = server.accept()) {
                client.close();
                assertEquals(-1, accepted.read(ByteBuffer.allocate(1)), "the client's FIN");
            }
        }
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (TcpTimeWait.on(TcpTimeWait.AF_INET, port).isEmpty() && System.nanoTime() < deadline) Thread.sleep(5);
        assertEquals(1, TcpTimeWait.on(TcpTimeWait.AF_INET, port).size(), "the client's side closed first");
        return port;
    }

    private static ServerSocketChannel bindAsCriu(int port) throws IOException {
        ServerSocketChannel s = ServerSocketChannel.open(java.net.StandardProtocolFamily.INET);
        s.setOption(StandardSocketOptions.SO_REUSEADDR, true);
        s.setOption(StandardSocketOptions.SO_REUSEPORT, true);
        try {
            s.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
        } catch (IOException e) {
            s.close();
            throw e;
        }
        return s;
    }

    private static final byte[] LOOPBACK = {127, 0, 0, 1};
    private static final byte[] WILDCARD = {0, 0, 0, 0};

    private void writeFilesImage(int port) throws Exception {
        writeFilesImage(port, LOOPBACK);
    }

    /** files.img as criu writes it for one IPv4 listener (address words read from network-order bytes). */
    private void writeFilesImage(int port, byte[] address) throws Exception {
        int word = ByteBuffer.wrap(address).order(java.nio.ByteOrder.nativeOrder()).getInt();
        FileEntry listen = FileEntry.newBuilder().setType(5).setId(7).setIsk(InetSkEntry.newBuilder().setId(7).setIno(99)
                .setFamily(TcpTimeWait.AF_INET).setType(1).setProto(6).setState(10).setSrcPort(port).setDstPort(0)
                .addSrcAddr(word)).build();
        FileEntry other = FileEntry.newBuilder().setType(1).setId(8).build();
        ImageIO.writeEntries(images.resolve("files.img"), ImageMagic.FILES, List.of(other, listen));
    }
}
