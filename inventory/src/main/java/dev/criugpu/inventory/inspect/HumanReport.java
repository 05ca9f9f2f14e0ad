package dev.criugpu.inventory.inspect;

import dev.criugpu.inventory.InventoryPlugins;
import dev.criugpu.inventory.images.InventoryEntry;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** {@code criu-gpu inspect DIR}: a report for people. */
final class HumanReport {
    private HumanReport() {
    }

    static String render(Checkpoint c) {
        InventoryEntry inv = c.inventory();
        StringBuilder sb = new StringBuilder();
        sb.append("Checkpoint ").append(c.dir().toAbsolutePath().normalize()).append('\n');
        row(sb, "written by", c.writerHint());
        row(sb, "image format", "img_version " + inv.getImgVersion());
        if (inv.hasDumpCriuRunId()) row(sb, "run id", inv.getDumpCriuRunId());
        if (inv.hasLsmtype()) row(sb, "lsm", inv.getLsmtype().name());
        if (inv.hasDumpUptime()) row(sb, "dump uptime", inv.getDumpUptime() + " us");
        if (inv.hasTcpClose()) row(sb, "tcp close", String.valueOf(inv.getTcpClose()));
        if (inv.hasAllowUprobes()) row(sb, "allow uprobes", String.valueOf(inv.getAllowUprobes()));
        if (inv.hasCompress()) row(sb, "compression", inv.getCompress() == 0 ? "none" : "method " + inv.getCompress()
                + (inv.hasCompressBlockSize() ? ", blocks of " + inv.getCompressBlockSize() + " B" : ""));

        sb.append('\n');
        row(sb, "restore needs", c.requiredPlugins()
                .map(l -> l.isEmpty() ? "no plugin (no GPU state recorded)" : String.join(", ", l))
                .orElse("not recorded (older criu): every installed plugin is enabled"));
        if (c.requiredPlugins().orElse(List.of()).contains(InventoryPlugins.HOST_COPY_FORMAT)) {
            row(sb, "CUDA host copy", "kept apart from criu's pages (" + InventoryPlugins.HOST_COPY_FORMAT + "): only "
                    + "criu-java-gpu's cuda_plugin restores it; upstream's plugin and plain criu refuse (a dump with "
                    + "CRIU_CUDA_HOST_COPY=criu writes images they restore)");
        }

        sb.append("\nProcess tree (").append(c.processes().size()).append(c.processes().size() == 1 ? " process)\n"
                : " processes)\n");
        sb.append(String.format("  %-8s %-8s %-8s %-8s %-7s %s%n", "PID", "PPID", "PGID", "SID", "THREADS", "COMMAND"));
        for (Line l : treeOrder(c.processes())) {
            Checkpoint.Process p = l.process();
            sb.append(String.format("  %-8d %-8d %-8d %-8d %-7d %s%s%n", p.pid(), p.ppid(), p.pgid(), p.sid(),
                    p.threads().size(), "  ".repeat(l.depth()), p.command().orElse("?")));
        }

        sb.append("\nGPU state\n");
        for (GpuImages.Group g : c.gpu()) {
            String what = g.files().isEmpty() ? "no images" : g.files().size() + " file(s), " + bytes(g.totalBytes());
            sb.append("  ").append(g.plugin()).append(": ").append(what)
                    .append(g.listed() ? " [required]" : "").append('\n');
            for (GpuImages.File f : g.files()) {
                sb.append(String.format("    %-40s %s%n", f.name(), bytes(f.bytes())));
            }
        }
        return sb.toString();
    }

    private record Line(Checkpoint.Process process, int depth) {
    }

    /** Parents before their children, children indented; orphans (parent not in the image) at the root. */
    private static List<Line> treeOrder(List<Checkpoint.Process> processes) {
        Map<Integer, List<Checkpoint.Process>> children = new HashMap<>();
        Set<Integer> pids = new HashSet<>();
        for (Checkpoint.Process p : processes) pids.add(p.pid());
        List<Checkpoint.Process> roots = new ArrayList<>();
        for (Checkpoint.Process p : processes) {
            if (pids.contains(p.ppid()) && p.ppid() != p.pid()) {
                children.computeIfAbsent(p.ppid(), k -> new ArrayList<>()).add(p);
            } else {
                roots.add(p);
            }
        }
        List<Line> out = new ArrayList<>();
        Set<Integer> seen = new HashSet<>();
        for (Checkpoint.Process r : roots) walk(r, 0, children, out, seen);
        // A ppid cycle has no root: list what the walk missed rather than drop it.
        for (Checkpoint.Process p : processes) if (!seen.contains(p.pid())) walk(p, 0, children, out, seen);
        return out;
    }

    private static void walk(Checkpoint.Process p, int depth, Map<Integer, List<Checkpoint.Process>> children,
                             List<Line> out, Set<Integer> seen) {
        if (!seen.add(p.pid())) return;
        out.add(new Line(p, depth));
        for (Checkpoint.Process c : children.getOrDefault(p.pid(), List.of())) walk(c, depth + 1, children, out, seen);
    }

    private static void row(StringBuilder sb, String name, String value) {
        sb.append(String.format("  %-15s %s%n", name, value));
    }

    static String bytes(long n) {
        if (n < 0) return "? bytes";
        if (n < 1024) return n + " B";
        String[] units = {"KiB", "MiB", "GiB", "TiB"};
        double v = n;
        int u = -1;
        while (v >= 1024 && u < units.length - 1) {
            v /= 1024;
            u++;
        }
        return String.format("%.1f %s (%d bytes)", v, units[u], n);
    }
}
