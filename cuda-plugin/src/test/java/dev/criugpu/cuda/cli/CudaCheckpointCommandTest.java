package dev.criugpu.cuda.cli;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The cuda-checkpoint twin, driven through the CLI backend against a stand-in executable. */
class CudaCheckpointCommandTest {
    static final String A = "GPU-eea0d83f-ebcd-ac27-6b3e-bec2a19724e6";
    static final String B = "GPU-8f4022ba-e0cb-1298-286e-225c953a7feb";

    @TempDir
    Path dir;
    FakeCudaCheckpoint fake;
    final ByteArrayOutputStream out = new ByteArrayOutputStream();
    final ByteArrayOutputStream err = new ByteArrayOutputStream();

    @BeforeEach
    void install() throws IOException {
        fake = new FakeCudaCheckpoint(dir);
    }

    int run(String... args) {
        out.reset();
        err.reset();
        return CudaCheckpointCommand.run(args, new PrintStream(out, true), new PrintStream(err, true),
                Map.of("CRIU_CUDA_BACKEND", "cli", "PATH", "/nonexistent:" + dir));
    }

    @Test
    void getStateAndRestoreTidPrintLikeCudaCheckpoint() throws IOException {
        fake.setState(4242, "running");
        assertEquals(0, run("--get-state", "--pid", "4242"));
        assertEquals("running\n", out.toString());
        assertEquals(0, run("--get-restore-tid", "-p", "4242"));
        assertEquals("4243\n", out.toString());
    }

    @Test
    void actionsWalkTheStateCycle() throws IOException {
        fake.setState(4242, "running");
        assertEquals(0, run("--action", "lock", "--pid", "4242", "--timeout", "500"));
        assertEquals("locked", fake.state(4242));
        assertEquals(0, run("--action", "checkpoint", "--pid", "4242"));
        assertEquals(0, run("--action", "restore", "--pid", "4242", "--device-map", A + "=" + B));
        assertEquals(0, run("--action=unlock", "--pid=4242"));
        assertEquals("running", fake.state(4242));
        assertTrue(fake.calls().contains("--action lock --pid 4242 --timeout 500"), fake.calls().toString());
        assertTrue(fake.calls().contains("--action restore --pid 4242 --device-map " + A + "=" + B), fake.calls().toString());
    }

    @Test
    void toggleGoesBothWays() throws IOException {
        fake.setState(7, "running");
        assertEquals(0, run("--toggle", "--pid", "7"));
        assertEquals("checkpointed", fake.state(7));
        assertEquals(0, run("--toggle", "--pid", "7"));
        assertEquals("running", fake.state(7));
    }

    @Test
    void aFailedActionReportsLikeCudaCheckpointAndKeepsTheStatus() throws IOException {
        fake.setState(9, "running");
        int rc = run("--action", "checkpoint", "--pid", "9");
        assertEquals(32, rc);
        assertTrue(err.toString().startsWith("Could not checkpoint on process ID 9: \""), err.toString());
        assertEquals("running", fake.state(9));
    }

    @Test
    void noBackendIsOneClearLine() {
        out.reset();
        err.reset();
        int rc = CudaCheckpointCommand.run(new String[] {"--get-state", "--pid", "1"}, new PrintStream(out), new PrintStream(err),
                Map.of("CRIU_CUDA_BACKEND", "cli", "PATH", "/nonexistent"));
        assertEquals(1, rc);
        assertEquals("criu-gpu cuda: CRIU_CUDA_BACKEND=cli but cuda-checkpoint: not found in PATH\n", err.toString());
    }

    @Test
    void usageErrorsChangeNothing() throws IOException {
        assertEquals(1, run("--action", "lock"));
        assertEquals("criu-gpu cuda: --pid is required (see --help)\n", err.toString());
        assertEquals(0, run("--help"));
        assertTrue(out.toString().contains("--get-restore-tid"));
        assertTrue(fake.calls().isEmpty(), "nothing may reach cuda-checkpoint on bad usage: " + fake.calls());
    }
}
