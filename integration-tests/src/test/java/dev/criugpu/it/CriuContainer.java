package dev.criugpu.it;

import com.github.dockerjava.api.model.Capability;
import com.github.dockerjava.api.model.Volume;
import org.testcontainers.containers.BindMode;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.images.builder.Transferable;
import org.testcontainers.utility.DockerImageName;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;

/**
 * A long-running container of one criu image, set up so criu can dump and restore inside it: all capabilities but
 * CAP_SYS_RESOURCE (which this sandbox lacks, so --privileged fails), no seccomp/apparmor, /proc/sys writable
 * (ns_last_pid), and an init (tini) as pid 1 that reaps the processes criu kills after a dump, so their pids are
 * free for the restore.
 *
 * Mounted read-only: the test workloads at {@link #WORKLOADS}, and when a plugin dir is given, that dir and the JDK
 * its criu-gpu.cfg names, each at the same path as on the host (its java/jvm.options names both by absolute path).
 * Optionally, anonymous Docker volumes (on the host's filesystem instead of the image's overlayfs; removed with the
 * container).
 */
public final class CriuContainer implements AutoCloseable {
    /** The plugin dir of this build, where it is on the host and in a container with plugins. */
    public static final String PLUGIN_DIR = PluginDir.buildPath().toString();
    public static final String WORKLOADS = "/opt/workloads";

    private final GenericContainer<?> container;
    public final CriuImage image;

    private CriuContainer(CriuImage asked, PluginDir plugins, List<String> volumes) {
        CriuImage image = asked.underTest();
        this.image = image;
        ContainerExec.requireImage(image.tag, "integration-tests/criu-image/build.sh");
        Path workloads = Path.of(System.getProperty("criugpu.workloads.dir", "target/workloads")).toAbsolutePath();
        if (!Files.isExecutable(workloads.resolve("counter"))) {
            throw new AssertionError("test workloads missing in " + workloads
                    + " (the pre-integration-test phase builds them: src/test/c/build-workloads.sh)");
        }
        GenericContainer<?> c = new GenericContainer<>(DockerImageName.parse(image.tag))
                .withCommand("sleep", "infinity")
                .withFileSystemBind(workloads.toString(), WORKLOADS, BindMode.READ_ONLY)
                .withCreateContainerCmdModifier(cmd -> cmd.getHostConfig()
                        .withCapAdd(Capability.ALL)
                        .withCapDrop(Capability.SYS_RESOURCE)
                        .withSecurityOpts(List.of("seccomp=unconfined", "apparmor=unconfined"))
                        .withInit(true));
        if (!volumes.isEmpty()) {
            c = c.withCreateContainerCmdModifier(cmd -> cmd.withVolumes(volumes.stream().map(Volume::new).toList()));
        }
        if (plugins != null) {
            String jdk = plugins.javaHome().toString();
            c = c.withFileSystemBind(plugins.dir().toString(), plugins.dir().toString(), BindMode.READ_ONLY)
                    .withFileSystemBind(jdk, jdk, BindMode.READ_ONLY);
        }
        this.container = c;
        container.start();
        // Docker mounts /proc/sys read-only (the API has no systempaths=unconfined); tests write ns_last_pid.
        sh("mount -o remount,rw /proc/sys").orFail();
        // the criu under test is the one the image says (a stale image, or -Dcriugpu.criu naming what is not there)
        String version = exec("criu", "--version").orFail().stdout().lines().filter(l -> l.startsWith("Version: "))
                .map(l -> l.substring("Version: ".length()).strip()).findFirst().orElse("(none)");
        if (!version.equals(image.criuVersion)) {
            container.stop();
            throw new AssertionError(image.tag + " runs criu " + version + ", not " + image.criuVersion
                    + ": rebuild it with integration-tests/criu-image/build.sh");
        }
        System.err.println("criu container: " + image.tag + " (criu " + version + ")");
    }

    /** A started container with criu and the workloads, no plugins. */
    public static CriuContainer start(CriuImage image) {
        return new CriuContainer(image, null, List.of());
    }

    /** A started container with the plugin dir (and its JDK) mounted. */
    public static CriuContainer startWithPlugins(CriuImage image, PluginDir plugins) {
        return new CriuContainer(image, plugins, List.of());
    }

    /** A started container, with the plugin dir (and its JDK) mounted unless null, and a volume at each path given. */
    public static CriuContainer start(CriuImage image, PluginDir plugins, List<String> volumes) {
        return new CriuContainer(image, plugins, volumes);
    }

    /** Runs argv in the container (no shell) and waits for it, at most {@link ExecBound#DEFAULT}. */
    public CommandResult exec(String... argv) {
        return ContainerExec.exec(container, image.tag, argv);
    }

    /** Runs a /bin/sh script in the container and waits for it, at most {@link ExecBound#DEFAULT}. */
    public CommandResult sh(String script) {
        return ContainerExec.sh(container, image.tag, script);
    }

    /** Runs a /bin/sh script in the container and waits for it, at most {@code bound}. */
    public CommandResult sh(ExecBound bound, String script) {
        return ContainerExec.sh(container, image.tag, bound, script);
    }

    public byte[] readBytes(String path) {
        try {
            return container.copyFileFromContainer(path, in -> in.readAllBytes());
        } catch (Exception e) {
            throw new AssertionError("cannot read " + path + " from " + image.tag, e);
        }
    }

    public String readFile(String path) {
        return new String(readBytes(path), StandardCharsets.UTF_8);
    }

    /** The file's text, or "" when it does not exist (e.g. a log criu never got to write). */
    public String readFileIfExists(String path) {
        return fileExists(path) ? readFile(path) : "";
    }

    public boolean fileExists(String path) {
        return exec("test", "-e", path).succeeded();
    }

    public void writeFile(String path, String content, int mode) {
        writeBytes(path, content.getBytes(StandardCharsets.UTF_8), mode);
    }

    public void writeBytes(String path, byte[] content, int mode) {
        container.copyFileToContainer(Transferable.of(content, mode), path);
    }

    /** Copies a host file into the container (mode 0600) and checks that the copy reads back byte for byte. */
    public void copyIn(Path hostFile, String path) {
        byte[] bytes;
        try {
            bytes = Files.readAllBytes(hostFile);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + hostFile, e);
        }
        writeBytes(path, bytes, 0600);
        if (!Arrays.equals(bytes, readBytes(path))) {
            throw new AssertionError(path + " in the container differs from " + hostFile + " after the copy");
        }
    }

    /** Copies a container file to this host (the reverse of {@link #copyIn}). */
    public void copyOut(String path, Path hostFile) {
        try {
            Files.createDirectories(hostFile.toAbsolutePath().getParent());
            Files.write(hostFile, readBytes(path));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + hostFile, e);
        }
    }

    /** Whether a process (running or zombie) holds this pid in the container's pid namespace. */
    public boolean pidInUse(int pid) {
        return exec("test", "-d", "/proc/" + pid).succeeded();
    }

    @Override
    public void close() {
        container.stop();
    }
}
