package dev.criugpu.cuda.guard;

import dev.criugpu.cuda.backend.CliBackend;
import dev.criugpu.cuda.backend.CudaBackend;
import dev.criugpu.cuda.backend.CudaCallException;
import dev.criugpu.cuda.backend.DriverBackend;
import dev.criugpu.cuda.proc.Procs;
import dev.criugpu.cuda.state.CudaAction;
import dev.criugpu.cuda.state.CudaState;
import dev.criugpu.cuda.state.Transitions;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * The process that watches one {@code criu dump} from its first CUDA lock on (DESIGN rule 12). criu tells it, on its
 * stdin, each task before it changes the task's CUDA state ({@code task PID START STATE}), each task it returned
 * itself ({@code returned PID}) and the end of its exit hook ({@code done}). Once criu is gone — finished, crashed,
 * killed — every guarded task that is still the same live process and was not returned goes back to its state before
 * the dump. A task still in the middle of a driver call when criu died reaches a state of its own later, so each
 * survivor is watched until it has stayed in its state before the dump for {@code settle} (longer than criu's lock
 * time-out). One line per task goes to the log, next to the images.
 */
public final class Watchdog {
    static final long POLL_MS = 50;
    static final long RETRY_MS = 200;
    static final long DRAIN_MS = 2000;

    /** What the watchdog is told on its command line. */
    public record Args(long criuPid, long criuStart, String backend, Path cudaCheckpoint, Path log, long settleMs,
                       long giveUpMs) {
        public List<String> toArgv() {
            List<String> a = new ArrayList<>(List.of("--criu-pid", Long.toString(criuPid), "--criu-start",
                    Long.toString(criuStart), "--backend", backend, "--log", log.toString(), "--settle-ms",
                    Long.toString(settleMs), "--give-up-ms", Long.toString(giveUpMs)));
            if (cudaCheckpoint != null) a.addAll(List.of("--cuda-checkpoint", cudaCheckpoint.toString()));
            return a;
        }

        static Args parse(String[] argv) {
            Map<String, String> m = new LinkedHashMap<>();
            for (int i = 0; i + 1 < argv.length; i += 2) m.put(argv[i], argv[i + 1]);
            if (argv.length % 2 != 0 || !m.keySet().containsAll(List.of("--criu-pid", "--criu-start", "--backend", "--log"))) {
                throw new IllegalArgumentException("usage: --criu-pid P --criu-start T --backend driver|cli --log FILE "
                        + "[--settle-ms N] [--give-up-ms N] [--cuda-checkpoint PATH]");
            }
            return new Args(Long.parseLong(m.get("--criu-pid")), Long.parseLong(m.get("--criu-start")), m.get("--backend"),
                    m.containsKey("--cuda-checkpoint") ? Path.of(m.get("--cuda-checkpoint")) : null, Path.of(m.get("--log")),
                    Long.parseLong(m.getOrDefault("--settle-ms", "12000")), Long.parseLong(m.getOrDefault("--give-up-ms", "600000")));
        }
    }

    /** Opens the backend only when a survivor needs it (loading libcuda is not free). */
    public interface BackendOpener {
        CudaBackend open() throws CudaCallException;
    }

    /** What criu has said so far. */
    private static final class Told {
        final Map<Integer, GuardedTask> tasks = new LinkedHashMap<>();
        final Set<Integer> returned = new LinkedHashSet<>();
        boolean done;
        boolean ended;
    }

    private final Args args;
    private final PrintStream log;
    private final BackendOpener opener;
    private final Told told = new Told();

    Watchdog(Args args, PrintStream log, BackendOpener opener) {
        this.args = args;
        this.log = log;
        this.opener = opener;
    }

    public static void main(String[] argv) {
        Args a;
        PrintStream log;
        try {
            a = Args.parse(argv);
            // a log left by an earlier dump was removed by criu; a name that exists now (a planted link) is refused
            log = new PrintStream(Files.newOutputStream(a.log(), StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE,
                    LinkOption.NOFOLLOW_LINKS), true, StandardCharsets.UTF_8);
        } catch (IOException | RuntimeException e) {
            System.out.println("cuda watchdog: " + e.getMessage());
            System.exit(2);
            return;
        }
        System.out.println("ready");
        System.out.flush();
        Args args = a;
        int rc = new Watchdog(args, log, () -> open(args)).run(System.in);
        System.exit(rc);
    }

    static CudaBackend open(Args a) throws CudaCallException {
        if (a.backend().equals("cli")) {
            if (a.cudaCheckpoint() == null) throw new IllegalStateException("--backend cli needs --cuda-checkpoint PATH");
            return CliBackend.open(a.cudaCheckpoint());
        }
        DriverBackend.Probe probe = DriverBackend.probe();
        if (!probe.usable()) throw new IllegalStateException(probe.reason());
        return probe.backend();
    }

    /** Watches until criu is gone or every task is accounted for; returns 0 when no task was left behind. */
    int run(InputStream criu) {
        Thread reader = new Thread(() -> read(criu), "cuda-watchdog-stdin");
        reader.setDaemon(true);
        reader.start();
        say("watching criu " + args.criuPid());
        while (criuAlive()) {
            synchronized (told) {
                if ((told.done || told.ended) && told.tasks.keySet().stream().allMatch(p ->
                        told.returned.contains(p) || !told.tasks.get(p).alive())) {
                    say("criu finished with every task returned by itself or ended with the dump ("
                            + describe(told.tasks.keySet()) + ")");
                    return 0;
                }
            }
            pause(POLL_MS);
        }
        try {
            reader.join(DRAIN_MS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return returnSurvivors();
    }

    private static String describe(Set<Integer> pids) {
        return pids.isEmpty() ? "no CUDA task" : "pids " + pids;
    }

    private boolean criuAlive() {
        return Procs.stat((int) args.criuPid()).map(s -> s.alive() && s.startTime() == args.criuStart()).orElse(false);
    }

    private void read(InputStream criu) {
        try (BufferedReader in = new BufferedReader(new InputStreamReader(criu, StandardCharsets.UTF_8))) {
            for (String line; (line = in.readLine()) != null; ) {
                String[] f = line.trim().split("\\s+");
                synchronized (told) {
                    try {
                        switch (f[0]) {
                            case "task" -> {
                                GuardedTask t = GuardedTask.parse(f);
                                told.tasks.put(t.pid(), t);
                            }
                            case "returned" -> told.returned.add(Integer.parseInt(f[1]));
                            case "done" -> {
                                told.done = true;
                                say("criu's exit hook is over; watching until criu is gone");
                            }
                            default -> say("ignoring '" + line + "' from criu");
                        }
                    } catch (RuntimeException e) {
                        say("ignoring '" + line + "' from criu: " + e.getMessage());
                    }
                }
            }
        } catch (IOException e) {
            say("reading from criu failed: " + e.getMessage());
        } finally {
            synchronized (told) {
                told.ended = true;
            }
        }
    }

    private int returnSurvivors() {
        List<GuardedTask> survivors = new ArrayList<>();
        synchronized (told) {
            say("criu " + args.criuPid() + " is gone" + (told.done ? " after its exit hook" : " before its exit hook ran"));
            for (GuardedTask t : told.tasks.values()) {
                if (told.returned.contains(t.pid())) {
                    say("pid " + t.pid() + ": criu returned it to " + t.initial().word() + " itself");
                } else if (!t.alive()) {
                    say("pid " + t.pid() + ": ended with the dump; nothing to return");
                } else {
                    survivors.add(t);
                }
            }
        }
        if (survivors.isEmpty()) return 0;
        CudaBackend backend;
        try {
            backend = opener.open();
        } catch (CudaCallException | RuntimeException e) {
            for (GuardedTask t : survivors) {
                say("pid " + t.pid() + ": outlived criu but cannot be returned to " + t.initial().word() + ": " + e.getMessage()
                        + "; run `criu-gpu cuda --action restore|unlock --pid " + t.pid() + "` by hand");
            }
            return 1;
        }
        ExecutorService pool = Executors.newFixedThreadPool(survivors.size(), r -> {
            Thread th = new Thread(r, "cuda-watchdog-return");
            th.setDaemon(true);
            return th;
        });
        List<CompletableFuture<Boolean>> results = survivors.stream()
                .map(t -> CompletableFuture.supplyAsync(() -> returnTask(t, backend), pool)).toList();
        boolean all = results.stream().allMatch(CompletableFuture::join);
        pool.shutdown();
        return all ? 0 : 1;
    }

    /**
     * Brings one survivor back (one log line when it is back), then watches it for the settle time: a driver call
     * criu started may still land and move it again, and is undone too (a second line then).
     */
    boolean returnTask(GuardedTask t, CudaBackend backend) {
        long start = System.nanoTime();
        long giveUp = start + args.giveUpMs() * 1_000_000;
        long backSince = -1;
        CudaState first = null;
        List<String> done = new ArrayList<>();
        int doneWhenBack = -1;
        String lastError = null;
        while (System.nanoTime() < giveUp) {
            if (!t.alive()) {
                say("pid " + t.pid() + ": exited while being returned" + (done.isEmpty() ? "" : " (did " + done + ")"));
                return true;
            }
            try {
                CudaState now = backend.state(t.pid());
                if (first == null) first = now;
                if (now == t.initial()) {
                    if (backSince < 0) backSince = System.nanoTime();
                    if (doneWhenBack < 0) {
                        say("pid " + t.pid() + ": outlived criu; " + first.word() + " -> " + t.initial().word()
                                + (done.isEmpty() ? " (nothing to do)" : " via " + done) + " in "
                                + (backSince - start) / 1_000_000 + " ms");
                    } else if (done.size() > doneWhenBack) {
                        say("pid " + t.pid() + ": moved again by a driver call criu had started; back in "
                                + t.initial().word() + " via " + done.subList(doneWhenBack, done.size()));
                    }
                    doneWhenBack = done.size();
                    if ((System.nanoTime() - backSince) / 1_000_000 >= args.settleMs()) return true;
                } else {
                    backSince = -1;
                    for (CudaAction a : Transitions.returnSteps(t.initial(), now)) {
                        if (a == CudaAction.RESTORE) {
                            backend.prepareRestore();
                            backend.restore(t.pid(), List.of());
                        } else {
                            backend.unlock(t.pid());
                        }
                        done.add(a.word);
                    }
                    continue;
                }
            } catch (CudaCallException e) {
                lastError = e.getMessage(); // a driver call criu started may still be running: try again
            } catch (IllegalStateException e) {
                say("pid " + t.pid() + ": cannot be returned to " + t.initial().word() + ": " + e.getMessage());
                return false;
            }
            pause(RETRY_MS);
        }
        say("pid " + t.pid() + ": not back in " + t.initial().word() + " after " + args.giveUpMs() / 1000 + " s"
                + (lastError == null ? "" : " (last error: " + lastError + ")") + "; run `criu-gpu cuda --get-state --pid "
                + t.pid() + "` and the matching --action by hand");
        return false;
    }

    private void say(String line) {
        synchronized (log) {
            log.println(java.time.Instant.now() + " cuda watchdog: " + line);
        }
    }

    private static void pause(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
