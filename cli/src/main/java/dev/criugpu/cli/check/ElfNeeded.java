package dev.criugpu.cli.check;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The DT_NEEDED entries of an ELF file's dynamic section (the shared libraries it links, as {@code ldd} would start
 * from), read from the file without running it or the dynamic loader: ELF header, program headers, PT_DYNAMIC, and the
 * string table DT_STRTAB points at (a virtual address, mapped back to the file through the PT_LOAD segments).
 */
final class ElfNeeded {
    static final int PT_LOAD = 1, PT_DYNAMIC = 2;
    static final long DT_NULL = 0, DT_NEEDED = 1, DT_STRTAB = 5;
    /** No ELF file has more program headers or dynamic entries than this; more is damage. */
    private static final int MAX_ENTRIES = 4096;

    private ElfNeeded() {
    }

    /**
     * The libraries {@code file} links, in the order of its dynamic section: empty list for a static executable,
     * empty Optional where it is no ELF file (a script, say) or cannot be read.
     */
    static Optional<List<String>> of(Path file) {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            return read(ch);
        } catch (IOException | RuntimeException e) {
            return Optional.empty();
        }
    }

    private record Segment(long type, long offset, long vaddr, long filesz) {
    }

    private static Optional<List<String>> read(FileChannel ch) throws IOException {
        ByteBuffer ident = bytes(ch, 0, 64);
        if (ident.limit() < 52 || ident.get(0) != 0x7f || ident.get(1) != 'E' || ident.get(2) != 'L'
                || ident.get(3) != 'F') {
            return Optional.empty();
        }
        boolean wide = ident.get(4) == 2;
        if (!wide && ident.get(4) != 1) return Optional.empty();
        ByteOrder order = ident.get(5) == 2 ? ByteOrder.BIG_ENDIAN : ByteOrder.LITTLE_ENDIAN;
        ident.order(order);
        long phoff = wide ? ident.getLong(0x20) : Integer.toUnsignedLong(ident.getInt(0x1C));
        int phentsize = Short.toUnsignedInt(ident.getShort(wide ? 0x36 : 0x2A));
        int phnum = Short.toUnsignedInt(ident.getShort(wide ? 0x38 : 0x2C));
        if (phnum > MAX_ENTRIES || phentsize < (wide ? 56 : 32)) return Optional.empty();
        List<Segment> segments = new ArrayList<>();
        ByteBuffer ph = bytes(ch, phoff, phentsize * phnum).order(order);
        for (int i = 0; i < phnum && (i + 1) * phentsize <= ph.limit(); i++) {
            int b = i * phentsize;
            segments.add(wide
                    ? new Segment(Integer.toUnsignedLong(ph.getInt(b)), ph.getLong(b + 8), ph.getLong(b + 16),
                    ph.getLong(b + 32))
                    : new Segment(Integer.toUnsignedLong(ph.getInt(b)), Integer.toUnsignedLong(ph.getInt(b + 4)),
                    Integer.toUnsignedLong(ph.getInt(b + 8)), Integer.toUnsignedLong(ph.getInt(b + 16))));
        }
        Segment dynamic = segments.stream().filter(s -> s.type() == PT_DYNAMIC).findFirst().orElse(null);
        if (dynamic == null) return Optional.of(List.of());
        int entry = wide ? 16 : 8;
        ByteBuffer dyn = bytes(ch, dynamic.offset(), (int) Math.min(dynamic.filesz(), (long) MAX_ENTRIES * entry))
                .order(order);
        List<Long> needed = new ArrayList<>();
        long strtab = -1;
        for (int b = 0; b + entry <= dyn.limit(); b += entry) {
            long tag = wide ? dyn.getLong(b) : dyn.getInt(b);
            long val = wide ? dyn.getLong(b + 8) : Integer.toUnsignedLong(dyn.getInt(b + 4));
            if (tag == DT_NULL) break;
            if (tag == DT_NEEDED) needed.add(val);
            if (tag == DT_STRTAB) strtab = val;
        }
        if (needed.isEmpty()) return Optional.of(List.of());
        if (strtab < 0) return Optional.empty();
        long strtabOffset = -1;
        for (Segment s : segments) {
            if (s.type() == PT_LOAD && strtab >= s.vaddr() && strtab < s.vaddr() + s.filesz()) {
                strtabOffset = strtab - s.vaddr() + s.offset();
                break;
            }
        }
        if (strtabOffset < 0) return Optional.empty();
        List<String> names = new ArrayList<>();
        for (long at : needed) names.add(string(ch, strtabOffset + at));
        return Optional.of(List.copyOf(names));
    }

    private static ByteBuffer bytes(FileChannel ch, long offset, int length) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(Math.max(0, length));
        while (b.hasRemaining()) {
            int n = ch.read(b, offset + b.position());
            if (n < 0) break;
        }
        return b.flip();
    }

    /** The NUL-terminated string at {@code offset} (a library name: 4 KiB at most). */
    private static String string(FileChannel ch, long offset) throws IOException {
        ByteBuffer b = bytes(ch, offset, 4096);
        int end = 0;
        while (end < b.limit() && b.get(end) != 0) end++;
        return new String(b.array(), 0, end, StandardCharsets.UTF_8);
    }
}
