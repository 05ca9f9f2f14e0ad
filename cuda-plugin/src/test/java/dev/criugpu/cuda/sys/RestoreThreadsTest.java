package dev.criugpu.cuda.sys;

import dev.criugpu.api.bindings.libc_h;
import dev.criugpu.api.sys.ProcStat;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The wake / re-stop dance on a real process that this test thread seizes the way criu does (PTRACE_SEIZE,
 * PTRACE_INTERRUPT, criu's options): the thread must run while woken and be back in a ptrace stop with its own
 * signal mask and criu's options afterwards.
 */
public class RestoreThreadsTest {
    static final int PTRACE_SEIZE = 0x4206;
    static final int PTRACE_DETACH = 17;
    static final long SIGUSR1_BIT = 1L << (10 - 1);

    public static long sigBlk(int pid) throws Exception {
        for (String l : Files.readAllLines(Path.of("/proc/" + pid + "/status"))) {
            if (l.startsWith("SigBlk:")) return Long.parseUnsignedLong(l.substring(7).trim(), 16);
        }
        throw new AssertionError("no SigBlk");
    }

    static void waitStop(int pid, Arena arena) {
        MemorySegment status = arena.allocate(JAVA_INT);
        libc_h.Result r = libc_h.waitpid(pid, status, libc_h.WALL);
        assertFalse(r.failed(), "waitpid: " + r.errno());
        assertTrue(libc_h.WIFSTOPPED(status.get(JAVA_INT, 0)));
    }

    /**
     * A process that is not this JVM's child: the JVM's reaper thread waits on its own children and would swallow
     * the ptrace stops the test waits for (criu's tracees are never the JVM's children).
     */
    public static int orphanSleeper() throws Exception {
        Process sh = new ProcessBuilder("/bin/sh", "-c", "sleep 120 </dev/null >/dev/null 2>&1 & echo $!").start();
        int pid = Integer.parseInt(new String(sh.getInputStream().readAllBytes()).trim());
        assertEquals(0, sh.waitFor());
        // $! is printed right after the fork: the child may still be the shell, whose own setup before the exec
        // resets its signal mask (a mask set from outside then was gone: failed once on a fresh machine)
        awaitExecd(pid, "sleep");
        return pid;
    }

    /** Polls (bounded: 10 s) until process {@code pid} runs {@code comm}: it has exec'd. */
    public static void awaitExecd(int pid, String comm) throws Exception {
        Path file = Path.of("/proc/" + pid + "/comm");
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (true) {
            String now;
            try {
                now = Files.readString(file).strip();
            } catch (java.io.IOException e) {
                now = "(gone)";
            }
            if (now.equals(comm)) return;
            if (System.nanoTime() > deadline) throw new AssertionError("pid " + pid + " runs '" + now + "', not " + comm + ", after 10 s");
            Thread.sleep(2);
        }
    }

    /** A sleeper that is not this JVM's child, an arena for the test's ptrace buffers, and the sleeper gone after. */
    interface SleeperTest {
        void run(int pid, Arena arena) throws Exception;
    }

    static void onSleeper(SleeperTest test) throws Exception {
        int pid = orphanSleeper();
        try (Arena arena = Arena.ofConfined()) {
            test.run(pid, arena);
        } finally {
            ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
        }
    }

    /** Seizes {@code pid} as criu does and stops it with SIGUSR1 blocked (its own mask, to be given back). */
    private static void seizeStopped(int pid, Arena arena) {
        long criuOptions = libc_h.PTRACE_O_SUSPEND_SECCOMP | libc_h.PTRACE_O_TRACESYSGOOD;
        libc_h.Result seize = libc_h.ptrace(PTRACE_SEIZE, pid, MemorySegment.NULL, MemorySegment.ofAddress(criuOptions));
        Assumptions.assumeFalse(seize.failed(), "skipped: this sandbox refuses PTRACE_SEIZE with criu's options (errno "
                + seize.errno() + ")");
        assertFalse(libc_h.ptrace(libc_h.PTRACE_INTERRUPT, pid, MemorySegment.NULL, MemorySegment.NULL).failed());
        waitStop(pid, arena);
        MemorySegment mask = arena.allocate(JAVA_LONG);
        mask.set(JAVA_LONG, 0, SIGUSR1_BIT);
        assertFalse(libc_h.ptrace(libc_h.PTRACE_SETSIGMASK, pid, MemorySegment.ofAddress(8), mask).failed());
        assertEquals('t', ProcStat.of(pid).orElseThrow().state());
    }

    /** Stopped by us, with its own mask, still traced. */
    private static void assertGivenBack(int pid) throws Exception {
        assertEquals('t', ProcStat.of(pid).orElseThrow().state());
        assertEquals(SIGUSR1_BIT, sigBlk(pid));
        assertFalse(Files.readString(Path.of("/proc/" + pid + "/status")).contains("TracerPid:\t0\n"), "still traced by us");
    }

    @Test
    @Timeout(value = 30, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void wakeLetsItRunAndRestopPutsEverythingBack() throws Exception {
        onSleeper((pid, arena) -> {
        seizeStopped(pid, arena);
        MemorySegment mask = arena.allocate(JAVA_LONG);

        RestoreThreadControl.Woken w = RestoreThreads.PTRACE.wake(pid, pid);
        assertEquals(SIGUSR1_BIT, w.savedMask());
        long blockedWhileAwake = sigBlk(pid);
        long unblockable = (1L << (libc_h.SIGTRAP - 1)) | (1L << (9 - 1)) | (1L << (19 - 1));
        assertEquals(~unblockable, blockedWhileAwake, Long.toHexString(blockedWhileAwake));
        // a second PTRACE_INTERRUPT-free ptrace request fails with ESRCH only while the tracee runs
        libc_h.Result probe = libc_h.ptrace(libc_h.PTRACE_GETSIGMASK, pid, MemorySegment.ofAddress(8), mask);
        assertTrue(probe.failed() && probe.errno() == libc_h.ESRCH, "the woken thread must be running");

        RestoreThreads.PTRACE.restop(w);
        assertGivenBack(pid);
        libc_h.ptrace(PTRACE_DETACH, pid, MemorySegment.NULL, MemorySegment.NULL);
        });
    }

    /** criu is ending: a woken thread outside any driver call (here: sleeping) stops well before the deadline. */
    @Test
    @Timeout(value = 30, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void restopBeforeADeadlineStopsAThreadThatCanStopAndGivesItsMaskBack() throws Exception {
        onSleeper((pid, arena) -> {
        seizeStopped(pid, arena);
        RestoreThreadControl.Woken w = RestoreThreads.PTRACE.wake(pid, pid);
        assertTrue(RestoreThreads.PTRACE.restopBefore(w, System.nanoTime() + 10_000_000_000L));
        assertGivenBack(pid);
        libc_h.ptrace(PTRACE_DETACH, pid, MemorySegment.NULL, MemorySegment.NULL);
        });
    }

    /** Sets a running, untraced process's signal mask the way a tracer can: seize, interrupt, set, detach. */
    public static void setMaskFromOutside(int pid, long blocked, Arena arena) {
        libc_h.Result seize = libc_h.ptrace(PTRACE_SEIZE, pid, MemorySegment.NULL, MemorySegment.NULL);
        Assumptions.assumeFalse(seize.failed(), "skipped: this sandbox refuses PTRACE_SEIZE (errno " + seize.errno() + ")");
        assertFalse(libc_h.ptrace(libc_h.PTRACE_INTERRUPT, pid, MemorySegment.NULL, MemorySegment.NULL).failed());
        waitStop(pid, arena);
        MemorySegment mask = arena.allocate(JAVA_LONG);
        mask.set(JAVA_LONG, 0, blocked);
        assertFalse(libc_h.ptrace(libc_h.PTRACE_SETSIGMASK, pid, MemorySegment.ofAddress(8), mask).failed());
        assertFalse(libc_h.ptrace(PTRACE_DETACH, pid, MemorySegment.NULL, MemorySegment.NULL).failed());
    }

    /** Once criu is gone: a thread left with our signals blocked gets its own mask back, and is left untraced. */
    @Test
    @Timeout(value = 30, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void giveBackMaskRestoresTheMaskOfAThreadLeftBlockedAndDetaches() throws Exception {
        onSleeper((pid, arena) -> {
        setMaskFromOutside(pid, ~(1L << (libc_h.SIGTRAP - 1)), arena); // what wake blocks
        assertEquals(RestoreThreads.BLOCKED_WHILE_WOKEN, sigBlk(pid), Long.toHexString(sigBlk(pid)));

        assertEquals(RestoreThreads.MaskReturn.GIVEN_BACK,
                RestoreThreads.PTRACE.giveBackMask(pid, pid, SIGUSR1_BIT, -1, System.nanoTime() + 10_000_000_000L));
        assertEquals(SIGUSR1_BIT, sigBlk(pid));
        assertTrue(Files.readString(Path.of("/proc/" + pid + "/status")).contains("TracerPid:\t0\n"), "detached");
        // running again, not stopped: right after the detach it may still be on its way back into its sleep ('R')
        char state = ProcStat.of(pid).orElseThrow().state();
        assertTrue(state == 'S' || state == 'R', "state " + state + " after the detach");
        });
    }

    /** A mask the thread set itself after criu left is not ours to replace. */
    @Test
    @Timeout(value = 30, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void giveBackMaskLeavesAMaskTheThreadChangedItself() throws Exception {
        onSleeper((pid, arena) -> {
        long own = 1L << (2 - 1); // SIGINT
        setMaskFromOutside(pid, own, arena);

        assertEquals(RestoreThreads.MaskReturn.CHANGED_BY_ITSELF,
                RestoreThreads.PTRACE.giveBackMask(pid, pid, SIGUSR1_BIT, -1, System.nanoTime() + 10_000_000_000L));
        assertEquals(own, sigBlk(pid));
        assertTrue(Files.readString(Path.of("/proc/" + pid + "/status")).contains("TracerPid:\t0\n"), "detached");
        });
    }

    /** After criu is gone a thread id may belong to another process, or the pid to another start: both are left alone. */
    @Test
    @Timeout(value = 30, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void giveBackMaskLeavesAThreadIdThatIsNoLongerThatProcesssAlone() throws Exception {
        onSleeper((pid, arena) -> {
        setMaskFromOutside(pid, ~(1L << (libc_h.SIGTRAP - 1)), arena); // what wake blocks
        long start = ProcStat.of(pid).orElseThrow().startTime();
        assertEquals(RestoreThreads.MaskReturn.NOT_ITS_THREAD,
                RestoreThreads.PTRACE.giveBackMask(pid, pid, SIGUSR1_BIT, start + 1, System.nanoTime() + 10_000_000_000L),
                "the pid started at another time: another process");
        assertEquals(RestoreThreads.BLOCKED_WHILE_WOKEN, sigBlk(pid), "its mask was changed");
        Process other = new ProcessBuilder("sleep", "60").start();
        try {
            int tid = (int) other.pid();
            long before = sigBlk(tid);
            assertEquals(RestoreThreads.MaskReturn.NOT_ITS_THREAD,
                    RestoreThreads.PTRACE.giveBackMask(pid, tid, SIGUSR1_BIT, start, System.nanoTime() + 10_000_000_000L),
                    "a thread id of another process");
            assertEquals(before, sigBlk(tid));
            assertTrue(Files.readString(Path.of("/proc/" + tid + "/status")).contains("TracerPid:\t0\n"), "detached");
        } finally {
            other.destroyForcibly().waitFor();
        }
        assertTrue(Files.readString(Path.of("/proc/" + pid + "/status")).contains("TracerPid:\t0\n"), "detached");
        });
    }
}
