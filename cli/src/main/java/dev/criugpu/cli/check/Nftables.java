package dev.criugpu.cli.check;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.zip.GZIPInputStream;

/**
 * Whether {@code criu --network-lock nftables} can work on this host, without the nft binary and without running
 * criu: the kernel has nf_tables, and the criu on PATH links libnftables (criu 4 takes the lock through the library,
 * not the nft command).
 *
 * <p>The kernel has nf_tables where any of these says so, read in this order: /sys/module/nf_tables (the module is
 * loaded: every loaded module has its folder there), /proc/modules, /lib/modules/RELEASE/modules.builtin (built in),
 * /lib/modules/RELEASE/modules.dep (a module: the kernel loads it when libnftables first asks for nf_tables over
 * netlink), the kernel's configuration (/proc/config.gz or /boot/config-RELEASE: CONFIG_NF_TABLES=y or m); RELEASE is
 * /proc/sys/kernel/osrelease. criu links libnftables where its ELF dynamic section has a DT_NEEDED entry
 * libnftables.so.N ({@link ElfNeeded}).
 */
final class Nftables {
    /** Whether nftables can lock here, and the words that say why (or why not), naming what was read. */
    record Verdict(boolean usable, String why) {
    }

    /** What the kernel files say: {@code has} empty where nothing readable said either way. */
    record Kernel(Optional<Boolean> has, String why) {
    }

    private Nftables() {
    }

    /** {@code host} is the root where /sys, /lib/modules and /boot are looked for ("/" but in tests). */
    static Verdict probe(ProcFs proc, Path host, String pathEnv) {
        Kernel k = kernel(proc, host);
        Optional<Path> criu = proc.findOnPath(pathEnv, "criu");
        String criuWhy;
        Optional<Boolean> criuHas;
        if (criu.isEmpty()) {
            criuHas = Optional.empty();
            criuWhy = "no criu on this PATH to look at";
        } else {
            Optional<List<String>> needed = ElfNeeded.of(criu.get());
            if (needed.isEmpty()) {
                criuHas = Optional.empty();
                criuWhy = criu.get() + " is no ELF executable whose libraries can be read";
            } else {
                Optional<String> lib = needed.get().stream().filter(n -> n.startsWith("libnftables.so")).findFirst();
                criuHas = Optional.of(lib.isPresent());
                criuWhy = lib.map(l -> criu.get() + " links " + l).orElse(criu.get() + " does not link libnftables"
                        + (needed.get().isEmpty() ? " (statically linked: no shared libraries)" : ""));
            }
        }
        boolean usable = k.has().orElse(false) && criuHas.orElse(false);
        String why = usable ? k.why() + " and " + criuWhy
                : String.join(", ", whyNot(k.has(), k.why(), criuHas, criuWhy));
        return new Verdict(usable, why);
    }

    private static List<String> whyNot(Optional<Boolean> kernel, String kernelWhy, Optional<Boolean> criu,
                                       String criuWhy) {
        List<String> parts = new ArrayList<>();
        if (!kernel.orElse(false)) parts.add(kernelWhy);
        if (!criu.orElse(false)) parts.add(criuWhy);
        return parts;
    }

    static Kernel kernel(ProcFs proc, Path host) {
        if (Files.isDirectory(host.resolve("sys/module/nf_tables"))) {
            return new Kernel(Optional.of(true), "the kernel has nf_tables (/sys/module/nf_tables: loaded)");
        }
        List<String> modules = lines(proc.root().resolve("modules"));
        if (modules.stream().anyMatch(l -> l.startsWith("nf_tables "))) {
            return new Kernel(Optional.of(true), "the kernel has nf_tables (/proc/modules: loaded)");
        }
        List<String> read = new ArrayList<>();
        boolean conclusive = false;
        String release = lines(proc.root().resolve("sys/kernel/osrelease")).stream().findFirst().orElse("").strip();
        if (!release.isEmpty()) {
            String dir = "lib/modules/" + release + "/";
            Path builtin = host.resolve(dir + "modules.builtin");
            if (Files.isReadable(builtin)) {
                read.add("/" + dir + "modules.builtin");
                if (lines(builtin).stream().anyMatch(l -> l.strip().endsWith("/nf_tables.ko"))) {
                    return new Kernel(Optional.of(true), "the kernel has nf_tables (/" + dir + "modules.builtin: built"
                            + " in)");
                }
            }
            Path dep = host.resolve(dir + "modules.dep");
            if (Files.isReadable(dep)) {
                read.add("/" + dir + "modules.dep");
                conclusive = true;
                if (lines(dep).stream().anyMatch(l -> l.matches("(.*/)?nf_tables\\.ko(\\.[a-z]+)?:.*"))) {
                    return new Kernel(Optional.of(true), "the kernel has nf_tables (/" + dir + "modules.dep: a module "
                            + "the kernel loads when criu asks for it)");
                }
            }
        }
        List<String> config = config(proc, host, release, read);
        conclusive |= !config.isEmpty();
        for (String l : config) {
            if (l.equals("CONFIG_NF_TABLES=y") || l.equals("CONFIG_NF_TABLES=m")) {
                return new Kernel(Optional.of(true), "the kernel has nf_tables (" + read.getLast() + ": " + l + ")");
            }
        }
        if (!conclusive) {
            return new Kernel(Optional.empty(), "nothing here says whether the kernel has nf_tables (no "
                    + "/sys/module/nf_tables, no nf_tables in /proc/modules, no /lib/modules/" + (release.isEmpty()
                    ? "RELEASE" : release) + "/modules.dep, no /proc/config.gz or /boot/config-" + (release.isEmpty()
                    ? "RELEASE" : release) + ")");
        }
        return new Kernel(Optional.of(false), "the kernel has no nf_tables (not loaded, not in "
                + String.join(", ", read) + ")");
    }

    /** The kernel's configuration lines, from /proc/config.gz or /boot/config-RELEASE; adds what it read to {@code read}. */
    private static List<String> config(ProcFs proc, Path host, String release, List<String> read) {
        Path gz = proc.root().resolve("config.gz");
        if (Files.isReadable(gz)) {
            try (InputStream in = new GZIPInputStream(Files.newInputStream(gz))) {
                List<String> lines = new String(in.readAllBytes(), StandardCharsets.UTF_8).lines().toList();
                read.add("/proc/config.gz");
                return lines;
            } catch (IOException e) {
                // unreadable: try /boot
            }
        }
        if (!release.isEmpty()) {
            Path boot = host.resolve("boot/config-" + release);
            List<String> lines = lines(boot);
            if (!lines.isEmpty()) {
                read.add("/boot/config-" + release);
                return lines;
            }
        }
        return List.of();
    }

    private static List<String> lines(Path p) {
        try {
            return Files.readAllLines(p, StandardCharsets.ISO_8859_1);
        } catch (IOException e) {
            return List.of();
        }
    }
}
