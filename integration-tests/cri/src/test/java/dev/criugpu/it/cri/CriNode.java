package dev.criugpu.it.cri;

import com.github.dockerjava.api.model.Capability;
import dev.criugpu.it.CommandResult;
import dev.criugpu.it.ContainerExec;
import dev.criugpu.it.PluginDir;
import org.testcontainers.containers.BindMode;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.utility.DockerImageName;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.UUID;

/**
 * A Kubernetes node without a kubelet: a Docker container of the image {@value #IMAGE} (integration-tests/cri/
 * build-image.sh) running Debian's containerd 2.1.9 (CRI), runc 1.3.6 and criu 4.2.1, with this build's plugin dir as
 * criu's default plugin directory /usr/lib/criu (read-only). containerd's CRI socket is in a directory shared with
 * this host, so the test's {@link CriClient} talks to it as a kubelet would. The container gets what PodmanHost's
 * gets: all capabilities but CAP_SYS_RESOURCE, no seccomp/apparmor, a private cgroup namespace, the cgroup and
 * /proc/sys mounts writable, an init.
 */
final class CriNode implements AutoCloseable {
    static final String IMAGE = "criu-gpu-cri-node:4.2.1";
    static final String NODE_SCRIPT = "/opt/cri/node.sh";
    private static final String SOCKET_DIR = "/run/criu-gpu-cri-sock";

    private final GenericContainer<?> container;
    final String name;
    final Path socket;

    private CriNode(GenericContainer<?> container, String name, Path socket) {
        this.container = container;
        this.name = name;
        this.socket = socket;
    }

    /** A started container; the plugin dir of this build at /usr/lib/criu when {@code withPlugins}. */
    static CriNode start(boolean withPlugins) {
        ContainerExec.requireImage(IMAGE, "integration-tests/cri/build-image.sh");
        Path criDir = Path.of(System.getProperty("criugpu.cri.dir", "cri")).toAbsolutePath();
        String name = "criu-gpu-cri-" + UUID.randomUUID().toString().substring(0, 8);
        Path socketDir = Path.of(System.getProperty("criugpu.work.dir", "target/it-work")).toAbsolutePath().resolve(name);
        try {
            Files.createDirectories(socketDir);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        GenericContainer<?> c = new GenericContainer<>(DockerImageName.parse(IMAGE))
                .withCommand("sleep", "infinity")
                .withFileSystemBind(criDir.toString(), "/opt/cri", BindMode.READ_ONLY)
                .withFileSystemBind(socketDir.toString(), SOCKET_DIR, BindMode.READ_WRITE)
                .withCreateContainerCmdModifier(cmd -> cmd.withName(name).getHostConfig()
                        .withCapAdd(Capability.ALL)
                        .withCapDrop(Capability.SYS_RESOURCE)
                        .withSecurityOpts(List.of("seccomp=unconfined", "apparmor=unconfined"))
                        .withCgroupnsMode("private")
                        .withInit(true));
        if (withPlugins) {
            // also where its jvm.options names it, with its JDK, for tests that make the plugins start Java (forced mode)
            PluginDir plugins = PluginDir.fromBuild();
            String dir = plugins.dir().toString(), jdk = plugins.javaHome().toString();
            c = c.withFileSystemBind(dir, "/usr/lib/criu", BindMode.READ_ONLY)
                    .withFileSystemBind(dir, dir, BindMode.READ_ONLY)
                    .withFileSystemBind(jdk, jdk, BindMode.READ_ONLY);
        }
        c.start();
        CriNode node = new CriNode(c, name, socketDir.resolve("containerd.sock"));
        node.sh("mount -o remount,rw /proc/sys").orFail();
        // cgroup v1: one read-only mount per controller; v2: /sys/fs/cgroup itself. containerd creates the pods' cgroups.
        node.sh("findmnt -rn -t cgroup,cgroup2 -o TARGET | while read -r m; do mount -o remount,bind,rw \"$m\" || exit 1; done")
                .orFail();
        return node;
    }

    /**
     * node.sh start: containerd and the local registry up, the test image pushed; its result, not checked.
     * {@code env} (NAME=VALUE) is containerd's environment besides the node's, which its shims, runc and criu inherit.
     */
    CommandResult startContainerd(String... env) {
        List<String> argv = new java.util.ArrayList<>(List.of("env"));
        argv.addAll(List.of(env));
        argv.addAll(List.of(NODE_SCRIPT, "start", SOCKET_DIR + "/containerd.sock"));
        return exec(argv.toArray(String[]::new));
    }

    CriClient client() {
        return new CriClient(socket, this::logs);
    }

    /** The last lines of containerd's and the registry's logs. */
    String logs() {
        CommandResult r = exec(NODE_SCRIPT, "logs", "60");
        return r.stdout() + r.stderr();
    }

    /** Runs argv in the container (no shell) and waits for it. */
    CommandResult exec(String... argv) {
        return ContainerExec.exec(container, name, argv);
    }

    /** Runs a /bin/sh script in the container and waits for it. */
    CommandResult sh(String script) {
        return ContainerExec.sh(container, name, script);
    }

    @Override
    public void close() {
        container.stop();
        try (var entries = Files.list(socket.getParent())) {
            for (Path p : entries.toList()) Files.deleteIfExists(p);
            Files.deleteIfExists(socket.getParent());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot remove " + socket.getParent(), e);
        }
    }
}
