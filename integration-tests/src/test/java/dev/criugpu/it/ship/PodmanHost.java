package dev.criugpu.it.ship;

import com.github.dockerjava.api.model.Capability;
import dev.criugpu.it.CommandResult;
import dev.criugpu.it.ContainerExec;
import dev.criugpu.it.ExecBound;
import org.testcontainers.containers.BindMode;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.utility.DockerImageName;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * A Docker container of the podman image (integration-tests/criu-image/build.sh podman) that runs podman inside it:
 * the criu container's capabilities, plus a private cgroup namespace (so the cgroup paths criu dumps are the ones
 * it finds again at restore) and the cgroup and /proc/sys mounts made writable (podman creates cgroups, criu
 * freezes through them and writes sysctls of the restored container's namespaces). The .deb and the test
 * workloads are mounted read-only.
 */
final class PodmanHost implements AutoCloseable {
    static final String IMAGE = "criu-java-gpu/podman:4.2.1";
    static final String DEB = "/opt/deb/criu-java-gpu.deb";
    static final String WORKLOADS = "/opt/workloads";

    /**
     * A podman command: a checkpoint or restore runs criu with our plugins (a JVM starts in it when they are forced)
     * besides podman's own work; on timeout, the criu logs podman keeps with each container are shown.
     */
    static final ExecBound PODMAN = ExecBound.of(Duration.ofSeconds(300)).showingLogs(
            "/var/lib/containers/storage/*-containers/*/userdata/dump.log",
            "/var/lib/containers/storage/*-containers/*/userdata/restore.log");

    private final GenericContainer<?> container;

    private PodmanHost(GenericContainer<?> container) {
        this.container = container;
    }

    static PodmanHost start(DebPackage deb) {
        ContainerExec.requireImage(IMAGE, "integration-tests/criu-image/build.sh podman");
        Path workloads = Path.of(System.getProperty("criugpu.workloads.dir", "target/workloads")).toAbsolutePath();
        if (!Files.isExecutable(workloads.resolve("counter"))) {
            throw new AssertionError("test workloads missing in " + workloads
                    + " (the pre-integration-test phase builds them: src/test/c/build-workloads.sh)");
        }
        GenericContainer<?> c = new GenericContainer<>(DockerImageName.parse(IMAGE))
                .withCommand("sleep", "infinity")
                .withEnv("PODMAN_IGNORE_CGROUPSV1_WARNING", "1")
                .withFileSystemBind(workloads.toString(), WORKLOADS, BindMode.READ_ONLY)
                .withFileSystemBind(deb.file().toAbsolutePath().toString(), DEB, BindMode.READ_ONLY)
                .withCreateContainerCmdModifier(cmd -> cmd.getHostConfig()
                        .withCapAdd(Capability.ALL)
                        .withCapDrop(Capability.SYS_RESOURCE)
                        .withSecurityOpts(List.of("seccomp=unconfined", "apparmor=unconfined"))
                        .withCgroupnsMode("private")
                        .withInit(true));
        c.start();
        PodmanHost host = new PodmanHost(c);
        host.sh("mount -o remount,rw /proc/sys").orFail();
        // cgroup v1: one read-only mount per controller; v2: /sys/fs/cgroup itself.
        host.sh("findmnt -rn -t cgroup,cgroup2 -o TARGET | while read -r m; do mount -o remount,bind,rw \"$m\" || exit 1; done")
                .orFail();
        return host;
    }

    /** Runs argv in the container (no shell) and waits for it. */
    CommandResult exec(String... argv) {
        return ContainerExec.exec(container, IMAGE, argv);
    }

    /** Runs a /bin/sh script in the container and waits for it. */
    CommandResult sh(String script) {
        return ContainerExec.sh(container, IMAGE, script);
    }

    CommandResult podman(String... args) {
        List<String> argv = new ArrayList<>(List.of("podman"));
        argv.addAll(List.of(args));
        return ContainerExec.exec(container, IMAGE, PODMAN, argv.toArray(String[]::new));
    }

    /** A container's field, e.g. {@code .State.Status}, as {@code podman inspect --format} prints it. */
    String inspect(String name, String field) {
        return podman("inspect", "--format", "{{" + field + "}}", name).orFail().stdout().strip();
    }

    String readFile(String path) {
        return exec("cat", path).orFail().stdout();
    }

    @Override
    public void close() {
        container.stop();
    }
}
