package dev.criugpu.cuda.guard;

import dev.criugpu.cuda.backend.CliBackend;
import dev.criugpu.cuda.cli.FakeCudaCheckpoint;
import dev.criugpu.cuda.proc.Procs;
import dev.criugpu.cuda.state.CudaState;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The guardian with real processes standing for criu and a dumped task, and the cuda-checkpoint stand-in. */
class DumpGuardianTest {
    @TempDir
    Path dir;
    final List<Process> started = new ArrayList<>();

    Process sleeper() throws Exception {
        Process p = new ProcessBuilder("sleep", "120").start();
        started.add(p);
        return p;
    }

    @AfterEach
    void cleanUp() throws InterruptedException {
        for (Process p : started) p.destroyForcibly().waitFor();
    }

    int guard(FakeCudaCheckpoint fake, Process criu, GuardianLauncher.GuardedTask task, ByteArrayOutputStream out) throws Exception {
        List<String> args = GuardianLauncher.arguments(criu.pid(), CliBackend.open(fake.executable), List.of(task));
        return DumpGuardian.run(args.toArray(String[]::new), new PrintStream(out, true));
    }

    @Test
    void aTaskThatOutlivesCriuIsReturnedToItsState() throws Exception {
        FakeCudaCheckpoint fake = new FakeCudaCheckpoint(dir);
        Process criu = sleeper();
        Process task = sleeper();
        int pid = (int) task.pid();
        fake.setState(pid, "checkpointed");
        var guarded = new GuardianLauncher.GuardedTask(pid, Procs.stat(pid).orElseThrow().startTime(), CudaState.RUNNING);
        criu.destroyForcibly().waitFor();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        assertEquals(0, guard(fake, criu, guarded, out));
        assertEquals("running", fake.state(pid));
        assertTrue(fake.calls().containsAll(List.of("--action restore --pid " + pid, "--action unlock --pid " + pid)), fake.calls().toString());
        assertTrue(out.toString().contains("pid " + pid + " outlived criu; checkpointed -> running"), out.toString());
    }

    @Test
    void aLockedTaskGoesBackToLockedOnly() throws Exception {
        FakeCudaCheckpoint fake = new FakeCudaCheckpoint(dir);
        Process criu = sleeper();
        Process task = sleeper();
        int pid = (int) task.pid();
        fake.setState(pid, "checkpointed");
        criu.destroyForcibly().waitFor();
        var guarded = new GuardianLauncher.GuardedTask(pid, Procs.stat(pid).orElseThrow().startTime(), CudaState.LOCKED);
        assertEquals(0, guard(fake, criu, guarded, new ByteArrayOutputStream()));
        assertEquals("locked", fake.state(pid));
    }

    @Test
    void killedOrReusedPidsAreLeftAlone() throws Exception {
        FakeCudaCheckpoint fake = new FakeCudaCheckpoint(dir);
        Process criu = sleeper();
        Process task = sleeper();
        int pid = (int) task.pid();
        fake.setState(pid, "checkpointed");
        long start = Procs.stat(pid).orElseThrow().startTime();
        criu.destroyForcibly().waitFor();
        // same pid, other start time: a different process now holds the pid
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        assertEquals(0, guard(fake, criu, new GuardianLauncher.GuardedTask(pid, start + 1, CudaState.RUNNING), out));
        task.destroyForcibly().waitFor();
        assertEquals(0, guard(fake, criu, new GuardianLauncher.GuardedTask(pid, start, CudaState.RUNNING), out));
        assertEquals("checkpointed", fake.state(pid));
        assertTrue(fake.calls().stream().noneMatch(c -> c.startsWith("--action")), fake.calls().toString());
        assertTrue(out.toString().contains("no dumped CUDA task survived it"), out.toString());
    }

    @Test
    void taskArgumentsRoundTrip() {
        var t = new GuardianLauncher.GuardedTask(12, 345, CudaState.LOCKED);
        assertEquals(t, GuardianLauncher.GuardedTask.parse(t.arg()));
    }
}
