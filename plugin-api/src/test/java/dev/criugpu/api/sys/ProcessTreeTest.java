package dev.criugpu.api.sys;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ProcessTreeTest {
    /**
     * A real tree: a shell with a child shell (which has a child of its own) and a second child. Each shell prints
     * a child's pid after forking it, so once the three lines are read the whole tree exists.
     */
    @Test
    void listsARealForkedTreeParentsFirst() throws Exception {
        Process root = new ProcessBuilder("sh", "-c",
                "sh -c 'sleep 600 & echo grandchild $!; wait' & echo child $!; sleep 600 & echo child2 $!; wait")
                .redirectErrorStream(true).start();
        Map<String, Integer> pids = new HashMap<>();
        try (BufferedReader out = new BufferedReader(new InputStreamReader(root.getInputStream(), StandardCharsets.UTF_8))) {
            for (int i = 0; i < 3; i++) {
                String[] w = out.readLine().split(" ");
                pids.put(w[0], Integer.parseInt(w[1]));
            }
            List<Integer> tree = ProcessTree.of((int) root.pid());

            assertEquals(Set.of((int) root.pid(), pids.get("child"), pids.get("child2"), pids.get("grandchild")),
                    Set.copyOf(tree), tree.toString());
            assertEquals(4, tree.size(), tree.toString());
            assertEquals((int) root.pid(), tree.getFirst());
            assertTrue(tree.indexOf(pids.get("child")) < tree.indexOf(pids.get("grandchild")), tree.toString());
        } finally {
            root.descendants().forEach(ProcessHandle::destroyForcibly);
            root.destroyForcibly().waitFor();
        }
    }

    @Test
    void childrenOfEveryThreadCount(@TempDir Path proc) throws IOException {
        children(proc, 10, 10, "11 12");
        children(proc, 10, 13, "14");
        children(proc, 11, 11, "15");
        children(proc, 12, 12, "");
        children(proc, 14, 14, "");
        children(proc, 15, 15, "");

        List<Integer> tree = new ProcessTree(proc).list(10);
        assertEquals(Set.of(10, 11, 12, 14, 15), Set.copyOf(tree), tree.toString());
        assertEquals(5, tree.size(), tree.toString());
        assertEquals(10, tree.getFirst());
        assertTrue(tree.indexOf(11) < tree.indexOf(15), tree.toString());
    }

    @Test
    void withoutChildrenFilesTheParentsAreScanned(@TempDir Path proc) throws IOException {
        status(proc, 1, 0);
        status(proc, 20, 1);
        status(proc, 21, 20);
        status(proc, 22, 20);
        status(proc, 30, 1);
        status(proc, 31, 21);

        assertEquals(List.of(20, 21, 22, 31), new ProcessTree(proc).list(20));
    }

    @Test
    void aGoneRootIsListedAlone(@TempDir Path proc) {
        assertEquals(List.of(99), new ProcessTree(proc).list(99));
    }

    private static void children(Path proc, int pid, int tid, String kids) throws IOException {
        Files.writeString(Files.createDirectories(proc.resolve(pid + "/task/" + tid)).resolve("children"),
                kids.isEmpty() ? "" : kids + " ");
    }

    private static void status(Path proc, int pid, int ppid) throws IOException {
        Files.createDirectories(proc.resolve(pid + "/task/" + pid));
        Files.writeString(proc.resolve(pid + "/status"), "Name:\tx\nPid:\t" + pid + "\nPPid:\t" + ppid + "\n");
    }
}
