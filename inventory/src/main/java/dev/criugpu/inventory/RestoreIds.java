package dev.criugpu.inventory;

import com.google.protobuf.CodedInputStream;
import com.google.protobuf.WireFormat;
import dev.criugpu.api.CriuException;
import dev.criugpu.api.Errno;
import dev.criugpu.api.RestoredTaskIds;
import dev.criugpu.inventory.images.PstreeEntry;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;

/** The process, thread, session and group ids a restore will create, from pstree.img. */
public final class RestoreIds {
    private RestoreIds() {
    }

    public static Set<Integer> of(Path imagesDir) throws ImageException {
        Set<Integer> ids = new TreeSet<>();
        Optional<List<PstreeEntry>> kept = PstreeImage.takeKept(imagesDir);
        if (kept.isPresent()) {
            for (PstreeEntry e : kept.get()) {
                add(ids, e.getPid());
                e.getThreadsList().forEach(t -> add(ids, t));
                add(ids, e.getPgid());
                add(ids, e.getSid());
            }
            return ids;
        }
        // read from the wire: the generated PstreeEntry's first use costs ~60 ms (its descriptors and criu's options
        // proto), measured, and the restore probe reads nothing else of the image
        Path file = imagesDir.resolve("pstree.img");
        try (ImageReader reader = ImageReader.open(file, ImageIO.PSTREE_MAGIC)) {
            for (byte[] body; (body = reader.nextRaw()) != null; ) idsOf(body, ids);
        } catch (ImageException e) {
            throw e;
        } catch (IOException e) { // the bytes of an entry are no valid pstree_entry
            throw new ImageException(file, "not a valid pstree entry: " + e.getMessage());
        }
        return ids;
    }

    /** pid (1), pgid (3), sid (4) and threads (5, packed or not) of one pstree_entry; criu makes a helper task for a
     * session or group leader that is not in the tree, so those ids are taken too. */
    private static void idsOf(byte[] body, Set<Integer> ids) throws IOException {
        CodedInputStream in = CodedInputStream.newInstance(body);
        for (int tag; (tag = in.readTag()) != 0; ) {
            int field = WireFormat.getTagFieldNumber(tag);
            boolean id = field == 1 || field == 3 || field == 4 || field == 5;
            if (id && WireFormat.getTagWireType(tag) == WireFormat.WIRETYPE_VARINT) {
                add(ids, in.readUInt32());
            } else if (field == 5 && WireFormat.getTagWireType(tag) == WireFormat.WIRETYPE_LENGTH_DELIMITED) {
                int limit = in.pushLimit(in.readRawVarint32());
                while (!in.isAtEnd()) add(ids, in.readUInt32());
                in.popLimit(limit);
            } else if (!in.skipField(tag)) {
                break;
            }
        }
    }

    private static void add(Set<Integer> ids, int id) {
        if (id > 0) ids.add(id);
    }

    /** What the bootstrap checks the JVM's threads against on restore (found through the ServiceLoader). */
    public static final class Provider implements RestoredTaskIds {
        @Override
        public Set<Integer> of(Path imagesDir) {
            try {
                return RestoreIds.of(imagesDir);
            } catch (ImageException e) {
                throw new CriuException(Errno.EIO, e.getMessage());
            }
        }
    }
}
