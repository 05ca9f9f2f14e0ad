package dev.criugpu.it;

import dev.criugpu.api.Hook;
import dev.criugpu.api.bindings.cr_plugin_desc_t;
import dev.criugpu.api.bindings.criu_gpu_services;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 2.6: the Java layouts match the C declarations they mirror. A C probe, generated from the Java layouts'
 * field names and compiled with the host's gcc against the real headers (criu-plugin.h copied out of each criu
 * image; native/src/criu_gpu_shim.h), prints sizeof/offsetof of every field; the test compares them with the
 * Java layouts. It also checks the hook ids against the header's enum and the header's hook count against the
 * size of the criu binary's cr_plugin_ctl table (the shim reads the hook count from it at load time).
 */
@ExtendWith(DockerRequired.class)
class LayoutConformanceIT {
    private static final Pattern HOOK_ENUM = Pattern.compile("CR_PLUGIN_HOOK__(\\w+)\\s*=\\s*\\d+");
    private static final Pattern PROBE_LINE = Pattern.compile("(\\S+) (-?\\d+)");

    @ParameterizedTest
    @EnumSource(CriuImage.class)
    void pluginDescriptorAndHookIdsMatchInstalledCriu(CriuImage image) {
        Path work = workDir("layout-" + image.criuVersion);
        Path include = work.resolve("include");
        Path criuBinary = work.resolve("criu");
        try (CriuContainer criu = CriuContainer.start(image)) {
            copyOut(criu, "/usr/include/criu/criu-plugin.h", include.resolve("criu/criu-plugin.h"));
            copyOut(criu, "/usr/sbin/criu", criuBinary);
        }
        String header = read(include.resolve("criu/criu-plugin.h"));
        List<String> hookNames = new ArrayList<>();
        for (Matcher m = HOOK_ENUM.matcher(header); m.find(); ) hookNames.add(m.group(1));
        assertTrue(hookNames.size() >= 12, "found only " + hookNames + " in " + image.tag + "'s criu-plugin.h");

        StringBuilder probe = new StringBuilder("#include <stddef.h>\n#include <stdio.h>\n#include <criu/criu-plugin.h>\n")
                .append("int main(void) {\n")
                .append("    printf(\"CR_PLUGIN_HOOK__MAX %d\\n\", (int)CR_PLUGIN_HOOK__MAX);\n");
        for (String name : hookNames) {
            probe.append("    printf(\"hook.").append(name).append(" %d\\n\", (int)CR_PLUGIN_HOOK__").append(name).append(");\n");
        }
        GroupLayout javaDesc = cr_plugin_desc_t.layout(hookNames.size());
        appendStructProbe(probe, "cr_plugin_desc_t", javaDesc);
        probe.append("    return 0;\n}\n");
        Map<String, Long> c = runProbe(work, "desc_probe", probe.toString(), List.of("-I" + include));

        int max = c.get("CR_PLUGIN_HOOK__MAX").intValue();
        assertEquals(hookNames.size(), max, "hook enum entries vs CR_PLUGIN_HOOK__MAX");
        for (Hook h : Hook.values()) {
            if (hookNames.contains(h.name())) {
                assertEquals(h.id, c.get("hook." + h.name()).intValue(), "criu's id of dev.criugpu.api.Hook." + h);
            } else {
                // a hook of a newer criu (criu-dev's DUMP_DEVICES_LATE): beyond this criu's table, so never registered
                assertFalse(h.knownTo(max), h + " (id " + h.id + ") is not in " + image.tag + "'s criu-plugin.h, "
                        + "whose " + max + " hooks cover its id");
            }
        }
        assertStructMatches(cr_plugin_desc_t.layout(max), "cr_plugin_desc_t", c);

        // The shim derives criu's hook count from the size of the exported cr_plugin_ctl: one list head per hook
        // plus one.
        CommandResult nm = HostCommand.run(work, List.of("nm", "-D", "-S", criuBinary.toString())).orFail();
        long ctlSize = nm.stdout().lines().filter(l -> l.endsWith(" cr_plugin_ctl")).findFirst()
                .map(l -> Long.parseLong(l.split("\\s+")[1], 16))
                .orElseThrow(() -> new AssertionError(image.tag + "'s criu exports no cr_plugin_ctl"));
        assertEquals(max, ctlSize / 16 - 1, "hook count from cr_plugin_ctl (" + ctlSize + " bytes) in " + image.tag);
    }

    @Test
    void servicesStructMatchesShimHeader() {
        Path nativeSrc = Path.of(System.getProperty("criugpu.native.src.dir", "../native/src")).toAbsolutePath();
        Path shimHeader = nativeSrc.resolve("criu_gpu_shim.h");
        assertTrue(Files.isRegularFile(shimHeader), shimHeader + " does not exist");
        Path work = workDir("layout-services");
        Path include = work.resolve("include");
        try (CriuContainer criu = CriuContainer.start(CriuImage.CRIU_4_2_1)) {
            copyOut(criu, "/usr/include/criu/criu-plugin.h", include.resolve("criu/criu-plugin.h"));
        }
        Path jdk = Path.of(System.getProperty("java.home"));
        StringBuilder probe = new StringBuilder("#include <stddef.h>\n#include <stdio.h>\n#include \"criu_gpu_shim.h\"\n")
                .append("int main(void) {\n");
        appendStructProbe(probe, "struct criu_gpu_services", criu_gpu_services.layout());
        probe.append("    return 0;\n}\n");
        Map<String, Long> c = runProbe(work, "services_probe", probe.toString(), List.of(
                "-I" + nativeSrc, "-I" + include, "-I" + include.resolve("criu"),
                "-I" + jdk.resolve("include"), "-I" + jdk.resolve("include/linux")));
        assertStructMatches(criu_gpu_services.layout(), "struct criu_gpu_services", c);
    }

    /** Probe lines: "size N", then per field "offset.F N" and "size.F N". */
    private static void appendStructProbe(StringBuilder probe, String cType, GroupLayout layout) {
        probe.append("    printf(\"size %zu\\n\", sizeof(").append(cType).append("));\n");
        for (MemoryLayout member : layout.memberLayouts()) {
            if (member.name().isEmpty()) continue;
            String f = member.name().get();
            probe.append("    printf(\"offset.").append(f).append(" %zu\\n\", offsetof(").append(cType).append(", ")
                    .append(f).append("));\n");
            probe.append("    printf(\"size.").append(f).append(" %zu\\n\", sizeof(((").append(cType).append(" *)0)->")
                    .append(f).append("));\n");
        }
    }

    private static void assertStructMatches(GroupLayout java, String cType, Map<String, Long> c) {
        assertEquals(c.get("size"), java.byteSize(), "sizeof(" + cType + ")");
        long offset = 0;
        for (MemoryLayout member : java.memberLayouts()) {
            if (member.name().isEmpty()) {
                offset += member.byteSize();
                continue;
            }
            String f = member.name().get();
            assertEquals(c.get("offset." + f), offset, "offsetof(" + cType + ", " + f + ")");
            assertEquals(c.get("size." + f), member.byteSize(), "sizeof(" + cType + "." + f + ")");
            offset += member.byteSize();
        }
    }

    private static Map<String, Long> runProbe(Path work, String name, String source, List<String> includes) {
        Path c = work.resolve(name + ".c");
        Path exe = work.resolve(name);
        write(c, source);
        List<String> gcc = new ArrayList<>(List.of("gcc", "-std=gnu11", "-Wall", "-o", exe.toString()));
        gcc.addAll(includes);
        gcc.add(c.toString());
        HostCommand.run(work, gcc).orFail();
        CommandResult out = HostCommand.run(work, List.of(exe.toString())).orFail();
        Map<String, Long> values = new LinkedHashMap<>();
        for (String line : out.stdout().lines().toList()) {
            Matcher m = PROBE_LINE.matcher(line);
            if (!m.matches()) throw new AssertionError(name + " printed an unexpected line: " + line);
            values.put(m.group(1), Long.parseLong(m.group(2)));
        }
        return values;
    }

    private static void copyOut(CriuContainer criu, String from, Path to) {
        try {
            Files.createDirectories(to.getParent());
            Files.write(to, criu.readBytes(from));
            if (from.endsWith("/criu")) to.toFile().setExecutable(true);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static Path workDir(String name) {
        try {
            return Files.createDirectories(Path.of(System.getProperty("criugpu.work.dir", "target/it-work"), name))
                    .toAbsolutePath();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static String read(Path p) {
        try {
            return Files.readString(p);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static void write(Path p, String s) {
        try {
            Files.writeString(p, s);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
