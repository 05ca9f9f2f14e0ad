package dev.criugpu.cuda.guard;

import dev.criugpu.api.DetachedProcess;
import dev.criugpu.cuda.backend.CliBackend;
import dev.criugpu.cuda.backend.CudaBackend;
import dev.criugpu.cuda.bindings.libc_h;
import dev.criugpu.cuda.proc.Procs;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The {@link Watchdog} as a detached JVM (the JDK criu runs, our class path), talked to over its stdin and stdout.
 * It must never be criu's child: criu waits for all its children after killing a dumped tree and treats any other
 * as a bug; for the same reason it cannot be started when criu is a child subreaper (orphans become criu's).
 */
public final class DetachedWatchdog implements WatchdogLink {
    private final DetachedProcess process;
    private boolean ready;

    private DetachedWatchdog(DetachedProcess process) {
        this.process = process;
    }

    /**
     * @param logFile where the watchdog writes its lines (created anew; an older one must have been removed)
     * @param settleMs how long a returned task must stay in its state before the watchdog is done with it
     */
    public static WatchdogLink.Starter starter(CudaBackend backend, Path logFile, long settleMs) {
        return () -> start(backend, logFile, settleMs);
    }

    static WatchdogLink start(CudaBackend backend, Path logFile, long settleMs) throws IOException {
        if (libc_h.isChildSubreaper()) {
            throw new IOException("this criu is a child subreaper: a watchdog would end up as its child and stop it "
                    + "from finishing");
        }
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        if (!Files.isExecutable(java)) throw new IOException(java + " is not executable");
        long self = ProcessHandle.current().pid();
        long start = Procs.stat((int) self).map(Procs.Stat::startTime)
                .orElseThrow(() -> new IOException("cannot read /proc/" + self + "/stat"));
        Path cli = backend instanceof CliBackend c ? c.executable() : null;
        Watchdog.Args args = new Watchdog.Args(self, start, backend.name(), cli, logFile, settleMs, 600_000);
        List<String> argv = new ArrayList<>(List.of(java.toString(), "-Xrs", "-Xmx32m", "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData", "-Xshare:auto", "--enable-native-access=ALL-UNNAMED",
                "-cp", System.getProperty("java.class.path"), Watchdog.class.getName()));
        argv.addAll(args.toArgv());
        return new DetachedWatchdog(DetachedProcess.start(argv));
    }

    @Override
    public void guard(GuardedTask task) throws IOException {
        send(task.line());
    }

    @Override
    public void returned(int pid) throws IOException {
        send("returned " + pid);
    }

    @Override
    public void done() throws IOException {
        try {
            send("done");
        } finally {
            process.close();
        }
    }

    private void send(String line) throws IOException {
        try {
            process.writeLine(line);
        } catch (IOException e) {
            throw new IOException("the CUDA watchdog is gone (" + e.getMessage() + ")", e);
        }
    }

    @Override
    public void awaitReady(long timeoutMs) throws IOException {
        if (ready) return;
        Optional<String> line;
        try {
            line = process.readLine(timeoutMs);
        } catch (IOException e) {
            throw new IOException("the CUDA watchdog did not start: " + e.getMessage(), e);
        }
        if (line.isEmpty()) throw new IOException("the CUDA watchdog did not report within " + timeoutMs + " ms");
        if (!line.get().equals("ready")) throw new IOException("the CUDA watchdog did not start: " + line.get());
        ready = true;
    }
}
