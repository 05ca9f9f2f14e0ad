package dev.criugpu.cli.check;

import dev.criugpu.cli.check.JobCheck.Finding;
import dev.criugpu.cli.check.JobCheck.Kind;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What check says of NVIDIA tasks, NCCL's settings and memory shared between ranks, on a /proc laid out by the test
 * (this machine has no GPU): a plain launcher (bash) with two ranks and a DataLoader-like worker fork()ed from rank 0;
 * and of TCP sockets shared through fork() or with connections waiting to be accepted.
 */
class JobCheckFakeProcTest {
    /** Made and removed here, not by @TempDir, which warns of every link that points outside it. */
    Path proc;

    @BeforeEach
    void makeProc() throws IOException {
        proc = Files.createTempDirectory("fake-proc");
    }

    @AfterEach
    void removeProc() throws IOException {
        try (Stream<Path> all = Files.walk(proc)) {
            for (Path p : all.sorted(java.util.Comparator.reverseOrder()).toList()) Files.delete(p);
        }
    }

    static final String NCCL_OK = "NCCL_P2P_DISABLE=1\0NCCL_SHM_DISABLE=1\0NCCL_IB_DISABLE=1\0NCCL_SOCKET_IFNAME=lo\0"
            + "NCCL_NVLS_ENABLE=0\0";
    static final long NCCL_SHM_INODE = 77;

    /** A /dev/shm file NCCL deleted, 34 MiB: what stat would say through /proc/PID/map_files. */
    private ProcFs fs() {
        return new ProcFs(proc) {
            @Override
            protected Optional<FileStat> stat(Path p) {
                if (p.toString().contains("/map_files/7f0000400000-")) {
                    return Optional.of(new FileStat(34L << 20, 34L << 20, 0, "00:1a", NCCL_SHM_INODE, true));
                }
                return Optional.empty();
            }
        };
    }

    private void task(int pid, int ppid, String comm, String env, Map<Integer, String> fds, String maps, int... kids)
            throws IOException {
        Path d = Files.createDirectories(proc.resolve(Integer.toString(pid)));
        Files.writeString(d.resolve("comm"), comm + "\n");
        Files.writeString(d.resolve("cmdline"), comm + "\0train.py\0");
        Files.writeString(d.resolve("status"), "Name:\t" + comm + "\nTgid:\t" + pid + "\nPPid:\t" + ppid + "\n");
        Files.writeString(d.resolve("environ"), "PATH=/usr/bin\0" + env);
        Files.writeString(Files.createDirectories(d.resolve("task/" + pid)).resolve("children"),
                String.join(" ", java.util.Arrays.stream(kids).mapToObj(String::valueOf).toList()));
        Files.createDirectories(d.resolve("fd"));
        for (Map.Entry<Integer, String> fd : fds.entrySet()) {
            Files.createSymbolicLink(d.resolve("fd/" + fd.getKey()), Path.of(fd.getValue()));
        }
        Files.writeString(d.resolve("maps"), maps);
        Files.writeString(Files.createDirectories(d.resolve("net")).resolve("tcp"), "  sl  local_address rem_address "
                + "  st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n");
        Files.createDirectories(d.resolve("ns"));
        Files.createSymbolicLink(d.resolve("ns/net"), Path.of("net:[4026531840]"));
    }

    private static Map<Integer, String> cudaFds() {
        Map<Integer, String> fds = new LinkedHashMap<>();
        fds.put(0, "/dev/null");
        fds.put(3, "/dev/nvidiactl");
        fds.put(4, "/dev/nvidia0");
        fds.put(5, "/dev/nvidia1");
        fds.put(6, "/dev/nvidia-uvm");
        fds.put(7, "/dev/nvidiactl");
        return fds;
    }

    /** A rank's maps: its vDSO at {@code vdso}, libnccl, NVIDIA mappings at offset 0, NCCL's deleted /dev/shm file at {@code shm}. */
    private static String rankMaps(String vdso, String shm) {
        return "55d0a0000000-55d0a0001000 r--p 00000000 08:01 100 /usr/bin/python3.12\n"
                + "7f1000000000-7f1000200000 r-xp 00000000 08:01 200 /usr/lib/python3/dist-packages/nvidia/nccl/lib/libnccl.so.2\n"
                + "7f2000000000-7f2000200000 rw-s 00000000 00:05 1024 /dev/nvidiactl\n"
                + "7f2000200000-7f2000400000 rw-s 00000000 00:05 1025 /dev/nvidia0\n"
                + "200000000-200200000 rw-s 200000000 00:05 1026 /dev/nvidia-uvm\n"
                + (shm == null ? "" : shm + "-" + Long.toHexString(Long.parseLong(shm, 16) + (34L << 20))
                + " rw-s 00000000 00:1a " + NCCL_SHM_INODE + " /dev/shm/nccl-Xa9bQ2 (deleted)\n")
                + vdso + "-" + Long.toHexString(Long.parseLong(vdso, 16) + 0x2000) + " r-xp 00000000 00:00 0 [vdso]\n";
    }

    private List<Finding> job(String env) throws IOException {
        task(100, 1, "bash", env, Map.of(0, "/dev/null"), "", 101, 102);
        task(101, 100, "python3", env, cudaFds(), rankMaps("7ffd00001000", "7f0000400000"), 103);
        task(102, 100, "python3", env, cudaFds(), rankMaps("7ffe00002000", "7f0000800000"));
        // fork()ed from 101 without exec: same vDSO, same mappings at the same addresses
        task(103, 101, "python3", env, cudaFds(), rankMaps("7ffd00001000", "7f0000400000"));
        return JobCheck.run(fs(), 100, "/usr/sbin").findings();
    }

    private static List<String> lines(List<Finding> findings, Kind kind, String topic) {
        return findings.stream().filter(f -> f.kind() == kind && f.topic().equals(topic)).map(Finding::toString).toList();
    }

    @Test
    void ranksWithNcclsP2pAndShmTransportsOnAreProblemsAndTheirSettingsAreReported() throws IOException {
        List<Finding> f = job("NCCL_SOCKET_IFNAME=lo\0");
        List<String> problems = lines(f, Kind.PROBLEM, "nccl");
        assertEquals(2, problems.size(), f.toString());
        assertTrue(problems.get(0).startsWith("problem: NCCL ranks pid 101, pid 102 may connect through NCCL's P2P "
                + "transport (CUDA memory of one GPU mapped by another rank; the driver checkpoints it but cannot return "
                + "it: CUDA error 801, the ranks stay checkpointed): NCCL_P2P_DISABLE=1 is not set in their environment; "
                + "start the job with NCCL_P2P_DISABLE=1"), problems.get(0));
        assertTrue(problems.get(1).startsWith("problem: NCCL ranks pid 101, pid 102 may connect through NCCL's SHM transport"),
                problems.get(1));
        List<String> notes = lines(f, Kind.NOTE, "nccl");
        assertEquals("note: pid 103: fork()ed from a parent without an exec since (DataLoader workers, say), not "
                + "counted as NCCL ranks", notes.get(0));
        assertEquals("note: NCCL settings of pids 101, 102: NCCL_P2P_DISABLE=(unset) NCCL_SHM_DISABLE=(unset) "
                + "NCCL_IB_DISABLE=(unset) NCCL_SOCKET_IFNAME=lo NCCL_NVLS_ENABLE=(unset) (/proc/PID/environ: the "
                + "environment at exec; what the program sets itself later is not seen)", notes.get(1));
        assertTrue(notes.get(2).startsWith("note: NCCL_NVLS_ENABLE is not 0 in pids 101, 102: "), notes.get(2));
    }

    @Test
    void ranksWithTheMeasuredSettingsHaveNoNcclProblemButTheirSharedShmFileIsAHint() throws IOException {
        List<Finding> f = job(NCCL_OK);
        assertEquals(List.of(), lines(f, Kind.PROBLEM, "nccl"));
        assertEquals(List.of("note: NCCL settings of pids 101, 102: NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 "
                + "NCCL_IB_DISABLE=1 NCCL_SOCKET_IFNAME=lo NCCL_NVLS_ENABLE=0 (/proc/PID/environ: the environment at "
                + "exec; what the program sets itself later is not seen)"), lines(f, Kind.NOTE, "nccl").subList(1, 2));
        // 101 and 102 map the same deleted file at different addresses: not fork; 103 is 101's fork and adds nothing
        assertEquals(List.of("note: pids 101, 102 (all holding NVIDIA files) map the same shared memory "
                + "/dev/shm/nccl-Xa9bQ2, not inherited through fork(): a hint that they share device memory too (CUDA "
                + "IPC: NCCL's P2P and SHM transports, torch.multiprocessing's CUDA tensors), which the driver cannot "
                + "restore"), lines(f, Kind.NOTE, "ipc"));
        assertEquals(List.of("needs: --ghost-limit 34M: deleted file /dev/shm/nccl-Xa9bQ2 (mapped by pids 101, 102, "
                + "103) holds 34.0 MiB, over criu's default ghost limit of 1 MiB (criu copies deleted files into the "
                + "images; NCCL leaves such files in /dev/shm)"), lines(f, Kind.NEEDS, "ghost"));
    }

    @Test
    void nvidiaHoldersAreListedWithWhatProcCannotTell() throws IOException {
        List<Finding> f = job(NCCL_OK);
        List<String> nvidia = lines(f, Kind.NOTE, "nvidia");
        assertEquals(5, nvidia.size(), nvidia.toString());
        assertEquals("note: pid 101 (python3: python3 train.py) holds NVIDIA device files: nvidia-uvm nvidia0 nvidia1 "
                + "nvidiactl (5 fds, 3 mappings); files of 2 GPUs: CUDA opens the file of every GPU it may use, so this "
                + "alone does not say it uses them all; a process that enabled peer access between its GPUs cannot be "
                + "restored (README, known limit)", nvidia.get(0));
        assertTrue(nvidia.get(3).startsWith("note: /proc cannot tell which of these tasks have CUDA state and which "
                + "only inherited the files through fork()"), nvidia.get(3));
        assertTrue(nvidia.get(4).startsWith("note: /proc cannot show peer access or CUDA IPC between these tasks: the "
                + "driver maps every /dev/nvidiactl and /dev/nvidiaN file at offset 0"), nvidia.get(4));
    }

    @Test
    void memorySharedOnlyThroughForkIsNoHint() throws IOException {
        String memfd = "7f3000000000-7f3000100000 rw-s 00000000 00:01 4242 /memfd:pool (deleted)\n";
        task(200, 1, "python3", "", cudaFds(), rankMaps("7ffd00001000", null) + memfd, 201);
        task(201, 200, "python3", "", cudaFds(), rankMaps("7ffd00001000", null) + memfd);
        List<Finding> f = JobCheck.run(fs(), 200, "/usr/sbin").findings();
        assertEquals(List.of(), lines(f, Kind.NOTE, "ipc"));
        assertEquals(List.of(), lines(f, Kind.NOTE, "ghost"), "memfd is no ghost file: criu dumps its contents");
    }

    @Test
    void rdmaDeviceFilesAreAProblem() throws IOException {
        Map<Integer, String> fds = cudaFds();
        fds.put(9, "/dev/infiniband/uverbs0");
        task(300, 1, "python3", NCCL_OK, fds, rankMaps("7ffd00001000", null));
        JobCheck c = JobCheck.run(fs(), 300, "/usr/sbin");
        assertEquals(List.of("problem: pid 300 (python3: python3 train.py) holds RDMA device files (fd 9 "
                + "/dev/infiniband/uverbs0): criu cannot dump InfiniBand/RoCE verbs; NCCL opens them unless "
                + "NCCL_IB_DISABLE=1"), lines(c.findings(), Kind.PROBLEM, "rdma"));
        assertEquals(1, c.exitStatus());
    }

    @Test
    void aConnectionHeldByParentAndForkedChildIsOneLineAndAFullAcceptQueueNeedsSkipInFlight() throws IOException {
        task(400, 1, "server", "", Map.of(3, "socket:[5001]", 5, "socket:[5002]"), "", 401);
        task(401, 400, "server", "", Map.of(3, "socket:[5001]", 5, "socket:[5002]"), "");
        String table = "   0: 0100007F:1F90 00000000:0000 0A 00000000:00000003 00:00000000 00000000     0        0 5001 1 0"
                + " 100 0 0 10 0\n"
                + "   1: 0100007F:1F90 0A00000A:C350 01 00000000:00000000 00:00000000 00000000     0        0 5002 1 0"
                + " 20 4 30 10 -1\n";
        for (int pid : new int[]{400, 401}) Files.writeString(proc.resolve(pid + "/net/tcp"), table,
                java.nio.file.StandardOpenOption.APPEND);
        JobCheck c = JobCheck.run(fs(), 400, "");
        assertEquals(List.of("needs: --skip-in-flight: pid 400 (server: server train.py) fd 3 (also pid 401 fd 3): "
                + "listening socket 127.0.0.1:8080 has 3 connection(s) not yet accepted (criu drops them with "
                + "--skip-in-flight, refuses the dump without)", "needs: --tcp-established: pid 400 (server: server "
                + "train.py) fd 5 (also pid 401 fd 5): TCP 127.0.0.1:8080 -> 10.0.0.10:50000 established (peer outside "
                + "the tree)"), lines(c.findings(), Kind.NEEDS, "tcp"));
        assertTrue(c.summary(400).endsWith("options: criu dump -t 400 --skip-in-flight --tcp-established "
                + "--network-lock skip, criu restore --tcp-established --network-lock skip"), c.summary(400));
        assertEquals(List.of("note: criu restores connected sockets at their addresses and ports: restoring on this "
                + "host right after the dump fails with \"Address already in use\" until the dumped job's ports leave "
                + "TIME_WAIT (about 60 s); peers outside the tree must still be there"),
                lines(c.findings(), Kind.NOTE, "tcp"));
    }
}
