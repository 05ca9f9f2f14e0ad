package dev.criugpu.amdgpu.restore;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** A task's pid as the task itself sees it (innermost pid namespace), from criu's (outer) pid. */
final class TaskPid {
    private TaskPid() {
    }

    /** The last field of {@code NSpid:} in {@code /proc/<pid>/status}; {@code pid} when there is none. */
    static int innermost(int pid) {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/" + pid + "/status"))) {
                if (!line.startsWith("NSpid:")) continue;
                String[] f = line.substring(6).trim().split("\\s+");
                return Integer.parseInt(f[f.length - 1]);
            }
        } catch (IOException | NumberFormatException e) {
            // a task that is gone or a kernel without NSpid: its own pid is the best answer
        }
        return pid;
    }
}
