package dev.criugpu.api.sys;

import dev.criugpu.api.bindings.libc_h;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.Optional;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.Stream;

import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * Tasks that criu traces during a restore, waited for by their tracer (the hook thread, criu's main thread) once they
 * are killed: a traced thread or process that exits stays a zombie until its tracer waits for it.
 */
public final class Tracees {
    private static final long POLL_NANOS = 1_000_000;

    private Tracees() {
    }

    /**
     * The threads whose exit must be waited for when {@code pid} is killed: its own other threads, and, when it is the
     * first process of its pid namespace (its exit waits for every task of the namespace to be gone), every thread
     * of every other process of that namespace. Read before the kill, while /proc still shows them.
     */
    public static List<Integer> dependents(int pid) {
        List<Integer> out = new ArrayList<>(threads(pid));
        out.remove(Integer.valueOf(pid));
        if (Tasks.innermostPid(pid) != 1) return out;
        Optional<Path> ns = nsLink(pid);
        if (ns.isEmpty()) return out;
        try (Stream<Path> procs = Files.list(Path.of("/proc"))) {
            for (Path p : procs.toList()) {
                String name = p.getFileName().toString();
                if (!name.chars().allMatch(Character::isDigit) || name.equals(Integer.toString(pid))) continue;
                int other = Integer.parseInt(name);
                if (nsLink(other).equals(ns)) out.addAll(threads(other));
            }
        } catch (IOException e) {
            return out;
        }
        return out;
    }

    /**
     * Waits, as their tracer, for each of {@code tids} to exit (a stop on the way is continued), for at most
     * {@code limit} in all; returns those still not waited for. A tid this thread does not trace is dropped (ECHILD).
     * All are polled in turn, since one may be reportable only after others are gone (a zombie leader whose threads
     * still run, the namespace's init whose exit waits for the rest).
     */
    public static List<Integer> awaitExits(List<Integer> tids, Duration limit) {
        long deadline = System.nanoTime() + limit.toNanos();
        Set<Integer> pending = new LinkedHashSet<>(tids);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment status = arena.allocate(JAVA_INT);
            while (!pending.isEmpty()) {
                boolean progressed = false;
                for (Iterator<Integer> it = pending.iterator(); it.hasNext(); ) {
                    int tid = it.next();
                    libc_h.Result r = libc_h.waitpid(tid, status, libc_h.WALL | libc_h.WNOHANG);
                    if (r.failed() && r.errno() == libc_h.EINTR) continue;
                    if (r.failed()) {
                        it.remove();   // not (or no longer) ours to wait for
                    } else if (r.value() == tid) {
                        progressed = true;
                        if (libc_h.WIFSTOPPED(status.get(JAVA_INT, 0))) {
                            libc_h.ptrace(libc_h.PTRACE_CONT, tid, MemorySegment.NULL, MemorySegment.NULL);
                        } else {
                            it.remove();
                        }
                    }
                }
                if (pending.isEmpty() || System.nanoTime() > deadline) break;
                // killed, not yet exited: the kernel tells the tracer only through SIGCHLD, which criu's thread owns
                if (!progressed) LockSupport.parkNanos(POLL_NANOS);
            }
        }
        return List.copyOf(pending);
    }

    /** Each tid with its state, wait channel and tracer, as /proc says: what a thread that did not exit waits for. */
    public static String describe(List<Integer> tids) {
        List<String> out = new ArrayList<>();
        for (int tid : tids) {
            Path t = Path.of("/proc/" + tid);
            try {
                String stat = Files.readString(t.resolve("stat"));
                String state = stat.substring(stat.lastIndexOf(')') + 2).split(" ")[0];
                String tracer = Files.readAllLines(t.resolve("status")).stream().filter(l -> l.startsWith("TracerPid:"))
                        .map(l -> l.substring(10).trim()).findFirst().orElse("?");
                out.add(tid + " " + state + " in " + Files.readString(t.resolve("wchan")).trim() + ", traced by " + tracer);
            } catch (IOException | RuntimeException e) {
                out.add(tid + " gone");
            }
        }
        return String.join("; ", out);
    }

    private static List<Integer> threads(int pid) {
        try (Stream<Path> tasks = Files.list(Path.of("/proc/" + pid + "/task"))) {
            return tasks.map(t -> t.getFileName().toString()).filter(n -> n.chars().allMatch(Character::isDigit))
                    .map(Integer::valueOf).toList();
        } catch (IOException e) {
            return List.of();
        }
    }

    private static Optional<Path> nsLink(int pid) {
        try {
            return Optional.of(Files.readSymbolicLink(Path.of("/proc/" + pid + "/ns/pid")));
        } catch (IOException | UnsupportedOperationException e) {
            return Optional.empty();
        }
    }
}
