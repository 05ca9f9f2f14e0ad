package dev.criugpu.inventory;

import dev.criugpu.inventory.images.FileEntry;
import dev.criugpu.inventory.images.InetSkEntry;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/** The TCP sockets of an image that criu restores listening (files.img), by family, address and port. */
public final class ListenSockets {
    private static final int IPPROTO_TCP = 6;
    private static final int TCP_LISTEN = 10;

    private ListenSockets() {
    }

    /** One listening socket: AF_INET or AF_INET6, its address (4 or 16 bytes, network order) and port. */
    public record Listen(int family, byte[] address, int port) {
    }

    /** Empty when the image has no files.img (an older criu's layout) or no listening TCP socket. */
    public static List<Listen> of(Path imagesDir) throws ImageException {
        Path files = imagesDir.resolve("files.img");
        if (!Files.exists(files)) return List.of();
        Set<List<Object>> seen = new LinkedHashSet<>();
        return ImageIO.readEntries(files, ImageMagic.FILES, FileEntry.parser()).stream()
                .filter(FileEntry::hasIsk).map(FileEntry::getIsk)
                .filter(s -> s.getProto() == IPPROTO_TCP && s.getState() == TCP_LISTEN)
                .map(s -> new Listen(s.getFamily(), address(s), s.getSrcPort()))
                .filter(l -> seen.add(List.of(l.family(), ByteBuffer.wrap(l.address()), l.port())))
                .toList();
    }

    /** CRIU keeps the address as 32-bit words read from network-order bytes on this host. */
    private static byte[] address(InetSkEntry s) {
        ByteBuffer b = ByteBuffer.allocate(4 * s.getSrcAddrCount()).order(ByteOrder.nativeOrder());
        s.getSrcAddrList().forEach(b::putInt);
        return b.array();
    }
}
