package dev.criugpu.cuda.agent;

import dev.criugpu.cuda.cli.FakeCudaCheckpoint;
import dev.criugpu.api.sys.ProcStat;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The whole path with real processes: a JVM standing in for criu starts the CUDA agent (a JVM of its own, never the
 * stand-in's child), locks and checkpoints a task through it, and is then killed with SIGKILL; the agent puts the task
 * back and logs it. The backend is the cuda-checkpoint stand-in, so the agent's calls are real process runs.
 */
class CudaAgentProcessTest {
    @TempDir
    Path dir;

    @Test
    void aTaskCheckpointedThroughTheAgentIsRunningAgainOnceCriuIsKilled() throws Exception {
        FakeCudaCheckpoint fake = new FakeCudaCheckpoint(dir);
        Process task = new ProcessBuilder("sleep", "600").start();
        Process criu = null;
        try {
            int pid = (int) task.pid();
            fake.setState(pid, "running");
            Path log = dir.resolve("cuda-plugin-agent.log");
            ProcessBuilder pb = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"),
                    CriuStandIn.class.getName(), fake.executable.toString(), log.toString(), Integer.toString(pid),
                    Long.toString(ProcStat.of(pid).orElseThrow().startTime())).redirectErrorStream(true);
            pb.environment().put("PATH", dir + ":" + System.getenv("PATH"));
            criu = pb.start();
            BufferedReader out = new BufferedReader(new InputStreamReader(criu.getInputStream()));
            String armed = out.readLine();
            assertTrue(armed.matches("armed cuda-checkpoint at " + java.util.regex.Pattern.quote(fake.executable.toString())
                    + " \\(with --device-map\\) in the CUDA agent \\(pid [0-9]+\\)"), armed);
            assertEquals("checkpointed", fake.state(pid));
            long agentParent = criu.pid();
            criu.destroyForcibly().waitFor();

            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (!fake.state(pid).equals("running") && System.nanoTime() < deadline) Thread.sleep(50);
            assertEquals("running", fake.state(pid), "calls: " + fake.calls());
            assertTrue(fake.calls().containsAll(List.of("--action lock --pid " + pid + " --timeout 1000",
                    "--action checkpoint --pid " + pid, "--action restore --pid " + pid, "--action unlock --pid " + pid)),
                    fake.calls().toString());
            deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (!(Files.exists(log) && Files.readString(log).contains("outlived criu")) && System.nanoTime() < deadline) {
                Thread.sleep(50);
            }
            String text = Files.readString(log);
            assertEquals("rw-------", java.nio.file.attribute.PosixFilePermissions.toString(Files.getPosixFilePermissions(log)));
            assertTrue(text.contains("pid " + pid + ": outlived criu; checkpointed -> running via [restore, unlock]"), text);
            assertTrue(text.contains("criu " + agentParent + " is gone before its exit hook ran"), text);
        } finally {
            task.destroyForcibly().waitFor();
            if (criu != null) criu.destroyForcibly().waitFor();
        }
    }
}
