package dev.criugpu.amdgpu.topology;

import dev.criugpu.amdgpu.bindings.kfd_sysfs_h;
import dev.criugpu.api.CriuException;
import dev.criugpu.api.Errno;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;

/**
 * Reads the KFD topology from sysfs ({@code /sys/class/kfd/kfd/topology}, or another root for tests). Nodes keep
 * directory order, as upstream does; nodes that cannot be read (hidden by a cgroup) or have no valid gpu_id are
 * skipped; a malformed properties line or a GPU without VRAM fails the whole parse with a message naming the file.
 */
public final class SysfsTopologyReader {
    public static final Path DEFAULT_ROOT = Path.of("/sys/class/kfd/kfd/topology");

    private final Path root;

    public SysfsTopologyReader(Path root) {
        this.root = root;
    }

    public Topology read(String label) {
        Path nodesDir = root.resolve("nodes");
        List<KfdNode> nodes = new ArrayList<>();
        try (DirectoryStream<Path> dir = Files.newDirectoryStream(nodesDir)) {
            for (Path nodeDir : dir) {
                Integer nodeId = parseIndex(nodeDir.getFileName().toString());
                if (nodeId == null || !Files.isDirectory(nodeDir)) continue;
                KfdNode n = readNode(nodeId, nodeDir);
                if (n != null) nodes.add(n);
            }
        } catch (IOException e) {
            throw new CriuException(Errno.ENOENT, "cannot list KFD topology " + nodesDir + ": " + e.getMessage(), e);
        }
        return new Topology(label, nodes);
    }

    private static Integer parseIndex(String name) {
        if (name.isEmpty() || !name.chars().allMatch(Character::isDigit) || name.length() > 9) return null;
        return Integer.parseInt(name);
    }

    private KfdNode readNode(int nodeId, Path dir) {
        Integer gpuId = readGpuId(dir.resolve("gpu_id"));
        if (gpuId == null) return null;
        boolean cpu = gpuId == 0;
        Map<NodeProperty, Long> props = readProperties(dir.resolve("properties"), cpu);
        if (!cpu) readVram(dir.resolve("mem_banks"), props);
        return new KfdNode(nodeId, gpuId, cpu, props, readLinks(dir.resolve("io_links")));
    }

    /** Decimal gpu_id; null (node skipped) when missing or not a number, as upstream does. */
    private static Integer readGpuId(Path file) {
        try {
            String s = Files.readString(file, StandardCharsets.US_ASCII).trim();
            if (s.isEmpty() || s.length() > 6 || !s.chars().allMatch(Character::isDigit)) return null;
            return Integer.parseInt(s);
        } catch (IOException e) {
            return null;
        }
    }

    private static Map<NodeProperty, Long> readProperties(Path file, boolean cpu) {
        Map<NodeProperty, Long> props = new EnumMap<>(NodeProperty.class);
        for (String[] kv : readKeyValues(file)) {
            long v = parseValue(file, kv);
            NodeProperty p = NodeProperty.byKey(kv[0]);
            if (p == null || !p.inPropertiesFile()) continue;
            props.put(p, v);
            // A CPU node needs nothing after its core count (upstream stops reading there).
            if (cpu && p == NodeProperty.CPU_CORES_COUNT && v >= 1) break;
        }
        return props;
    }

    /** The first FB_PUBLIC or FB_PRIVATE bank gives vram_public and vram_size. */
    private static void readVram(Path banksDir, Map<NodeProperty, Long> props) {
        for (Path bank : sortedIndexDirs(banksDir)) {
            Path file = bank.resolve("properties");
            long heap = -1;
            long size = 0;
            for (String[] kv : readKeyValues(file)) {
                if (kv[0].equals("heap_type")) heap = parseValue(file, kv);
                else if (kv[0].equals("size_in_bytes")) size = parseValue(file, kv);
            }
            if (heap == kfd_sysfs_h.HSA_MEM_HEAP_TYPE_FB_PUBLIC() || heap == kfd_sysfs_h.HSA_MEM_HEAP_TYPE_FB_PRIVATE()) {
                if (size == 0) throw new CriuException(Errno.EINVAL, file + ": VRAM bank has size 0");
                props.put(NodeProperty.VRAM_PUBLIC, heap == kfd_sysfs_h.HSA_MEM_HEAP_TYPE_FB_PUBLIC() ? 1L : 0L);
                props.put(NodeProperty.VRAM_SIZE, size);
                return;
            }
        }
        throw new CriuException(Errno.EINVAL, banksDir + ": GPU node has no VRAM (FB_PUBLIC or FB_PRIVATE) bank");
    }

    private static List<IoLink> readLinks(Path linksDir) {
        List<IoLink> links = new ArrayList<>();
        for (Path link : sortedIndexDirs(linksDir)) {
            Path file = link.resolve("properties");
            long type = -1;
            long to = -1;
            for (String[] kv : readKeyValues(file)) {
                if (kv[0].equals("type")) type = parseValue(file, kv);
                else if (kv[0].equals("node_to")) to = parseValue(file, kv);
            }
            if (type < 0 || to < 0) throw new CriuException(Errno.EINVAL, file + ": io link without type or node_to");
            if (IoLink.kept((int) type)) links.add(new IoLink((int) type, (int) to));
        }
        return links;
    }

    /** Numbered sub-directories in numeric order (link and bank order is by index, unlike nodes). */
    private static List<Path> sortedIndexDirs(Path dir) {
        if (!Files.isDirectory(dir)) return List.of();
        List<Path> out = new ArrayList<>();
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir)) {
            for (Path p : ds) {
                if (parseIndex(p.getFileName().toString()) != null) out.add(p);
            }
        } catch (IOException e) {
            throw new CriuException(Errno.EIO, "cannot list " + dir + ": " + e.getMessage(), e);
        }
        out.sort((a, b) -> Integer.compare(parseIndex(a.getFileName().toString()), parseIndex(b.getFileName().toString())));
        return out;
    }

    private static List<String[]> readKeyValues(Path file) {
        List<String> lines;
        try {
            lines = Files.readAllLines(file, StandardCharsets.US_ASCII);
        } catch (IOException e) {
            throw new CriuException(Errno.EIO, "cannot read " + file + ": " + e.getMessage(), e);
        }
        List<String[]> out = new ArrayList<>();
        int no = 0;
        for (String line : lines) {
            no++;
            String t = line.trim();
            if (t.isEmpty()) continue;
            String[] kv = t.split("\\s+");
            if (kv.length != 2) {
                throw new CriuException(Errno.EINVAL, file + " line " + no + ": '" + t + "' is not 'name value'");
            }
            out.add(kv);
        }
        return out;
    }

    private static long parseValue(Path file, String[] kv) {
        try {
            return Long.parseUnsignedLong(kv[1]);
        } catch (NumberFormatException e) {
            throw new CriuException(Errno.EINVAL, file + ": value of " + kv[0] + " is not a number: " + kv[1]);
        }
    }
}
