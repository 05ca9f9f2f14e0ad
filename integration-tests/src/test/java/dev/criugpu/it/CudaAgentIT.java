package dev.criugpu.it;

import dev.criugpu.inventory.InventoryPlugins;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.regex.Pattern;

import static dev.criugpu.it.HookTrace.CUDA;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The CUDA plugin's dump through the CUDA agent (the JVM beside criu that makes a dump's driver calls and answers for
 * its tasks once criu is gone; DESIGN rules 4 and 12), with real criu 4.2.1 and no GPU: forced mode, the CLI backend,
 * and cuda-plugin's stand-in for cuda-checkpoint ({@link FakeCuda}), whose restore thread is the task's main thread,
 * so criu's real seize and the plugin's real ptrace wake and re-stop act on it. A full dump and restore; criu killed
 * with SIGKILL after the lock and after the plugin's exit hook; SIGINT during an 8-second checkpoint. Whatever happens
 * to criu, its task ends up running (for the fake) and keeps counting.
 */
@ExtendWith(DockerRequired.class)
class CudaAgentIT {
    @RegisterExtension
    static final SharedCriuContainer shared = SharedCriuContainer.withPlugins(CriuImage.CRIU_4_2_1);

    /** DESIGN rule 12 on the GPU host: a task criu left behind is running again within this of criu's end. */
    private static final Duration RETURNED_WITHIN = Duration.ofSeconds(30);
    /** DESIGN rule 4: criu told to stop during a long checkpoint ends within this. */
    private static final Duration INTERRUPTED_WITHIN = Duration.ofSeconds(2);
    private static final Duration REACH = Duration.ofSeconds(30);
    private static final String AGENT_LOG = "cuda-plugin-agent.log";

    private final List<Runnable> cleanup = new ArrayList<>();

    /** One case's directory: the fake in {@code bin/}, the counter's file, the images in {@code img/}. */
    private record Case(CriuContainer criu, String dir, FakeCuda cuda, CounterWorkload counter, int pid) {
        String images() {
            return dir + "/img";
        }

        CriuCommand dump() {
            return cuda.env(CriuCommand.dump(pid, images()).withPlugins().forced());
        }

        String agentLog() {
            return criu.readFileIfExists(images() + "/" + AGENT_LOG);
        }

        /**
         * After criu's end: the agent brings the task from {@code from} back to running through {@code steps} within
         * {@link #RETURNED_WITHIN} and says so in its log, and the task keeps counting.
         */
        void awaitReturned(String from, String steps) {
            cuda.awaitState(pid, "running", RETURNED_WITHIN);
            String line = "pid " + pid + ": outlived criu; " + from + " -> running via " + steps;
            Eventually.await("the CUDA agent's log to say '" + line + "'", RETURNED_WITHIN,
                    () -> agentLog().contains(line), () -> "its log:\n" + agentLog());
            counter.awaitProgress(5);
        }

        /** The blocked signals of the task's restore thread (for the fake, its main thread), from /proc. */
        String restoreThreadSigBlk() {
            return criu.exec("grep", "^SigBlk:", "/proc/" + pid + "/task/" + pid + "/status").orFail().stdout().strip();
        }

        /** The agent says it gave the restore thread (the main thread, for the fake) its mask back, and it has it. */
        void awaitMaskFromTheAgent(String blockedBefore) {
            String line = "pid " + pid + ": restore thread " + pid + " has its signal mask 0 back";
            Eventually.await("the CUDA agent's log to say '" + line + "'", RETURNED_WITHIN,
                    () -> agentLog().contains(line), () -> "its log:\n" + agentLog());
            assertEquals(blockedBefore, restoreThreadSigBlk(), "the blocked signals of pid " + pid + "'s restore thread");
        }

        /** kill -9 of criu, which ends before it kills the tree: its task outlives it. */
        void killCriu(CriuInBackground dump) {
            dump.signal("KILL");
            assertEquals(128 + 9, dump.awaitEnd(REACH));
            assertTrue(criu.pidInUse(pid), "criu died before it killed the tree, yet pid " + pid + " is gone");
        }
    }

    private Case start(CriuContainer criu, String name) {
        String dir = "/tmp/agent-" + name;
        FakeCuda.Running t = FakeCuda.startCudaTask(criu, dir, CounterWorkload::startSingle, cleanup);
        return new Case(criu, dir, t.cuda(), t.counter(), t.pid());
    }

    private CriuInBackground startInBackground(Case c, CriuCommand command) {
        CriuInBackground criu = CriuInBackground.start(c.criu, command, c.dir);
        cleanup.addFirst(criu::kill);
        return criu;
    }

    /** {@code command} started with an 8-second checkpoint, returned once the agent's checkpoint call runs. */
    private CriuInBackground inLongCheckpoint(Case c, CriuCommand command) {
        c.cuda.set("FAKE_CUDA_CHECKPOINT_SECONDS", "8");
        CriuInBackground dump = startInBackground(c, command);
        dump.awaitLog(HookTrace.line(CUDA, "CHECKPOINT_DEVICES", HookTrace.pid(c.pid)), REACH);
        String checkpoint = "--action checkpoint --pid " + c.pid;
        Eventually.await("the agent's checkpoint of pid " + c.pid + " to be running", REACH,
                () -> c.cuda.calls().contains(checkpoint), () -> "calls: " + c.cuda.calls());
        return dump;
    }

    /** A dump held at {@code point} by the forced-mode fault switch {@code stall-POINT} (plugin-api Faults). */
    private CriuInBackground stalledDump(Case c, String point) {
        CriuInBackground dump = startInBackground(c, c.dump().env("CRIU_GPU_FAULT", "cuda_plugin:stall-" + point));
        dump.awaitLog("criu stalls " + point.replace('-', ' '), REACH);
        return dump;
    }

    @AfterEach
    void cleanUp() {
        cleanup.forEach(Runnable::run);
        cleanup.clear();
    }

    @Test
    void aDumpLocksAndCheckpointsThroughTheAgentAndTheRestoreBringsTheTaskBack(CriuContainer criu, @TempDir Path host)
            throws Exception {
        Case c = start(criu, "cycle");
        int pid = c.pid;

        CriuRun dump = c.dump().runIn(criu).orFail();
        List<Long> atDump = c.counter.awaitDumped();
        assertNothingOfOursInTmp(criu);

        assertEquals("checkpointed", c.cuda.state(pid), "calls: " + c.cuda.calls());
        assertTrue(c.cuda.calls().containsAll(List.of("--action lock --pid " + pid + " --timeout 5000",
                "--action checkpoint --pid " + pid)), "calls: " + c.cuda.calls());
        assertFalse(dump.logLinesContaining("pid " + pid + ": CUDA checkpointed in").isEmpty(), dump.logTail(40));
        assertTrue(criu.fileExists(c.images() + "/cuda-plugin-" + pid + ".img"), "no CUDA record for pid " + pid);
        assertEquals(Optional.of(List.of(CUDA)), listedPlugins(criu, c.images(), host));
        // the agent made the calls and watched until the dump was over: the task ended with it (criu killed it),
        // whether the agent saw that while criu still ran or once criu was gone
        Eventually.await("the CUDA agent's last line to say the task ended with the dump", RETURNED_WITHIN,
                () -> lastLine(c.agentLog()).contains("ended with the dump"), () -> "its log:\n" + c.agentLog());
        String last = lastLine(c.agentLog());
        assertTrue(last.contains("pids [" + pid + "]") || last.contains("pid " + pid + ":"), last);
        assertTrue(c.agentLog().contains("serving criu (cuda-checkpoint at " + c.cuda.dir + "/cuda-checkpoint"),
                c.agentLog());
        assertFalse(c.agentLog().contains("outlived criu"), c.agentLog());

        CriuRun restore = c.cuda.env(CriuCommand.restore(c.images()).withPlugins().forced()).runIn(criu).orFail();
        c.counter.assertContinuedFrom(atDump);
        assertEquals("running", c.cuda.state(pid), "calls: " + c.cuda.calls());
        assertTrue(c.cuda.calls().containsAll(List.of("--action restore --pid " + pid, "--action unlock --pid " + pid)),
                "calls: " + c.cuda.calls());
        assertFalse(restore.logLinesContaining("pid " + pid + ": CUDA restored in").isEmpty(), restore.logTail(40));
    }

    @Test
    void criuKilledAfterTheLockLeavesTheTaskToTheAgentWhichUnlocksIt(CriuContainer criu) {
        Case c = start(criu, "killed-locked");
        CriuInBackground dump = stalledDump(c, "before-checkpoint");
        assertEquals("locked", c.cuda.state(c.pid), "calls: " + c.cuda.calls());

        c.killCriu(dump);
        c.awaitReturned("locked", "[unlock]");
    }

    @Test
    void criuKilledAfterThePluginsExitLeavesACheckpointedTaskWhichTheAgentRestores(CriuContainer criu) {
        Case c = start(criu, "killed-after-exit");
        CriuInBackground dump = stalledDump(c, "after-exit");
        HookTrace.assertTraced(dump.run(), CUDA, "EXIT", HookTrace.exit(0, 0));
        assertEquals("checkpointed", c.cuda.state(c.pid), "calls: " + c.cuda.calls());
        assertTrue(criu.fileExists(c.images() + "/cuda-plugin-" + c.pid + ".img"), "no CUDA record for pid " + c.pid);

        c.killCriu(dump);
        c.awaitReturned("checkpointed", "[restore, unlock]");
    }

    @Test
    void sigintDuringALongCheckpointEndsCriuAtOnceAndTheAgentFinishesAndUndoesIt(CriuContainer criu) {
        Case c = start(criu, "sigint");
        String blockedBefore = c.restoreThreadSigBlk();
        CriuInBackground dump = inLongCheckpoint(c, c.dump());

        dump.signal("INT");
        int status = dump.awaitEnd(REACH);
        Duration took = dump.endedAfterSignal();
        CriuRun run = dump.run();
        assertNotEquals(0, status, "criu succeeded although it was interrupted:\n" + run.logTail(40));
        assertTrue(took.compareTo(INTERRUPTED_WITHIN) <= 0, "criu ended " + took.toMillis() + " ms after SIGINT (want <= "
                + INTERRUPTED_WITHIN.toMillis() + " ms), status " + status + ":\n" + run.logTail(40));
        // the hook thread and the worker that waits for the agent both give up; whichever notices first is logged
        Pattern gaveUp = Pattern.compile("criu received SIGINT while waiting for the CUDA (agent's )?checkpoint of pid "
                + c.pid + "\\b");
        assertFalse(run.logLinesMatching(gaveUp).isEmpty(), "criu's log lacks /" + gaveUp + "/:\n" + run.logTail(40));

        // the agent lets the checkpoint criu started finish, then restores and unlocks the task
        c.awaitReturned("checkpointed", "[restore, unlock]");
        // the woken restore thread was outside any driver call here, so it was stopped again and given back its mask
        assertEquals(blockedBefore, c.restoreThreadSigBlk(), "the blocked signals of pid " + c.pid + "'s restore thread"
                + " after SIGINT during its checkpoint");
    }

    /**
     * criu told to stop while the woken restore thread cannot stop again in time (the fault gives it no time at all, as
     * for a thread inside a long driver call): the thread keeps the signals blocked while it ran until the agent,
     * once criu is gone and the task is back, gives it its own mask back.
     */
    @Test
    void aRestoreThreadCriuLeftWithItsSignalsBlockedGetsItsMaskBackFromTheAgent(CriuContainer criu) {
        Case c = start(criu, "mask");
        String blockedBefore = c.restoreThreadSigBlk();
        CriuInBackground dump = inLongCheckpoint(c, c.dump().env("CRIU_GPU_FAULT", "cuda_plugin:no-restop-grace"));

        dump.signal("INT");
        assertNotEquals(0, dump.awaitEnd(REACH));
        CriuRun run = dump.run();
        assertEquals(1, run.logLinesContaining("CUDA restore thread " + c.pid + " of pid " + c.pid
                + " is still inside a driver call").size(), run.logTail(40));

        c.awaitReturned("checkpointed", "[restore, unlock]");
        c.awaitMaskFromTheAgent(blockedBefore);
    }

    /**
     * criu SIGKILLed while the woken restore thread runs the checkpoint: nothing in criu stops it again, and the agent,
     * told of the thread when it was woken, gives it its own mask back once the task is back.
     */
    @Test
    void criuKilledDuringTheCheckpointLeavesTheRestoreThreadsMaskToTheAgent(CriuContainer criu) {
        Case c = start(criu, "killed-mask");
        String blockedBefore = c.restoreThreadSigBlk();
        CriuInBackground dump = inLongCheckpoint(c, c.dump());

        c.killCriu(dump);
        c.awaitReturned("checkpointed", "[restore, unlock]");
        c.awaitMaskFromTheAgent(blockedBefore);
    }

    /**
     * The agent runs with criu's environment but not with what would change its JVM: JAVA_TOOL_OPTIONS and the like
     * in criu's environment (the in-criu JVM is created without them) do not reach it. The shim starts it, before
     * criu's JVM.
     */
    @Test
    void jvmOptionsInCriusEnvironmentDoNotReachTheAgent(CriuContainer criu) {
        Case c = start(criu, "env");
        CriuInBackground dump = startInBackground(c, c.dump().env("CRIU_GPU_FAULT", "cuda_plugin:stall-before-checkpoint")
                .env("JAVA_TOOL_OPTIONS", "-Dcriu.gpu.it.foo=tool").env("_JAVA_OPTIONS", "-Dcriu.gpu.it.foo=underscore")
                .env("JDK_JAVA_OPTIONS", "-Dcriu.gpu.it.foo=jdk").env("CLASSPATH", "/nonexistent"));
        dump.awaitLog("criu stalls before checkpoint", REACH);
        // the shim started it, before criu's JVM, from java/cuda_plugin.helper and criu's environment (issue 23)
        dump.awaitLog("started by the shim before criu's JVM", REACH);
        String pid = criu.sh("pgrep -n -f 'dev[.]criugpu[.]cuda[.]agent[.]CudaAgent'").orFail().stdout().strip();
        String environ = criu.sh("tr '\\0' '\\n' </proc/" + pid + "/environ").orFail().stdout();
        String cmdline = criu.sh("tr '\\0' ' ' </proc/" + pid + "/cmdline").orFail().stdout();
        for (String v : List.of("JAVA_TOOL_OPTIONS=", "_JAVA_OPTIONS=", "JDK_JAVA_OPTIONS=", "CLASSPATH=")) {
            assertFalse(environ.lines().anyMatch(l -> l.startsWith(v)), "the agent (pid " + pid + ") has " + v + ":\n" + environ);
        }
        assertTrue(environ.lines().anyMatch(l -> l.startsWith("PATH=" + c.cuda.dir + ":")), "criu's PATH is gone:\n" + environ);
        assertFalse(cmdline.contains("criu.gpu.it.foo"), cmdline);
        // DESIGN rule 11: its end of a socketpair as fd 3, what it prints in a memfd, nothing of ours under /tmp
        assertTrue(criu.sh("readlink /proc/" + pid + "/fd/3").orFail().stdout().startsWith("socket:"));
        assertTrue(criu.sh("readlink /proc/" + pid + "/fd/1").orFail().stdout().startsWith("/memfd:criu-gpu-helper-output"));
        assertNothingOfOursInTmp(criu);
        c.killCriu(dump);
        c.awaitReturned("locked", "[unlock]");
    }

    /**
     * The agent SIGKILLed during an 8-second checkpoint of {@code dump -R}: the checkpoint hook fails the dump naming
     * the pid, criu's exit returns the task through a backend of its own (the fake cuda-checkpoint from criu's PATH),
     * also undoing the checkpoint the dead agent's cuda-checkpoint run lands afterwards, and criu exits non-zero.
     */
    @Test
    void theAgentKilledDuringTheCheckpointOfDumpRLeavesTheTaskRunningAndCriuFailing(CriuContainer criu) {
        Case c = start(criu, "agent-killed");
        c.cuda.set("FAKE_CUDA_CHECKPOINT_SECONDS", "8");
        CriuInBackground dump = startInBackground(c, c.dump().args("-R"));
        String checkpoint = "--action checkpoint --pid " + c.pid;
        Eventually.await("the agent's checkpoint of pid " + c.pid + " to be running", REACH,
                () -> c.cuda.calls().contains(checkpoint), () -> "calls: " + c.cuda.calls());
        criu.sh("kill -9 $(pgrep -n -f 'dev[.]criugpu[.]cuda[.]agent[.]CudaAgent')").orFail();

        int status = dump.awaitEnd(Duration.ofSeconds(90));
        CriuRun run = dump.run();
        assertNotEquals(0, status, "criu succeeded although the agent died before the checkpoint answered:\n" + run.logTail(40));
        assertFalse(run.logLinesContaining("pid " + c.pid + ": CUDA checkpoint failed: the CUDA agent died").isEmpty(), run.logTail(40));
        assertFalse(run.logLinesContaining("through cuda-checkpoint at").isEmpty(), run.logTail(40));
        assertEquals("running", c.cuda.state(c.pid), "calls: " + c.cuda.calls() + "\n" + run.logTail(40));
        c.counter.awaitProgress(5);
    }

    /** No entry of ours in /tmp (issue 33: the helper's files there showed in what the dumped tasks watch). */
    private static void assertNothingOfOursInTmp(CriuContainer criu) {
        assertEquals("", criu.sh("ls -d /tmp/criu-gpu-* 2>/dev/null; true").orFail().stdout().strip(), "entries of ours in /tmp");
    }

    private static Optional<List<String>> listedPlugins(CriuContainer criu, String images, Path host) throws IOException {
        Files.write(host.resolve(InventoryPlugins.INVENTORY_IMG), criu.readBytes(images + "/" + InventoryPlugins.INVENTORY_IMG));
        return InventoryPlugins.listed(host);
    }

    private static String lastLine(String text) {
        List<String> lines = text.lines().filter(l -> !l.isBlank()).toList();
        return lines.isEmpty() ? "" : lines.getLast();
    }
}
