package dev.criugpu.cuda.cli;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;

/** Installs the test stand-in for NVIDIA's cuda-checkpoint (a shell script) into a directory. */
public final class FakeCudaCheckpoint {
    public final Path dir;
    public final Path executable;

    public FakeCudaCheckpoint(Path dir) throws IOException {
        this.dir = dir;
        this.executable = dir.resolve("cuda-checkpoint");
        try (InputStream in = FakeCudaCheckpoint.class.getResourceAsStream("/fake-cuda-checkpoint.sh")) {
            Files.write(executable, in.readAllBytes());
        }
        Files.setPosixFilePermissions(executable, PosixFilePermissions.fromString("rwxr-xr-x"));
    }

    public void setState(int pid, String state) throws IOException {
        Files.writeString(dir.resolve("state-" + pid), state + "\n");
    }

    public String state(int pid) throws IOException {
        return Files.readString(dir.resolve("state-" + pid)).strip();
    }

    public List<String> calls() throws IOException {
        Path log = dir.resolve("calls.log");
        return Files.exists(log) ? Files.readAllLines(log) : List.of();
    }
}
