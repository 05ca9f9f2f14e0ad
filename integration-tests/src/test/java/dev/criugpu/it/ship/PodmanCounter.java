package dev.criugpu.it.ship;

import dev.criugpu.it.Eventually;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The counter workload (src/test/c/counter.c) as the only process of a podman container, appending 1, 2, 3, ... to
 * {@value #FILE} in the container's own root file system, so the file is part of what a checkpoint exports
 * (rootfs-diff.tar) and comes back with the container. Read from the host side through {@code podman mount}.
 */
final class PodmanCounter {
    static final String IMAGE = "localhost/criu-gpu-counter:it";
    static final String FILE = "/counter.out";
    private static final Duration PROGRESS_TIMEOUT = Duration.ofSeconds(20);

    private final PodmanHost host;
    final String name;

    private PodmanCounter(PodmanHost host, String name) {
        this.host = host;
        this.name = name;
    }

    /** Imports a one-file image: the static counter binary at /counter (podman import of a tarball, no registry). */
    static void importImage(PodmanHost host) {
        host.sh("set -e; r=$(mktemp -d); cp " + PodmanHost.WORKLOADS + "/counter $r/counter; "
                + "tar -C $r -c . | podman import --quiet - " + IMAGE + "; rm -rf $r").orFail();
    }

    /** Runs the counter detached, without network, and waits until it has counted a few lines. */
    static PodmanCounter run(PodmanHost host, String name) {
        host.podman("run", "--detach", "--name", name, "--network", "none", IMAGE, "/counter", FILE).orFail();
        PodmanCounter counter = new PodmanCounter(host, name);
        counter.awaitProgress(3);
        return counter;
    }

    /** The complete lines of the counter's file, as numbers. */
    List<Long> values() {
        String text = host.sh("cat \"$(podman mount " + name + ")" + FILE + "\"").orFail().stdout();
        int end = text.lastIndexOf('\n');
        List<Long> values = new ArrayList<>();
        if (end < 0) return values;
        for (String line : text.substring(0, end).split("\n")) values.add(Long.parseLong(line));
        return values;
    }

    long lastValue() {
        List<Long> v = values();
        return v.isEmpty() ? 0 : v.getLast();
    }

    void awaitProgress(int more) {
        long target = lastValue() + more;
        Eventually.await(name + FILE + " to reach " + target, PROGRESS_TIMEOUT, () -> lastValue() >= target,
                () -> "container " + name + " is " + host.inspect(name, ".State.Status") + ", last value " + lastValue());
    }

    /** Asserts the container runs and its file holds exactly 1..n with n well beyond {@code atDump}. */
    void assertContinuedFrom(long atDump) {
        assertEquals("running", host.inspect(name, ".State.Status"), "container " + name + " after restore");
        awaitProgress(5);
        List<Long> values = values();
        assertTrue(values.getLast() > atDump + 4, FILE + " did not advance past " + atDump + " after restore");
        for (int k = 0; k < values.size(); k++) {
            if (values.get(k) != k + 1) {
                assertEquals(k + 1, values.get(k), FILE + ": line " + (k + 1) + " breaks the sequence (value at dump "
                        + atDump + ", around: " + values.subList(Math.max(0, k - 3), Math.min(values.size(), k + 3)) + ")");
            }
        }
    }
}
