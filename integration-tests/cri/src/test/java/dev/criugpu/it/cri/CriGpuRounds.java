package dev.criugpu.it.cri;

import dev.criugpu.it.cri.api.Cri;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The kubelet's checkpoint and restore of a GPU container, on a real node (run-cri.sh on the GPU host): a pod runs a
 * counter container (cuda_counter, the GPU given as a CDI device), CheckpointContainer writes an archive and leaves
 * it running, the container and its pod are removed, and a container created in a new pod from the archive is
 * started (containerd restores it with criu, whose plugins come from /usr/lib/criu). The restored counter must go on
 * from where the checkpoint caught it and verify its GPU memory; the next round checkpoints the restored container.
 * Prints one line per result, as the GPU scripts do: PASS NAME, FAIL NAME: WHY, TIME NAME ..., NOTE NAME: ...
 * <pre>
 * java -cp 'cri/java/*' dev.criugpu.it.cri.CriGpuRounds rounds|gpu-elsewhere|no-cdi-spec NAME key=value...
 *   socket=PATH image=REF archive-dir=DIR containerd-log=FILE command="ARGV" (split at spaces)
 *   gpu=CDI-NAME (nvidia.com/gpu=0; none when empty) restore-gpu=CDI-NAME (default: gpu) rounds=N (5)
 *   dump-line=REGEX restore-line=REGEX (what dump.log and restore.log must hold) log-dir=DIR (each dump.log and
 *   restore.log kept there) before-restore="SHELL COMMAND" (gpu-elsewhere: run between checkpoint and restore, e.g.
 *   to make the node look like one with other GPUs) expect=any|refused (gpu-elsewhere; default any)
 *   system-log=FILE (gpu-elsewhere: the node's syslog file; a failed restore must have left the plugin's error there)
 * </pre>
 * gpu-elsewhere: one checkpoint with {@code gpu}, its restore into a pod given {@code restore-gpu}; it passes when
 * the restored counter works on what it was given, or when the restore fails with one line and nothing of the
 * container runs on (with expect=refused only the latter). no-cdi-spec: CreateContainer with a CDI device no spec
 * names fails in one line.
 */
public final class CriGpuRounds {
    private static final Duration CALL = Duration.ofSeconds(300);
    private static final Duration PROGRESS = Duration.ofSeconds(120);
    private static final Pattern LOG_LINE = Pattern.compile("^\\S+ (?:stdout|stderr) [FP] (.*)$");
    private static final Pattern TICK = Pattern.compile("^\\[p \\d+\\] tick (\\d+)$");
    /** Where containerd's runc shim keeps a task's bundle, runc's restore.log among it (node.sh's containerd root). */
    private static final String TASKS = "/var/lib/criu-gpu-cri/containerd/io.containerd.runtime.v2.task/k8s.io/";

    private final CriClient cri;
    private final Map<String, String> opt;
    private final String name;
    private final List<String> command;

    private CriGpuRounds(CriClient cri, String name, Map<String, String> opt) {
        this.cri = cri;
        this.name = name;
        this.opt = opt;
        this.command = List.of(need("command").trim().split(" +"));
    }

    /** A failure of the case: one line. */
    private static final class CaseFailed extends RuntimeException {
        CaseFailed(String why) {
            super(why, null, false, false);
        }
    }

    public static void main(String[] args) {
        if (args.length < 2) {
            System.err.println("usage: CriGpuRounds rounds|gpu-elsewhere|no-cdi-spec NAME key=value...");
            System.exit(2);
        }
        Map<String, String> opt = new LinkedHashMap<>();
        for (int i = 2; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            if (eq < 1) throw new IllegalArgumentException("not key=value: " + args[i]);
            opt.put(args[i].substring(0, eq), args[i].substring(eq + 1));
        }
        Path containerdLog = Path.of(opt.getOrDefault("containerd-log", "/dev/null"));
        int status;
        try (CriClient cri = new CriClient(Path.of(opt.get("socket")), () -> tail(containerdLog, 30))) {
            CriGpuRounds c = new CriGpuRounds(cri, args[1], opt);
            try {
                switch (args[0]) {
                    case "rounds" -> c.rounds();
                    case "gpu-elsewhere" -> c.gpuElsewhere();
                    case "no-cdi-spec" -> c.noCdiSpec();
                    default -> throw new CaseFailed("unknown case " + args[0]);
                }
                System.out.println("PASS " + c.name);
                status = 0;
            } catch (CaseFailed | AssertionError e) {
                String first = String.valueOf(e.getMessage()).lines().findFirst().orElse("");
                System.out.println("FAIL " + c.name + ": " + first);
                if (e instanceof AssertionError) System.err.println(e.getMessage());
                status = 1;
            }
        }
        System.exit(status);
    }

    // ------------------------------------------------------------------ the cases

    /** Start, then {@code rounds} times: checkpoint, remove, restore in a new pod; then SIGTERM and the final check. */
    private void rounds() {
        int rounds = Integer.parseInt(opt.getOrDefault("rounds", "5"));
        String gpu = opt.getOrDefault("gpu", "");
        Running c = start(need("image"), gpu);
        List<String> ckpt = new ArrayList<>(), rest = new ArrayList<>();
        for (int round = 1; round <= rounds; round++) {
            Path archive = Path.of(need("archive-dir"), name + "-" + round + ".tar");
            Checkpointed k = checkpoint(c, archive, "round " + round);
            c = restore(k, opt.getOrDefault("restore-gpu", gpu), "round " + round);
            ckpt.add(fmt(k.seconds));
            rest.add(fmt(c.restoreSeconds));
            System.out.printf("TIME %s round=%d checkpoint=%s restore=%s archive=%dMiB tick-at-checkpoint=%d%n", name,
                    round, fmt(k.seconds), fmt(c.restoreSeconds), k.archiveMib, k.tickAfter);
            deleteArchive(archive);
        }
        stop(c);
        System.out.printf("TIME %s rounds=%d checkpoint=%s restore=%s%n", name, rounds, String.join(" ", ckpt),
                String.join(" ", rest));
    }

    private void gpuElsewhere() {
        List<String> earlier = counterProcesses();   // left by an earlier case: not this one's
        Optional<Path> systemLog = Optional.ofNullable(opt.get("system-log")).map(Path::of);
        long systemLogAt = systemLog.map(CriGpuRounds::size).orElse(0L);
        Path archive = Path.of(need("archive-dir"), name + ".tar");
        Checkpointed k = checkpoint(start(need("image"), need("gpu")), archive, "checkpoint");
        String to = need("restore-gpu");
        String before = opt.getOrDefault("before-restore", "");
        if (!before.isEmpty()) run("sh", "-c", before);
        Running r;
        try {
            r = restore(k, to, "restore");
        } catch (CaseFailed | AssertionError e) {
            String first = String.valueOf(e.getMessage()).lines().findFirst().orElse("");
            System.out.println("NOTE " + name + ": restore with " + to + " of a checkpoint taken with " + need("gpu")
                    + " failed: " + first);
            String restoreLog = lastRestoreLog();
            restoreLog.lines().filter(l -> l.contains("Error") || l.contains("refused")).limit(3)
                    .forEach(l -> System.out.println("NOTE " + name + ": restore.log: " + l.strip()));
            if (systemLog.isPresent()) {
                // containerd deleted restore.log with the task: the node's system log is where the reason stays
                List<String> ours = linesAfter(systemLog.get(), systemLogAt).stream()
                        .filter(l -> l.contains("Error (cuda_plugin)")).toList();
                ours.stream().limit(3).forEach(l -> System.out.println("NOTE " + name + ": system log: " + l.strip()));
                if (ours.isEmpty()) {
                    throw new CaseFailed("the restore failed and the node's system log (" + systemLog.get() + ") has no "
                            + "line of the plugin saying why");
                }
            }
            List<String> beforeCleanUp = counterProcesses();
            beforeCleanUp.removeAll(earlier);
            cleanUp();   // what the kubelet does with a container that did not start: removed, with its pod
            List<String> left = counterProcesses();
            left.removeAll(earlier);
            if (!left.isEmpty()) {
                throw new CaseFailed("the failed restore left the counter running, even after its container and pod "
                        + "were removed: pid(s) " + left);
            }
            if (!beforeCleanUp.isEmpty()) {
                System.out.println("NOTE " + name + ": the counter (pid(s) " + beforeCleanUp + ") ran on after the "
                        + "failed restore until its container was removed");
            }
            deleteArchive(archive);
            return;
        }
        System.out.println("NOTE " + name + ": restored with " + to + " (checkpoint taken with " + need("gpu")
                + "); the container sees " + r.devices);
        stop(r);
        deleteArchive(archive);
        if ("refused".equals(opt.get("expect"))) throw new CaseFailed("restored, but a refusal was expected");
    }

    private void noCdiSpec() {
        cri.pullImage(need("image"));
        Pod pod = runPod();
        String missing = "nvidia.com/gpu=no-such-gpu";
        try {
            cri.createContainer(pod.id, counter(need("image"), missing), pod.config);
        } catch (AssertionError e) {
            String first = e.getMessage().lines().findFirst().orElse("");
            System.out.println("NOTE " + name + ": " + first);
            if (!first.contains(missing)) throw new CaseFailed("the error does not name " + missing + ": " + first);
            removePod(pod);
            return;
        }
        throw new CaseFailed("CreateContainer took an unresolvable CDI device " + missing);
    }

    // ------------------------------------------------------------------ the kubelet's steps

    private record Pod(String id, Cri.PodSandboxConfig config) {
    }

    private record Running(Pod pod, String id, Path log, long pid, String devices, double restoreSeconds) {
    }

    /** copied: the program's lines in the archive's container.log, which the restored container's log starts with. */
    private record Checkpointed(Path archive, long tickBefore, long tickAfter, int copied, double seconds, long archiveMib) {
    }

    private Running start(String image, String gpu) {
        cri.pullImage(image);   // as the kubelet does before it creates a container
        Pod pod = runPod();
        String id = cri.createContainer(pod.id, counter(image, gpu), pod.config);
        cri.startContainer(id);
        Running r = running(pod, id, 0);
        awaitTick(r.log, 10, "the counter to reach tick 10");
        return r;
    }

    private Checkpointed checkpoint(Running c, Path archive, String when) {
        long before = lastTick(c.log);
        long t0 = System.nanoTime();
        cri.checkpointContainer(c.id, archive.toString(), CALL);
        double seconds = (System.nanoTime() - t0) / 1e9;
        long after = lastTick(c.log);
        Cri.ContainerStatus s = cri.containerStatus(c.id);
        if (s.getState() != Cri.ContainerState.CONTAINER_RUNNING) {
            throw new CaseFailed(when + ": the container is " + s.getState() + " after CheckpointContainer, not running");
        }
        List<String> entries = run("tar", "-tf", archive.toString()).lines().map(e -> e.replaceFirst("^\\./", "")).toList();
        for (String entry : List.of("checkpoint/inventory.img", "config.dump", "spec.dump", "dump.log", "container.log")) {
            if (!entries.contains(entry)) throw new CaseFailed(when + ": " + archive + " lacks " + entry);
        }
        String dumpLog = archiveEntry(archive, "dump.log");
        keep(dumpLog, when + "-dump.log");
        mustHold(dumpLog, need("dump-line"), when + ": the archive's dump.log");
        awaitTick(c.log, after + 5, when + ": the counter to go on after CheckpointContainer");
        long mib = sizeMib(archive);
        int copied = programLines(archiveEntry(archive, "container.log")).size();
        // the pod gone, as when the kubelet's node is drained
        cri.stopContainer(c.id, 0);
        cri.removeContainer(c.id);
        removePod(c.pod);
        return new Checkpointed(archive, before, after, copied, seconds, mib);
    }

    private Running restore(Checkpointed k, String gpu, String when) {
        Pod pod = runPod();
        long t0 = System.nanoTime();
        String id = cri.createContainer(pod.id, counter(k.archive.toString(), gpu), pod.config);
        cri.startContainer(id);
        double seconds = (System.nanoTime() - t0) / 1e9;
        Running r = running(pod, id, seconds);
        if (!"true".equals(cri.containerStatus(id).getAnnotationsMap().get("restored"))) {
            throw new CaseFailed(when + ": the new container is not restored (no restored=true annotation)");
        }
        String restoreLog = run("cat", TASKS + id + "/restore.log");
        keep(restoreLog, when + "-restore.log");
        mustHold(restoreLog, need("restore-line"), when + ": restore.log");
        awaitTick(r.log, k.tickAfter + 10, when + ": the restored counter to go on");
        List<String> restoredLog = lines(r.log);   // once: the counter appends while it is read
        List<Long> ticks = tickValues(restoredLog.subList(k.copied, restoredLog.size()));
        long first = ticks.getFirst();
        if (first <= k.tickBefore || first > k.tickAfter + 1) {
            throw new CaseFailed(when + ": the restored counter starts at " + first + ", not right after a tick it had"
                    + " while CheckpointContainer ran (" + k.tickBefore + " before it, " + k.tickAfter + " after)");
        }
        for (int i = 1; i < ticks.size(); i++) {
            if (ticks.get(i) != ticks.get(i - 1) + 1) {
                throw new CaseFailed(when + ": tick " + ticks.get(i) + " follows " + ticks.get(i - 1) + " in " + r.log);
            }
        }
        verify(r, when);
        return r;
    }

    /** SIGUSR1: the counter checks its GPU memory against the pattern and prints "verify counter=N bad=M". */
    private void verify(Running r, String when) {
        int before = count(r.log, "verify counter=");
        run("kill", "-USR1", Long.toString(r.pid));
        await(when + ": the counter's memory check", () -> count(r.log, "verify counter=") > before);
        String line = lines(r.log).stream().filter(l -> l.contains("verify counter=")).reduce((a, b) -> b).orElseThrow();
        if (!line.endsWith(" bad=0")) throw new CaseFailed(when + ": " + line);
    }

    /** StopContainer: SIGTERM, the counter checks its memory once more and exits. */
    private void stop(Running r) {
        cri.stopContainer(r.id, 60);
        String exit = lines(r.log).stream().filter(l -> l.contains("exit counter=")).findFirst()
                .orElseThrow(() -> new CaseFailed("no exit line of the counter after StopContainer"));
        if (!exit.endsWith(" bad=0")) throw new CaseFailed("at exit: " + exit);
        cri.removeContainer(r.id);
        removePod(r.pod);
    }

    private Running running(Pod pod, String id, double restoreSeconds) {
        Cri.ContainerStatusResponse s = cri.containerStatusVerbose(id);
        if (s.getStatus().getState() != Cri.ContainerState.CONTAINER_RUNNING) {
            throw new CaseFailed("container " + id + " is " + s.getStatus().getState() + " after StartContainer");
        }
        Matcher m = Pattern.compile("\"pid\":\\s*(\\d+)").matcher(s.getInfoOrDefault("info", ""));
        if (!m.find()) throw new CaseFailed("ContainerStatus (verbose) gives no pid for " + id);
        long pid = Long.parseLong(m.group(1));
        String devices;
        try (var d = Files.list(Path.of("/proc/" + pid + "/root/dev"))) {
            devices = d.map(p -> p.getFileName().toString()).filter(n -> n.startsWith("nvidia")).sorted().toList().toString();
        } catch (IOException e) {
            devices = "(cannot list /proc/" + pid + "/root/dev: " + e.getMessage() + ")";
        }
        return new Running(pod, id, Path.of(s.getStatus().getLogPath()), pid, devices, restoreSeconds);
    }

    private Pod runPod() {
        String uid = UUID.randomUUID().toString();
        String logDir = "/var/log/pods/default_" + name + "_" + uid;
        try {
            Files.createDirectories(Path.of(logDir, "counter"));   // the kubelet makes the pod's log directory
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        Cri.PodSandboxConfig config = Cri.PodSandboxConfig.newBuilder()
                .setMetadata(Cri.PodSandboxMetadata.newBuilder().setName(name).setNamespace("default").setUid(uid))
                .setLogDirectory(logDir)
                .putLabels("io.kubernetes.pod.name", name)
                .putLabels("io.kubernetes.pod.namespace", "default")
                .putLabels("io.kubernetes.pod.uid", uid)
                .setLinux(Cri.LinuxPodSandboxConfig.newBuilder()
                        .setSecurityContext(Cri.LinuxSandboxSecurityContext.newBuilder().setNamespaceOptions(namespaces())))
                .build();
        return new Pod(cri.runPodSandbox(config), config);
    }

    private void removePod(Pod pod) {
        cri.stopPodSandbox(pod.id);
        cri.removePodSandbox(pod.id);
        run("rm", "-rf", pod.config.getLogDirectory());
    }

    /** The counter container; {@code image} an image or a checkpoint archive's path, {@code gpu} a CDI device name. */
    private Cri.ContainerConfig counter(String image, String gpu) {
        return Cri.ContainerConfig.newBuilder()
                .setMetadata(Cri.ContainerMetadata.newBuilder().setName("counter"))
                .setImage(Cri.ImageSpec.newBuilder().setImage(image))
                .addAllCommand(command)
                .setLogPath("counter/0.log")
                .putLabels("io.kubernetes.container.name", "counter")
                .addAllCDIDevices(gpu.isEmpty() ? List.of() : List.of(Cri.CDIDevice.newBuilder().setName(gpu).build()))
                .setLinux(Cri.LinuxContainerConfig.newBuilder()
                        .setSecurityContext(Cri.LinuxContainerSecurityContext.newBuilder().setNamespaceOptions(namespaces())))
                .build();
    }

    /** hostNetwork (this node has no CNI), a pid namespace per container. */
    private static Cri.NamespaceOption namespaces() {
        return Cri.NamespaceOption.newBuilder().setNetwork(Cri.NamespaceMode.NODE)
                .setPid(Cri.NamespaceMode.CONTAINER).setIpc(Cri.NamespaceMode.POD).build();
    }

    // ------------------------------------------------------------------ logs, files, processes

    /** A criu log kept in log-dir (when given) as NAME-WHAT, spaces made dashes. */
    private void keep(String text, String what) {
        String dir = opt.getOrDefault("log-dir", "");
        if (dir.isEmpty()) return;
        try {
            Files.writeString(Path.of(dir, name + "-" + what.replace(' ', '-')), text);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The newest restore.log among the node's tasks (a restore that failed leaves its task's bundle behind). */
    private String lastRestoreLog() {
        String newest = runOrNull("sh", "-c", "ls -t " + TASKS + "*/restore.log 2>/dev/null | head -n1");
        if (newest == null || newest.isBlank()) return "";
        String text = runOrNull("cat", newest.strip());
        if (text == null) return "";
        keep(text, "failed-restore.log");
        return text;
    }

    /** Every container and pod of this node stopped and removed (after a failed restore). */
    private void cleanUp() {
        for (String id : cri.containerIds()) {
            cri.stopContainer(id, 0);
            cri.removeContainer(id);
        }
        for (String id : cri.podSandboxIds()) {
            cri.stopPodSandbox(id);
            cri.removePodSandbox(id);
        }
    }

    private String need(String key) {
        String v = opt.get(key);
        if (v == null || v.isEmpty()) throw new CaseFailed("missing " + key + "=...");
        return v;
    }

    /** The program's lines of a CRI log file (the runtime's timestamp and stream taken off). */
    private static List<String> lines(Path criLog) {
        if (!Files.exists(criLog)) return List.of();
        try {
            return programLines(Files.readString(criLog));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static List<String> programLines(String criLog) {
        List<String> out = new ArrayList<>();
        for (String l : criLog.lines().toList()) {
            Matcher m = LOG_LINE.matcher(l);
            if (m.matches()) out.add(m.group(1));
        }
        return out;
    }

    private static List<Long> tickValues(List<String> lines) {
        List<Long> out = new ArrayList<>();
        for (String l : lines) {
            Matcher m = TICK.matcher(l);
            if (m.matches()) out.add(Long.parseLong(m.group(1)));
        }
        return out;
    }

    private static long lastTick(Path criLog) {
        List<Long> t = tickValues(lines(criLog));
        return t.isEmpty() ? 0 : t.getLast();
    }

    private static int count(Path criLog, String part) {
        return (int) lines(criLog).stream().filter(l -> l.contains(part)).count();
    }

    private static void awaitTick(Path criLog, long tick, String what) {
        await(what, () -> lastTick(criLog) >= tick);
    }

    /** A bounded poll: the counter's log file is written by the runtime, which tells nobody. */
    private static void await(String what, java.util.function.BooleanSupplier done) {
        long end = System.nanoTime() + PROGRESS.toNanos();
        while (!done.getAsBoolean()) {
            if (System.nanoTime() > end) throw new CaseFailed("timed out after " + PROGRESS.toSeconds() + " s waiting for " + what);
            try {
                TimeUnit.MILLISECONDS.sleep(50);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new CaseFailed("interrupted waiting for " + what);
            }
        }
    }

    private static void mustHold(String text, String regex, String what) {
        if (text.lines().noneMatch(Pattern.compile(regex).asPredicate())) {
            throw new CaseFailed(what + " has no line matching /" + regex + "/");
        }
    }

    private static String archiveEntry(Path archive, String entry) {
        String out = runOrNull("tar", "-xOf", archive.toString(), entry);
        return out != null ? out : run("tar", "-xOf", archive.toString(), "./" + entry);
    }

    /** The host pids of processes named like the counter (its command's file name). */
    private List<String> counterProcesses() {
        String comm = Path.of(command.getFirst()).getFileName().toString();
        String out = runOrNull("pgrep", "-x", comm.length() > 15 ? comm.substring(0, 15) : comm);
        return out == null ? new ArrayList<>() : new ArrayList<>(out.lines().toList());
    }

    private static long sizeMib(Path p) {
        try {
            return Files.size(p) >> 20;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static void deleteArchive(Path archive) {
        try {
            Files.deleteIfExists(archive);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static String run(String... argv) {
        String out = runOrNull(argv);
        if (out == null) throw new CaseFailed("`" + String.join(" ", argv) + "` failed");
        return out;
    }

    /** stdout of argv, or null when it exits non-zero. */
    private static String runOrNull(String... argv) {
        try {
            Process p = new ProcessBuilder(argv).redirectError(ProcessBuilder.Redirect.DISCARD).start();
            String out = new String(p.getInputStream().readAllBytes());
            if (!p.waitFor(CALL.toSeconds(), TimeUnit.SECONDS)) {
                p.destroyForcibly();
                return null;
            }
            return p.exitValue() == 0 ? out : null;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CaseFailed("interrupted running " + argv[0]);
        }
    }

    private static String tail(Path file, int lines) {
        try {
            List<String> all = Files.readAllLines(file);
            return String.join("\n", all.subList(Math.max(0, all.size() - lines), all.size()));
        } catch (IOException e) {
            return "(cannot read " + file + ": " + e.getMessage() + ")";
        }
    }

    private static String fmt(double seconds) {
        return String.format("%.2f", seconds);
    }

    private static long size(Path file) {
        try {
            return Files.size(file);
        } catch (IOException e) {
            return 0;
        }
    }

    /** The lines of {@code file} past its first {@code offset} bytes (empty where it cannot be read). */
    private static List<String> linesAfter(Path file, long offset) {
        try (java.io.InputStream in = Files.newInputStream(file)) {
            in.skipNBytes(Math.min(offset, Files.size(file)));
            return new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8).lines().toList();
        } catch (IOException e) {
            return List.of();
        }
    }
}
