package dev.criugpu.api.sys;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/** What /proc says about a task's pid, for both vendors. */
public final class Tasks {
    private Tasks() {
    }

    /** The pid in the task's own (innermost) pid namespace: the last field of the NSpid line of a status text. */
    public static Optional<Integer> innermostPid(String statusText) {
        for (String line : statusText.split("\n")) {
            if (!line.startsWith("NSpid:")) continue;
            String[] f = line.substring(6).trim().split("\\s+");
            try {
                return Optional.of(Integer.parseInt(f[f.length - 1]));
            } catch (NumberFormatException e) {
                return Optional.empty();
            }
        }
        return Optional.empty();
    }

    /**
     * {@link #innermostPid(String)} of a live task, from criu's (outer) pid; {@code pid} itself when the task is gone
     * or the kernel has no NSpid line.
     */
    public static int innermostPid(int pid) {
        try {
            return innermostPid(Files.readString(Path.of("/proc/" + pid + "/status"))).orElse(pid);
        } catch (IOException e) {
            return pid;
        }
    }
}
