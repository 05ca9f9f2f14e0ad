package dev.criugpu.cuda.inherited;

import dev.criugpu.api.DeviceFile;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;

/** One stat(2) of a path (for /proc/PID/fd/N: of the file the fd refers to, without opening it). */
final class DeviceFiles {
    private DeviceFiles() {
    }

    static Optional<DeviceFile> stat(Path p) {
        try {
            Map<String, Object> a = Files.readAttributes(p, "unix:dev,ino,mode,rdev");
            return Optional.of(new DeviceFile((Long) a.get("dev"), (Long) a.get("ino"), (Integer) a.get("mode"),
                    (Long) a.get("rdev")));
        } catch (IOException | UnsupportedOperationException | ClassCastException e) {
            return Optional.empty();
        }
    }
}
