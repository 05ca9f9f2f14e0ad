package dev.criugpu.cuda.inherited;

import dev.criugpu.api.DeviceFile;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

/**
 * The character-device majors of NVIDIA's driver: 195 (/dev/nvidia&lt;N&gt;, /dev/nvidiactl, /dev/nvidia-modeset) and
 * the dynamic ones, which the kernel lists in /proc/devices under names starting with {@code nvidia}
 * (nvidia-uvm, nvidia-caps, nvidia-nvswitch, ...). A path alone proves nothing: any node can be named /dev/nvidia0.
 */
public record NvidiaMajors(Set<Integer> majors) {
    public static final Path PROC_DEVICES = Path.of("/proc/devices");
    static final int FIXED = 195;

    public NvidiaMajors {
        majors = Set.copyOf(majors);
    }

    /** From {@code procDevices} (a /proc/devices); 195 alone when it cannot be read (no module loaded: no dynamic major). */
    public static NvidiaMajors read(Path procDevices) {
        try {
            return parse(Files.readAllLines(procDevices));
        } catch (IOException e) {
            return new NvidiaMajors(Set.of(FIXED));
        }
    }

    static NvidiaMajors parse(List<String> lines) {
        Set<Integer> majors = new TreeSet<>(Set.of(FIXED));
        boolean character = false;
        for (String line : lines) {
            String l = line.trim();
            if (l.endsWith("devices:")) {
                character = l.equals("Character devices:");
                continue;
            }
            String[] f = l.split("\\s+", 2);
            if (!character || f.length < 2 || !f[1].startsWith("nvidia")) continue;
            try {
                majors.add(Integer.parseInt(f[0]));
            } catch (NumberFormatException e) {
                // not a "major name" line
            }
        }
        return new NvidiaMajors(majors);
    }

    /** Whether {@code f} is a character device of NVIDIA's driver. */
    public boolean isNvidia(DeviceFile f) {
        return f.isCharDevice() && majors.contains(f.rdevMajor());
    }
}
