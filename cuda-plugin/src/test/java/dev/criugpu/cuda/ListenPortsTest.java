package dev.criugpu.cuda;

import dev.criugpu.api.sys.TcpTimeWait;
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
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
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
        ListenPorts.free(images);

        assertEquals(List.of(), TcpTimeWait.on(TcpTimeWait.AF_INET, port));
        bindAsCriu(port).close();
    }

    @Test
    void anImageWithItsOwnNetworkNamespaceIsLeftAlone() throws Exception {
        int port = listenerPortLeftInTimeWait();
        writeFilesImage(port);
        Files.writeString(images.resolve("netns-11.img"), "");
        ListenPorts.free(images);
        assertEquals(1, TcpTimeWait.on(TcpTimeWait.AF_INET, port).size(), "criu restores that job in a new namespace");
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

    /** files.img as criu writes it for one 127.0.0.1 listener (address words read from network-order bytes). */
    private void writeFilesImage(int port) throws Exception {
        int loopback = ByteBuffer.wrap(new byte[] {127, 0, 0, 1}).order(java.nio.ByteOrder.nativeOrder()).getInt();
        FileEntry listen = FileEntry.newBuilder().setType(5).setId(7).setIsk(InetSkEntry.newBuilder().setId(7).setIno(99)
                .setFamily(TcpTimeWait.AF_INET).setType(1).setProto(6).setState(10).setSrcPort(port).setDstPort(0)
                .addSrcAddr(loopback)).build();
        FileEntry other = FileEntry.newBuilder().setType(1).setId(8).build();
        ImageIO.writeEntries(images.resolve("files.img"), ImageMagic.FILES, List.of(other, listen));
    }
}
