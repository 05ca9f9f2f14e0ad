package dev.criugpu.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** doctor names what criu, as root, would refuse to load from a plugin dir, as the shim would. */
class DoctorTest {
    @TempDir
    Path tmp;

    @Test
    void aGroupWritableJarNamedInTheJvmOptionsIsAProblem() throws Exception {
        Files.setPosixFilePermissions(tmp, PosixFilePermissions.fromString("rwxr-xr-x"));
        Path lib = Files.createDirectories(tmp.resolve("java/lib"));
        Path jar = Files.write(lib.resolve("plugin-api.jar"), new byte[]{1});
        Files.writeString(tmp.resolve("java/criu-gpu.cfg"), "java.home=/x\n");
        Files.writeString(tmp.resolve("java/jvm.options"), "# comment\n-Dcriu.gpu.java.home="
                + System.getProperty("java.home") + "\n-Djava.class.path=" + jar + "\n-Xrs\n");
        assertEquals(List.of(), Doctor.untrusted(tmp));

        Files.setPosixFilePermissions(jar, PosixFilePermissions.fromString("rw-rw-r--"));
        List<String> problems = Doctor.untrusted(tmp);
        assertEquals(1, problems.size(), problems.toString());
        assertTrue(problems.getFirst().startsWith("refusing " + jar + ": " + jar + " is writable by its group"),
                problems.getFirst());
    }
}
