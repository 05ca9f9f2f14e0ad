package dev.criugpu.cuda.backend;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** cuda-checkpoint, run as root by criu or the agent, gets named variables only, not its starter's environment. */
class CliBackendEnvironmentTest {
    /** What a shell adds to the environment it was given. */
    private static final Set<String> SHELL_OWN = Set.of("PWD", "OLDPWD", "SHLVL", "_");

    @Test
    void cudaCheckpointGetsOnlyPathAndALocale(@TempDir Path dir) throws Exception {
        assertNotNull(System.getenv("HOME"), "a variable of this JVM that must not reach cuda-checkpoint");
        Path exe = dir.resolve(CliBackend.EXECUTABLE);
        Files.writeString(exe, "#!/bin/sh\nif [ \"$1\" = --help ]; then echo '--action'; exit 0; fi\nenv; exit 3\n");
        Files.setPosixFilePermissions(exe, PosixFilePermissions.fromString("rwxr-xr-x"));
        CliBackend backend = CliBackend.open(exe);

        CudaCallException e = assertThrows(CudaCallException.class, () -> backend.lock(1, 1000));
        Set<String> names = e.reason().lines().map(l -> l.substring(0, Math.max(0, l.indexOf('='))))
                .filter(n -> !SHELL_OWN.contains(n)).collect(Collectors.toSet());
        assertEquals(Set.of("PATH", "LC_ALL"), names, e.reason());
        assertTrue(e.reason().lines().anyMatch(l -> l.equals("LC_ALL=C.UTF-8")), e.reason());
    }
}
