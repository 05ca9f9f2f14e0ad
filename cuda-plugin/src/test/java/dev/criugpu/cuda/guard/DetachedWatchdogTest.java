package dev.criugpu.cuda.guard;

import dev.criugpu.cuda.cli.FakeCudaCheckpoint;
import dev.criugpu.cuda.proc.Procs;
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
 * The whole path with real processes: a JVM standing in for criu starts the detached watchdog, hands it a task and
 * checkpoints it, and is then killed with SIGKILL; the watchdog (a separate JVM, not criu's child) puts the task back.
 */
class DetachedWatchdogTest {
    @TempDir
    Path dir;

    @Test
    void aTaskCheckpointedByACriuKilledWithSigkillIsRunningAgain() throws Exception {
        FakeCudaCheckpoint fake = new FakeCudaCheckpoint(dir);
        Process task = new ProcessBuilder("sleep", "600").start();
        Process criu = null;
        try {
            int pid = (int) task.pid();
            fake.setState(pid, "running");
            Path log = dir.resolve("cuda-plugin-watchdog.log");
            criu = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"),
                    CriuStandIn.class.getName(), fake.executable.toString(), log.toString(), Integer.toString(pid),
                    Long.toString(Procs.stat(pid).orElseThrow().startTime())).redirectErrorStream(true).start();
            BufferedReader out = new BufferedReader(new InputStreamReader(criu.getInputStream()));
            assertEquals("armed", out.readLine());
            assertEquals("checkpointed", fake.state(pid));
            criu.destroyForcibly().waitFor();

            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (!fake.state(pid).equals("running") && System.nanoTime() < deadline) Thread.sleep(50);
            assertEquals("running", fake.state(pid), "calls: " + fake.calls());
            assertTrue(fake.calls().containsAll(List.of("--action restore --pid " + pid, "--action unlock --pid " + pid)));
            deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (!(Files.exists(log) && Files.readString(log).contains("outlived criu")) && System.nanoTime() < deadline) {
                Thread.sleep(50);
            }
            assertTrue(Files.readString(log).contains("pid " + pid + ": outlived criu; checkpointed -> running via [restore, unlock]"),
                    Files.readString(log));
        } finally {
            task.destroyForcibly().waitFor();
            if (criu != null) criu.destroyForcibly().waitFor();
        }
    }
}
