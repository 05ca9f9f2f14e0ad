package dev.criugpu.it.cri;

import dev.criugpu.it.CommandResult;
import dev.criugpu.it.DockerRequired;
import dev.criugpu.it.Eventually;
import dev.criugpu.it.cri.api.Cri;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.regex.Pattern;

import static dev.criugpu.it.PluginLogLines.assertOneLine;
import static dev.criugpu.it.PluginLogLines.assertPluginsLoaded;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Kubernetes' way, on the CPU: what the kubelet does through containerd's CRI (containerd 2.1.9, runc 1.3.6, criu
 * 4.2.1, all Debian's) with our plugin dir as criu's default /usr/lib/criu. A pod runs a shell counter; the kubelet's
 * checkpoint call (CRI CheckpointContainer) writes a checkpoint archive and leaves the container running; the
 * container and its pod are removed; a new pod is run and a container created whose image is the checkpoint
 * archive's path on the node, which containerd 2.x takes for a checkpoint to restore (its CreateContainer stats the
 * image name: an existing file is a checkpoint archive), and StartContainer restores it with criu. The counter goes
 * on from where the checkpoint caught it. That is done ROUNDS times in a row, each round checkpointing the container
 * the round before restored. criu, run by runc, loads both plugins, which disable themselves (no GPU)
 * and say so in the dump.log the archive carries.
 */
@ExtendWith(DockerRequired.class)
class CriCheckpointIT {
    private static final String IMAGE = "localhost:5000/criu-gpu-cri/busybox:1";
    private static final String ARCHIVE = "/var/lib/criu-gpu-cri/counter-checkpoint.tar";
    /** The program: a shell counter writing 1, 2, 3, ... to its stdout, which the CRI log file keeps. */
    private static final String COUNTER = "i=0; while :; do i=$((i+1)); echo $i; sleep 0.1; done";
    private static final Duration PROGRESS_TIMEOUT = Duration.ofSeconds(30);
    /** Checkpoint and restore rounds, each of the container the round before restored (issue 43: 5, as on the GPU). */
    private static final int ROUNDS = 5;
    private static final Pattern CRI_LOG_LINE = Pattern.compile("^\\S+ stdout F (\\d+)$");

    @Test
    void checkpointsThroughCriAndRestoresFromTheArchiveInANewPod() {
        try (CriNode node = CriNode.start(true)) {
            node.startContainerd().orFail();
            try (CriClient cri = node.client()) {
                Cri.VersionResponse version = cri.version();
                assertEquals("containerd", version.getRuntimeName(), version.toString());
                assertTrue(version.getRuntimeVersion().startsWith("2."), "containerd 2.x expected: " + version);
                cri.pullImage(IMAGE);

                // the pod and its counter, as the kubelet creates them
                Cri.PodSandboxConfig pod1 = pod(node);
                String sandbox1 = cri.runPodSandbox(pod1);
                String counter1 = cri.createContainer(sandbox1, counter(IMAGE), pod1);
                cri.startContainer(counter1);
                String log1 = cri.containerStatus(counter1).getLogPath();
                awaitCount(node, log1, 1, 3);

                // ROUNDS times: the kubelet's checkpoint of the container the round before restored, then its restore
                String counter = counter1, sandbox = sandbox1, log0 = log1;
                Cri.PodSandboxConfig pod = pod1;
                for (int round = 1; round <= ROUNDS; round++) {
                    // the kubelet's checkpoint: the archive is written, the container goes on running
                    long before = lastValue(node, log0);
                    node.exec("rm", "-f", ARCHIVE).orFail();
                    cri.checkpointContainer(counter, ARCHIVE, Duration.ofSeconds(60));
                    long after = lastValue(node, log0);
                    assertEquals(Cri.ContainerState.CONTAINER_RUNNING, cri.containerStatus(counter).getState(),
                            "CheckpointContainer leaves the container running");
                    List<String> entries = node.exec("tar", "-tf", ARCHIVE).orFail().stdout().lines()
                            .map(e -> e.replaceFirst("^\\./", "")).toList();
                    for (String entry : List.of("checkpoint/inventory.img", "checkpoint/pstree.img", "config.dump",
                            "spec.dump", "status.dump", "dump.log", "container.log")) {
                        assertTrue(entries.contains(entry), ARCHIVE + " lacks " + entry + ": " + entries);
                    }
                    String dumpLog = archiveEntry(node, "dump.log");
                    assertPluginsLoaded(dumpLog, "the archive's dump.log");
                    assertOneLine(dumpLog, "dump.log", "cuda_plugin: disabled: no NVIDIA GPU\\b.+");
                    assertOneLine(dumpLog, "dump.log", "amdgpu_plugin: disabled: no AMD GPU\\b.+");
                    // the base image the restore pulls again: by digest, from its registry
                    String config = archiveEntry(node, "config.dump");
                    assertTrue(config.contains("\"rootfsImageRef\":\"localhost:5000/criu-gpu-cri/busybox@sha256:"),
                            "config.dump: " + config);
                    List<Long> logAtCheckpoint = values(archiveEntry(node, "container.log"));
                    if (round == 1) assertConsecutiveFrom(1, logAtCheckpoint, "container.log in the archive");

                    // gone: container and pod
                    cri.stopContainer(counter, 0);
                    cri.removeContainer(counter);
                    cri.stopPodSandbox(sandbox);
                    cri.removePodSandbox(sandbox);
                    node.exec("rm", "-rf", pod.getLogDirectory()).orFail();   // as the kubelet does with a removed pod's logs
                    assertTrue(node.exec("sh", "-c", "ps -e -o args | grep -v grep | grep -q 'i=0; while'").exitCode() == 1,
                            "the counter still runs after its container and pod were removed");

                    // a new pod; a container whose image is the checkpoint archive
                    Cri.PodSandboxConfig pod2 = pod(node);
                    String sandbox2 = cri.runPodSandbox(pod2);
                    String counter2 = cri.createContainer(sandbox2, counter(ARCHIVE), pod2);
                    cri.startContainer(counter2);
                    Cri.ContainerStatus restored = cri.containerStatus(counter2);
                    assertEquals(Cri.ContainerState.CONTAINER_RUNNING, restored.getState(), restored.toString());
                    assertEquals("true", restored.getAnnotationsMap().get("restored"), "containerd's restored annotation");
                    String log2 = restored.getLogPath();

                    // The new log starts with the archive's container.log; the restored process appends to it.
                    int copied = logAtCheckpoint.size();
                    awaitCount(node, log2, copied + 1, 10);
                    List<Long> log = values(node.exec("cat", log2).orFail().stdout());
                    assertEquals(logAtCheckpoint, log.subList(0, copied), "the restored container's log does not start "
                            + "with the archive's container.log");
                    List<Long> restoredValues = log.subList(copied, log.size());
                    long first = restoredValues.getFirst();
                    assertTrue(first > before && first <= after + 1, "the restored counter's first value " + first
                            + " is not right after a value the counter had while CheckpointContainer ran (" + before
                            + " before the call, " + after + " after it)");
                    assertTrue(first <= logAtCheckpoint.getLast() + 1, "first value " + first + " after the checkpoint's log "
                            + "(its last value " + logAtCheckpoint.getLast() + ")");
                    assertConsecutiveFrom(first, restoredValues, log2 + " after the restore");
                    assertTrue(restoredValues.getLast() > first + 8, "the restored counter did not go on: " + restoredValues);

                    System.out.println("CriCheckpointIT: round " + round + ": counter at " + before + " before "
                            + "CheckpointContainer, " + after + " after it; the archive's container.log holds " + copied
                            + " values; restored counter: " + first + ".." + restoredValues.getLast() + " in " + log2);
                    // runc runs criu restore in the task's bundle directory, where its restore.log stays
                    String restoreLog = node.exec("cat", "/var/lib/criu-gpu-cri/containerd/io.containerd.runtime.v2.task/k8s.io/"
                            + counter2 + "/restore.log").orFail().stdout();
                    assertPluginsLoaded(restoreLog, "restore.log");
                    assertOneLine(restoreLog, "restore.log", "cuda_plugin: disabled: the image holds no CUDA state");
                    assertOneLine(restoreLog, "restore.log", "amdgpu_plugin: disabled: the image holds no AMDGPU state");
                    assertTrue(restoreLog.lines().noneMatch(l -> l.contains("entered Java")),
                            "a disabled plugin entered Java:\n" + restoreLog);
                    System.out.println("CriCheckpointIT: dump.log and restore.log, plugin lines:\n"
                            + String.join("\n", (dumpLog + restoreLog).lines().filter(l -> l.contains("plugin")).toList()));
                    counter = counter2;
                    sandbox = sandbox2;
                    pod = pod2;
                    log0 = log2;
                }

                cri.stopContainer(counter, 0);
                cri.removeContainer(counter);
                cri.stopPodSandbox(sandbox);
                cri.removePodSandbox(sandbox);
            }
        }
    }

    /**
     * containerd pulls the checkpoint's base image (by digest) again when it restores: with its registry out of reach,
     * CreateContainer fails with containerd's line saying so, and nothing is restored.
     */
    @Test
    void restoreFailsInOneLineWhenTheBaseImagesRegistryIsOutOfReach() {
        try (CriNode node = CriNode.start(true)) {
            node.startContainerd().orFail();
            try (CriClient cri = node.client()) {
                checkpointedAndRemoved(node, cri);
                node.exec("pkill", "-x", "docker-registry").orFail();   // the node's own registry, in its container
                Eventually.await("the registry to stop", PROGRESS_TIMEOUT,
                        () -> node.exec("pgrep", "-x", "docker-registry").exitCode() == 1);

                Cri.PodSandboxConfig pod2 = pod(node);
                String sandbox2 = cri.runPodSandbox(pod2);
                AssertionError e = assertThrows(AssertionError.class,
                        () -> cri.createContainer(sandbox2, counter(ARCHIVE), pod2));
                String first = e.getMessage().lines().findFirst().orElse("");
                assertTrue(first.startsWith("CRI CreateContainer failed: UNKNOWN: failed to pull checkpoint base image "
                        + "localhost:5000/criu-gpu-cri/busybox@sha256:"), first);
                System.out.println("CriCheckpointIT: " + first);
            }
        }
    }

    /**
     * A device restore that fails after criu forked (on a GPU host: the driver refusing to move a container's task onto
     * another GPU; here the plugins' fault switch in forced mode) fails StartContainer with runc's line, which does not
     * say why, and containerd deletes the task directory with criu's restore.log; it does not copy the task's output
     * before a restore succeeded either. The plugin's error line naming the pid and the reason is in the node's system
     * log (the journal where systemd runs; busybox's syslogd here); the counter was killed, not left running.
     */
    @Test
    void aFailedDeviceRestoreSaysWhyInTheNodesSystemLog() {
        try (CriNode node = CriNode.start(true)) {
            node.exec("busybox", "syslogd", "-O", "/var/log/messages").orFail();
            node.startContainerd("CRIU_GPU_PLUGIN_FORCE=1", "CRIU_GPU_FAULT=cuda_plugin:resume-devices-late").orFail();
            try (CriClient cri = node.client()) {
                checkpointedAndRemoved(node, cri);

                Cri.PodSandboxConfig pod2 = pod(node);
                String sandbox2 = cri.runPodSandbox(pod2);
                String counter2 = cri.createContainer(sandbox2, counter(ARCHIVE), pod2);
                AssertionError e = assertThrows(AssertionError.class, () -> cri.startContainer(counter2));
                String first = e.getMessage().lines().findFirst().orElse("");
                assertTrue(first.startsWith("CRI StartContainer failed: ") && first.contains("criu failed: type RESTORE"),
                        e.getMessage());

                String messages = node.exec("cat", "/var/log/messages").orFail().stdout();
                List<String> ours = messages.lines().filter(l -> l.matches(".* criu(\\[\\d+\\])?: Error \\(cuda_plugin\\): pid \\d+: "
                        + "device restore failed \\(fault injected by CRIU_GPU_FAULT\\); killed it so that it cannot run "
                        + "without its GPU state.*")).toList();
                assertEquals(1, ours.size(), "the plugin's error line in the node's system log:\n" + messages);
                assertTrue(node.exec("sh", "-c", "ps -e -o args | grep -v grep | grep -q 'i=0; while'").exitCode() == 1,
                        "the counter runs after its restore failed");
                System.out.println("CriCheckpointIT: " + first + "\nCriCheckpointIT: in the node's system log: " + ours.getFirst());
            }
        }
    }

    /**
     * A container whose first process holds a zombie child restores with the plugins forced to start Java in criu: the
     * zombie dies again during the restore, its parent stops under criu's ptrace with SIGCHLD, and criu lets it go on
     * only from its own SIGCHLD handler, which a process that Java started in criu had reset (StartContainer hung;
     * passes with either fix: no process started by a restore, or the shim putting criu's handler back).
     */
    @Test
    void restoresAContainerHoldingAZombieWithThePluginsForced() {
        try (CriNode node = CriNode.start(true)) {
            node.startContainerd("CRIU_GPU_PLUGIN_FORCE=1").orFail();
            try (CriClient cri = node.client()) {
                String parent = counting(node, cri, zombieParent(IMAGE)).container();
                Eventually.await("the zombie child", PROGRESS_TIMEOUT, () -> zombies(node) == 1);
                cri.checkpointContainer(parent, ARCHIVE, Duration.ofSeconds(60));

                // the original runs on (removing it right after the checkpoint races in containerd: "ttrpc: closed")
                Cri.PodSandboxConfig pod2 = pod(node);
                String sandbox2 = cri.runPodSandbox(pod2);
                String restored = cri.createContainer(sandbox2, zombieParent(ARCHIVE), pod2);
                cri.startContainer(restored);
                assertEquals(Cri.ContainerState.CONTAINER_RUNNING, cri.containerStatus(restored).getState());
                String ps = node.exec("ps", "-e", "-o", "stat,args").orFail().stdout();
                assertEquals(2, ps.lines().filter(l -> l.endsWith(" busybox tail -f /dev/null")).count(), "the original and the restored parent:\n" + ps);
            }
        }
    }

    /** The zombie maker: a child that exits under a parent (tail) that never waits for it. */
    private static Cri.ContainerConfig zombieParent(String image) {
        return counter(image).toBuilder().clearCommand().addCommand("/bin/sh").addCommand("-c")
                .addCommand("echo 1; echo 2; echo 3; sleep 0.2 & exec busybox tail -f /dev/null").build();
    }

    private static long zombies(CriNode node) {
        return node.exec("ps", "-e", "-o", "stat,args").orFail().stdout().lines().filter(l -> l.startsWith("Z")).count();
    }

    /** Where containerd's criu does not find the plugins, the node's check says so in one line before anything runs. */
    @Test
    void saysInOneLineWhenThePluginDirIsNotWhereContainerdsCriuLooks() {
        try (CriNode node = CriNode.start(false)) {
            CommandResult r = node.startContainerd();
            assertEquals(1, r.exitCode(), r.describe());
            List<String> lines = r.stderr().lines().toList();
            assertEquals(List.of(
                    "criu-gpu-cri: /usr/lib/criu/cuda_plugin.so is missing: criu run by containerd/runc loads plugins "
                            + "only from /usr/lib/criu (it gets no --lib and no environment); copy the plugin dir there "
                            + "(cp -r native/target/criu-lib/. /usr/lib/criu/)",
                    "criu-gpu-cri: /usr/lib/criu/amdgpu_plugin.so is missing: criu run by containerd/runc loads plugins "
                            + "only from /usr/lib/criu (it gets no --lib and no environment); copy the plugin dir there "
                            + "(cp -r native/target/criu-lib/. /usr/lib/criu/)"), lines);
        }
    }

    /** A counter started in a pod, checkpointed to {@link #ARCHIVE} once it counted, then removed with its pod. */
    private static void checkpointedAndRemoved(CriNode node, CriClient cri) {
        Running counter = counting(node, cri, counter(IMAGE));
        cri.checkpointContainer(counter.container(), ARCHIVE, Duration.ofSeconds(60));
        cri.stopContainer(counter.container(), 0);
        cri.removeContainer(counter.container());
        cri.stopPodSandbox(counter.sandbox());
        cri.removePodSandbox(counter.sandbox());
    }

    private record Running(String sandbox, String container) {
    }

    /** {@code config}'s container started in a new pod, once its log holds three lines. */
    private static Running counting(CriNode node, CriClient cri, Cri.ContainerConfig config) {
        cri.pullImage(IMAGE);
        Cri.PodSandboxConfig pod = pod(node);
        String sandbox = cri.runPodSandbox(pod);
        String container = cri.createContainer(sandbox, config, pod);
        cri.startContainer(container);
        awaitCount(node, cri.containerStatus(container).getLogPath(), 1, 3);
        return new Running(sandbox, container);
    }

    /** A pod as the kubelet describes one with hostNetwork (no CNI on this node; so no hostname of its own either) and its own log directory. */
    private static Cri.PodSandboxConfig pod(CriNode node) {
        String uid = UUID.randomUUID().toString();
        String logDir = "/var/log/pods/default_counter_" + uid;
        node.exec("mkdir", "-p", logDir + "/counter").orFail();   // the kubelet makes the pod's log directory
        Cri.NamespaceOption ns = Cri.NamespaceOption.newBuilder()
                .setNetwork(Cri.NamespaceMode.NODE).setPid(Cri.NamespaceMode.CONTAINER).setIpc(Cri.NamespaceMode.POD)
                .build();
        return Cri.PodSandboxConfig.newBuilder()
                .setMetadata(Cri.PodSandboxMetadata.newBuilder().setName("counter").setNamespace("default").setUid(uid))
                .setLogDirectory(logDir)
                .putLabels("io.kubernetes.pod.name", "counter")
                .putLabels("io.kubernetes.pod.namespace", "default")
                .putLabels("io.kubernetes.pod.uid", uid)
                .setLinux(Cri.LinuxPodSandboxConfig.newBuilder()
                        .setSecurityContext(Cri.LinuxSandboxSecurityContext.newBuilder().setNamespaceOptions(ns)))
                .build();
    }

    /** The counter container; {@code image} is an image name, or the path of a checkpoint archive to restore. */
    private static Cri.ContainerConfig counter(String image) {
        Cri.NamespaceOption ns = Cri.NamespaceOption.newBuilder()
                .setNetwork(Cri.NamespaceMode.NODE).setPid(Cri.NamespaceMode.CONTAINER).setIpc(Cri.NamespaceMode.POD)
                .build();
        return Cri.ContainerConfig.newBuilder()
                .setMetadata(Cri.ContainerMetadata.newBuilder().setName("counter"))
                .setImage(Cri.ImageSpec.newBuilder().setImage(image))
                .addCommand("/bin/sh").addCommand("-c").addCommand(COUNTER)
                .setLogPath("counter/0.log")
                .putLabels("io.kubernetes.container.name", "counter")
                .setLinux(Cri.LinuxContainerConfig.newBuilder()
                        .setSecurityContext(Cri.LinuxContainerSecurityContext.newBuilder().setNamespaceOptions(ns)))
                .build();
    }

    private static String archiveEntry(CriNode node, String entry) {
        return node.sh("tar -xOf " + ARCHIVE + " " + entry + " 2>/dev/null || tar -xOf " + ARCHIVE + " ./" + entry)
                .orFail().stdout();
    }

    /** The counter's values in a CRI log file's text (lines "TIME stdout F VALUE"). */
    private static List<Long> values(String criLog) {
        List<Long> values = new ArrayList<>();
        for (String line : criLog.lines().toList()) {
            var m = CRI_LOG_LINE.matcher(line);
            if (!m.matches()) throw new AssertionError("not a counter line of a CRI log: '" + line + "'");
            values.add(Long.parseLong(m.group(1)));
        }
        return values;
    }

    private static long lastValue(CriNode node, String log) {
        List<Long> v = values(node.exec("cat", log).orFail().stdout());
        return v.isEmpty() ? 0 : v.getLast();
    }

    /** Waits until the log holds at least {@code from + more - 1} lines. */
    private static void awaitCount(CriNode node, String log, int from, int more) {
        int lines = from + more - 1;
        Eventually.await(log + " to hold " + lines + " lines", PROGRESS_TIMEOUT,
                () -> node.exec("cat", log).succeeded() && values(node.exec("cat", log).stdout()).size() >= lines,
                node::logs);
    }

    private static void assertConsecutiveFrom(long first, List<Long> values, String what) {
        assertTrue(!values.isEmpty(), what + " is empty");
        for (int k = 0; k < values.size(); k++) {
            if (values.get(k) != first + k) {
                throw new AssertionError(what + ": value " + values.get(k) + " at position " + k + " breaks the "
                        + "sequence from " + first + " (around: "
                        + values.subList(Math.max(0, k - 3), Math.min(values.size(), k + 3)) + ")");
            }
        }
    }
}
