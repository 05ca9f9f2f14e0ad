package dev.criugpu.cli.check;

import dev.criugpu.cli.check.JobCheck.Finding;
import dev.criugpu.cli.check.JobCheck.Kind;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What check says of NVIDIA tasks, NCCL's settings and memory shared between ranks, on a /proc laid out by the test
 * (this machine has no GPU): a plain launcher (bash) with two ranks and a DataLoader-like worker fork()ed from rank 0;
 * and of TCP sockets shared through fork() or with connections waiting to be accepted.
 */
class JobCheckFakeProcTest {
    /** Made and removed here, not by @TempDir, which warns of every link that points outside it. */
    Path proc;
    /** The host's root for /sys, /lib/modules and /boot, and a folder for a PATH: empty unless a test fills them. */
    Path host, bin;

    @BeforeEach
    void makeProc() throws IOException {
        proc = Files.createTempDirectory("fake-proc");
        host = Files.createTempDirectory("fake-host");
        bin = Files.createTempDirectory("fake-bin");
        Files.createDirectories(proc.resolve("sys/kernel"));
        Files.writeString(proc.resolve("sys/kernel/osrelease"), "6.8.0-90-generic\n");
    }

    @AfterEach
    void removeProc() throws IOException {
        for (Path dir : List.of(proc, host, bin)) {
            try (Stream<Path> all = Files.walk(dir)) {
                for (Path p : all.sorted(java.util.Comparator.reverseOrder()).toList()) Files.delete(p);
            }
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
        Files.writeString(d.resolve("task/" + pid + "/comm"), comm + "\n");
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

    /** Two PyTorch processes: torch maps libnccl at import, and the host sets NCCL_NVLS_ENABLE=0 for every process. */
    private List<Finding> torchPair() throws IOException {
        String env = "NCCL_NVLS_ENABLE=0\0";
        String torch = "7f3000000000-7f3000200000 r-xp 00000000 08:01 300 /venv/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so\n";
        task(100, 1, "bash", env, Map.of(0, "/dev/null"), "", 101, 102);
        task(101, 100, "python3", env, cudaFds(), torch + rankMaps("7ffd00001000", null));
        task(102, 100, "python3", env, cudaFds(), torch + rankMaps("7ffe00002000", null));
        return JobCheck.run(fs(), 100, "/usr/sbin").findings();
    }

    @Test
    void pytorchProcessesWithoutAnNcclProcessGroupAreNotRanksWhateverTheirEnvironment() throws IOException {
        assertEquals(List.of(), lines(torchPair(), Kind.PROBLEM, "nccl"));
    }

    @Test
    void pytorchProcessesWithAnNcclProcessGroupAreRanks() throws IOException {
        threads(101, "python3", "pt_nccl_watchdg");
        threads(102, "python3", "pt_nccl_heartbt");
        List<String> problems = lines(torchPair(), Kind.PROBLEM, "nccl");
        assertEquals(2, problems.size(), problems.toString());
        assertTrue(problems.get(0).startsWith("problem: NCCL ranks pid 101, pid 102 may connect through NCCL's P2P"), problems.get(0));
    }

    @Test
    void ranksWithNcclsP2pAndShmTransportsOnAreProblemsAndTheirSettingsAreReported() throws IOException {
        List<Finding> f = job("NCCL_SOCKET_IFNAME=lo\0");
        List<String> problems = lines(f, Kind.PROBLEM, "nccl");
        assertEquals(2, problems.size(), f.toString());
        assertTrue(problems.get(0).startsWith("problem: NCCL ranks pid 101, pid 102 may connect through NCCL's P2P "
                + "transport (CUDA memory of one GPU mapped by another rank; the driver checkpoints it but cannot return "
                + "it: CUDA error 801 through cuMem handles, 1 through legacy CUDA IPC, the ranks stay checkpointed): "
                + "NCCL_P2P_DISABLE=1 is not set in their environment; start the job with NCCL_P2P_DISABLE=1 "
                + "NCCL_CUMEM_HOST_ENABLE=0 (NCCL's SHM transport over /dev/shm"), problems.get(0));
        assertTrue(problems.get(1).startsWith("problem: NCCL ranks pid 101, pid 102 may connect through NCCL's SHM transport"),
                problems.get(1));
        List<String> notes = lines(f, Kind.NOTE, "nccl");
        assertEquals("note: pid 103: fork()ed from a parent without an exec since (DataLoader workers, say), not "
                + "counted as NCCL ranks", notes.get(0));
        assertEquals("note: NCCL settings of pids 101, 102: NCCL_P2P_DISABLE=(unset) NCCL_SHM_DISABLE=(unset) "
                + "NCCL_CUMEM_HOST_ENABLE=(unset) NCCL_CUMEM_ENABLE=(unset) NCCL_IB_DISABLE=(unset) NCCL_SOCKET_IFNAME=lo NCCL_NVLS_ENABLE=(unset) (/proc/PID/environ: the "
                + "environment at exec; what the program sets itself later is not seen)", notes.get(1));
        assertTrue(notes.get(2).startsWith("note: NCCL_NVLS_ENABLE is not 0 in pids 101, 102: "), notes.get(2));
    }

    /** A CUDA tensor sent through torch.multiprocessing: 102 maps 101's CUDA IPC event file, a problem naming both. */
    @Test
    void aTaskThatOpenedAnotherTasksCudaIpcEventIsAProblem() throws IOException {
        String event = "7f5000000000-7f5000001000 rw-s 00000000 00:1a 777 /dev/shm/cuda.shm.0.65.1\n";
        task(100, 1, "bash", "", Map.of(0, "/dev/null"), "", 101, 102);
        task(101, 100, "python3", "", cudaFds(), rankMaps("7ffd00001000", null) + event);
        task(102, 100, "python3", "", cudaFds(), rankMaps("7ffe00002000", null) + event);
        List<String> problems = lines(JobCheck.run(fs(), 100, "/usr/sbin").findings(), Kind.PROBLEM, "nvidia");
        assertEquals(1, problems.size(), problems.toString());
        assertTrue(problems.getFirst().startsWith("problem: pid 102 imports GPU memory of pid 101 through CUDA IPC (it "
                + "maps /dev/shm/cuda.shm.0.65.1"), problems.getFirst());
    }

    /** Ranks on NCCL's defaults that use criu_gpu (each shows its channel, a memfd): released by the dump, no problem. */
    @Test
    void ranksThatReleaseTheirCommunicatorsWithCriuGpuAreNoProblem() throws IOException {
        for (int pid : List.of(101, 102)) {
            Files.createDirectories(proc.resolve(pid + "/fd"));
            Files.createSymbolicLink(proc.resolve(pid + "/fd/9"), Path.of("/memfd:criu_gpu (deleted)"));
        }
        List<Finding> f = job("NCCL_SOCKET_IFNAME=lo\0");
        assertEquals(List.of(), lines(f, Kind.PROBLEM, "nccl"));
        assertTrue(lines(f, Kind.NOTE, "nccl").contains("note: pids 101, 102 keep NCCL's P2P/SHM transports on and use "
                + "criu_gpu: they release their communicators when `criu dump -t PID` starts and make them again after "
                + "it (not under criu's RPC, where the tree is not known before criu freezes it)"), f.toString());
    }

    @Test
    void ranksWithTheMeasuredSettingsHaveNoNcclProblemButTheirSharedShmFileIsAHint() throws IOException {
        List<Finding> f = job(NCCL_OK);
        assertEquals(List.of(), lines(f, Kind.PROBLEM, "nccl"));
        assertEquals(List.of("note: NCCL settings of pids 101, 102: NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 "
                + "NCCL_CUMEM_HOST_ENABLE=(unset) NCCL_CUMEM_ENABLE=(unset) NCCL_IB_DISABLE=1 NCCL_SOCKET_IFNAME=lo NCCL_NVLS_ENABLE=0 (/proc/PID/environ: the environment at "
                + "exec; what the program sets itself later is not seen)"), lines(f, Kind.NOTE, "nccl").subList(1, 2));
        assertEquals("note: pids 101, 102 run NCCL's socket transport (NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1): "
                + "checkpointable, but measured at 24 % of the defaults' step rate on 4 NVLink GPUs; NCCL_P2P_DISABLE=1 "
                + "NCCL_CUMEM_HOST_ENABLE=0 instead of NCCL_SHM_DISABLE=1 (NCCL's SHM transport over /dev/shm) was "
                + "measured to dump and restore at 98 %", lines(f, Kind.NOTE, "nccl").get(2));
        // 101 and 102 map the same deleted file at different addresses: not fork; 103 is 101's fork and adds nothing
        assertEquals(List.of("note: pids 101, 102 (all holding NVIDIA files) map the same shared memory "
                + "/dev/shm/nccl-Xa9bQ2, not inherited through fork(): a hint that they may share device memory too "
                + "(CUDA IPC: NCCL's P2P transport, torch.multiprocessing's CUDA tensors), which the driver cannot "
                + "restore (NCCL's SHM transport on such files, NCCL_CUMEM_HOST_ENABLE=0, was measured to restore)"),
                lines(f, Kind.NOTE, "ipc"));
        assertEquals(List.of("needs: --ghost-limit 34M: deleted file /dev/shm/nccl-Xa9bQ2 (mapped by pids 101, 102, "
                + "103) holds 34.0 MiB, over criu's default ghost limit of 1 MiB (criu copies deleted files into the "
                + "images; NCCL leaves such files in /dev/shm)"), lines(f, Kind.NEEDS, "ghost"));
    }

    @Test
    void nvidiaHoldersAreListedWithWhatProcCannotTell() throws IOException {
        List<Finding> f = job(NCCL_OK);
        List<String> nvidia = lines(f, Kind.NOTE, "nvidia");
        assertEquals(6, nvidia.size(), nvidia.toString());
        assertEquals("note: pid 101 (python3: python3 train.py) holds NVIDIA device files: nvidia-uvm nvidia0 nvidia1 "
                + "nvidiactl (5 fds, 3 mappings); files of 2 GPUs: CUDA opens the file of every GPU it may use, so this "
                + "alone does not say it uses them all; a process that maps 2 GPUs and holds more than 966 MiB on one is "
                + "refused by the dump (with peer access between its GPUs, which /proc cannot show, driver 580 cannot "
                + "restore it above about 1 GiB per GPU; CRIU_CUDA_MULTI_GPU_CHECK=0 where it never enables peer access)",
                nvidia.get(0));
        assertTrue(nvidia.get(3).startsWith("note: /proc cannot tell which of these tasks have CUDA state and which "
                + "only inherited the files through fork()"), nvidia.get(3));
        assertTrue(nvidia.get(4).startsWith("note: /proc cannot show peer access or raw CUDA IPC between these tasks: the "
                + "driver maps every /dev/nvidiactl and /dev/nvidiaN file at offset 0"), nvidia.get(4));
        assertTrue(nvidia.get(5).endsWith("NVIDIA gives CUDA IPC support from driver 610"), nvidia.get(5));
    }

    @Test
    void processesSharingGpuMemoryAreNamedWithTheHostsDriver() throws IOException {
        Files.createDirectories(proc.resolve("driver/nvidia"));
        Files.writeString(proc.resolve("driver/nvidia/version"), "NVRM version: NVIDIA UNIX Open Kernel Module for "
                + "x86_64  580.159.04  Release Build  (dvs-builder@U22)  Thu Oct 16 2025\nGCC version:  gcc 12.3.0\n");
        List<String> nvidia = lines(job(NCCL_OK), Kind.NOTE, "nvidia");
        assertTrue(nvidia.get(5).startsWith("note: if one of these tasks maps another's GPU memory, a dump cannot return it"),
                nvidia.get(5));
        assertTrue(nvidia.get(5).endsWith("from driver 610 (this host: 580.159.04)"), nvidia.get(5));
    }

    @Test
    void oneNvidiaHolderGetsNoNoteOfSharedGpuMemory() throws IOException {
        task(300, 1, "python3", "", cudaFds(), rankMaps("7ffd00001000", null));
        List<String> nvidia = lines(JobCheck.run(fs(), 300, "/usr/sbin").findings(), Kind.NOTE, "nvidia");
        assertFalse(nvidia.stream().anyMatch(l -> l.contains("another's GPU memory")), nvidia.toString());
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
        JobCheck c = JobCheck.run(fs(), host, 400, "");
        assertEquals(List.of("needs: --skip-in-flight: pid 400 (server: server train.py) fd 3 (also pid 401 fd 3): "
                + "listening socket 127.0.0.1:8080 has 3 connection(s) not yet accepted (criu drops them with "
                + "--skip-in-flight, refuses the dump without)", "needs: --tcp-established: pid 400 (server: server "
                + "train.py) fd 5 (also pid 401 fd 5): TCP 127.0.0.1:8080 -> 10.0.0.10:50000 established (peer outside "
                + "the tree)"), lines(c.findings(), Kind.NEEDS, "tcp"));
        assertTrue(c.summary(400).endsWith("options: criu dump -t 400 --skip-in-flight --tcp-established "
                + "--network-lock skip, criu restore --tcp-established --network-lock skip"), c.summary(400));
        assertEquals(List.of("note: criu restores connected sockets at their addresses and ports: a restore on this "
                + "host needs those ports free (criu binds with SO_REUSEADDR and SO_REUSEPORT, so a socket bound to one "
                + "without them blocks it); peers outside the tree must still be there"),
                lines(c.findings(), Kind.NOTE, "tcp"));
    }

    // ---- TCP: counting lines, TIME_WAIT, the network lock; io_uring's holders; ghost files counted ----

    /** One line of /proc/net/tcp for {@code local} and {@code remote} ("127.0.0.1:29500"). */
    static String tcpLine(String local, String remote, int state, long rxQueue, long inode) {
        return String.format("   0: %s %s %02X 00000000:%08X 00:00000000 00000000     0        0 %d 1 0 20 4 30 10 -1%n",
                hex(local), hex(remote), state, rxQueue, inode);
    }

    private static String hex(String endpoint) {
        String[] hp = endpoint.split(":");
        String[] o = hp[0].split("\\.");
        return String.format("%02X%02X%02X%02X:%04X", Integer.parseInt(o[3]), Integer.parseInt(o[2]),
                Integer.parseInt(o[1]), Integer.parseInt(o[0]), Integer.parseInt(hp[1]));
    }

    private void appendTcp(String table, int... pids) throws IOException {
        for (int pid : pids) Files.writeString(proc.resolve(pid + "/net/tcp"), table, StandardOpenOption.APPEND);
    }

    private void threads(int pid, String... names) throws IOException {
        for (int i = 0; i < names.length; i++) {
            Path t = Files.createDirectories(proc.resolve(pid + "/task/" + (pid + 1000 + i)));
            Files.writeString(t.resolve("comm"), names[i] + "\n");
        }
    }

    /**
     * A minimal ELF64 little-endian executable: one PT_LOAD over the whole file at 0x400000, and a PT_DYNAMIC whose
     * DT_NEEDED entries name {@code needed} (none: no PT_DYNAMIC, as a static executable).
     */
    static void elf(Path file, String... needed) throws IOException {
        ByteArrayOutputStream strtab = new ByteArrayOutputStream();
        strtab.write(0);
        List<Integer> at = new java.util.ArrayList<>();
        for (String n : needed) {
            at.add(strtab.size());
            strtab.writeBytes((n + "\0").getBytes(StandardCharsets.US_ASCII));
        }
        int phnum = needed.length == 0 ? 1 : 2, strOff = 64 + 56 * phnum, dynOff = strOff + strtab.size() + 7 & ~7;
        int dynSize = (needed.length + 2) * 16, size = dynOff + dynSize;
        long base = 0x400000;
        ByteBuffer b = ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
        b.put(new byte[]{0x7f, 'E', 'L', 'F', 2, 1, 1}).position(16);
        b.putShort((short) 2).putShort((short) 0x3e).putInt(1).putLong(base).putLong(64).putLong(0).putInt(0)
                .putShort((short) 64).putShort((short) 56).putShort((short) phnum).putShort((short) 64)
                .putShort((short) 0).putShort((short) 0);
        b.position(64).putInt(ElfNeeded.PT_LOAD).putInt(5).putLong(0).putLong(base).putLong(base).putLong(size)
                .putLong(size).putLong(0x1000);
        if (needed.length > 0) {
            b.putInt(ElfNeeded.PT_DYNAMIC).putInt(6).putLong(dynOff).putLong(base + dynOff).putLong(base + dynOff)
                    .putLong(dynSize).putLong(dynSize).putLong(8);
            b.position(strOff).put(strtab.toByteArray());
            b.position(dynOff);
            for (int a : at) b.putLong(ElfNeeded.DT_NEEDED).putLong(a);
            b.putLong(ElfNeeded.DT_STRTAB).putLong(base + strOff).putLong(ElfNeeded.DT_NULL).putLong(0);
        }
        Files.write(file, b.array());
        assertTrue(file.toFile().setExecutable(true));
    }

    /** A host where criu can lock with nftables: nf_tables loaded, criu on {@code bin} linking libnftables. */
    private void nftablesHost() throws IOException {
        Files.createDirectories(host.resolve("sys/module/nf_tables"));
        elf(bin.resolve("criu"), "libc.so.6", "libnftables.so.1", "libprotobuf-c.so.1");
    }

    /**
     * Two ranks (101, 102) under a plain launcher (bash 100) on NCCL's socket transport, as measured: rank 0 listens
     * for the TCPStore (29500), NCCL's bootstrap (41000) and its sockets (41002), rank 1 for NCCL (42000, 42002);
     * 12 connections between the ranks, 24 sockets; 4 connections NCCL's bootstrap closed at start-up linger in
     * TIME_WAIT on 41000.
     */
    private void twoRankJob() throws IOException {
        String env = NCCL_OK + "USE_LIBUV=0\0MASTER_ADDR=127.0.0.1\0MASTER_PORT=29500\0";
        Map<Integer, String> fds0 = cudaFds(), fds1 = cudaFds();
        StringBuilder table = new StringBuilder();
        int fd = 20;
        int[][] listeners = {{101, 29500, 7000}, {101, 41000, 7001}, {101, 41002, 7002}, {102, 42000, 7003},
                {102, 42002, 7004}};
        for (int[] l : listeners) {
            table.append(tcpLine("127.0.0.1:" + l[1], "0.0.0.0:0", TcpSocket.LISTEN, 0, l[2]));
            (l[0] == 101 ? fds0 : fds1).put(fd++, "socket:[" + l[2] + "]");
        }
        for (int i = 0; i < 12; i++) {
            // half accepted by rank 0 on 41002, half by rank 1 on 42002: an accepted socket has its listener's port
            String a = i < 6 ? "127.0.0.1:41002" : "127.0.0.1:" + (51000 + i);
            String b = i < 6 ? "127.0.0.1:" + (50000 + i) : "127.0.0.1:42002";
            table.append(tcpLine(a, b, TcpSocket.ESTABLISHED, 0, 8000 + 2 * i));
            table.append(tcpLine(b, a, TcpSocket.ESTABLISHED, 0, 8001 + 2 * i));
            fds0.put(fd, "socket:[" + (8000 + 2 * i) + "]");
            fds1.put(fd++, "socket:[" + (8001 + 2 * i) + "]");
        }
        for (int i = 0; i < 4; i++) table.append(tcpLine("127.0.0.1:41000", "127.0.0.1:" + (45000 + i), 0x06, 0, 0));
        task(100, 1, "bash", env, Map.of(0, "/dev/null"), "", 101, 102);
        task(101, 100, "python3", env, fds0, rankMaps("7ffd00001000", "7f0000400000"));
        task(102, 100, "python3", env, fds1, rankMaps("7ffe00002000", "7f0000800000"));
        appendTcp(table.toString(), 100, 101, 102);
    }

    private List<String> checkOutput(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(), err = new ByteArrayOutputStream();
        CheckCommand.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8), fs(), host, bin.toString());
        assertEquals("", err.toString(StandardCharsets.UTF_8));
        return List.of(out.toString(StandardCharsets.UTF_8).split("\n"));
    }

    @Test
    void twoRanksOnNcclsSocketTransportMakeOneLinePerKindAndVerboseListsTheSockets() throws IOException {
        twoRankJob();
        nftablesHost();
        List<String> out = checkOutput("100");
        List<String> expected = List.of(
                "note: 3 processes in the tree of pid 100: 100 bash, 101 python3 (child of 100), 102 python3 (child of "
                        + "100)",
                "needs: --ghost-limit 34M: deleted file /dev/shm/nccl-Xa9bQ2 (mapped by pids 101, 102) holds 34.0 "
                        + "MiB, over criu's default ghost limit of 1 MiB (criu copies deleted files into the images; "
                        + "NCCL leaves such files in /dev/shm)",
                "needs: --tcp-established: 24 connected TCP sockets in 2 processes (all peers in the tree)",
                "needs: --network-lock nftables: iptables-restore is not on this host's PATH, and criu locks TCP "
                        + "connections with iptables by default; nftables can lock instead: the kernel has nf_tables "
                        + "(/sys/module/nf_tables: loaded) and " + bin.resolve("criu") + " links libnftables.so.1 "
                        + "(criu takes the lock through libnftables: no nft command needed)",
                "note: criu restores connected sockets at their addresses and ports (all on loopback): a restore on "
                        + "this host needs those ports free (criu binds with SO_REUSEADDR and SO_REUSEPORT, so a socket "
                        + "bound to one without them blocks it); peers outside the tree must still be there",
                "note: 4 connection(s) in TIME_WAIT on port 41000, which the tree listens on: a restore on this host "
                        + "before they expire (≤ 60 s) fails with \"Address already in use\"" + TcpCheck.UNLESS_CUDA);
        assertEquals(expected, out.subList(0, expected.size()), String.join("\n", out));
        assertEquals("note: lines that count several sockets or files: criu-gpu check --verbose 100 lists them one a "
                + "line", out.get(out.size() - 2));
        assertEquals("summary: 0 problems (no criu option avoids them), 3 needs (criu options); a plain criu dump would "
                + "fail; options: criu dump -t 100 --ghost-limit 34M --tcp-established --network-lock nftables, criu "
                + "restore --tcp-established --network-lock nftables", out.getLast());
        assertEquals(3, out.stream().filter(l -> l.startsWith("needs:")).count());
        System.out.println("---- criu-gpu check 100 (fake /proc of a 2-rank job) ----\n" + String.join("\n", out));

        List<String> verbose = checkOutput("--verbose", "100");
        int at = verbose.indexOf(expected.get(2));
        assertEquals("    pid 101 (python3: python3 train.py) fd 25: TCP 127.0.0.1:41002 -> 127.0.0.1:50000 "
                + "established (peer in the tree: pid 102 fd 25)", verbose.get(at + 1));
        assertEquals("    pid 102 (python3: python3 train.py) fd 25: TCP 127.0.0.1:50000 -> 127.0.0.1:41002 "
                + "established (peer in the tree: pid 101 fd 25)", verbose.get(at + 13));
        assertEquals("    pid 102 (python3: python3 train.py) fd 36: TCP 127.0.0.1:42002 -> 127.0.0.1:51011 "
                + "established (peer in the tree: pid 101 fd 36)", verbose.get(at + 24));
        assertEquals(expected.get(3), verbose.get(at + 25));
        assertEquals(24, verbose.stream().filter(l -> l.startsWith("    pid ")).count());
        assertEquals(List.of(), verbose.stream().filter(l -> l.startsWith("note: lines that count")).toList());
        assertEquals(out.getLast(), verbose.getLast());
    }

    @Test
    void connectionsInTimeWaitOnSeveralListeningPortsMakeOneLineAndOthersAreNotCounted() throws IOException {
        task(500, 1, "server", "", Map.of(3, "socket:[9001]", 4, "socket:[9002]", 5, "socket:[9003]"), "");
        appendTcp(tcpLine("127.0.0.1:29500", "0.0.0.0:0", TcpSocket.LISTEN, 0, 9001)
                + tcpLine("0.0.0.0:41000", "0.0.0.0:0", TcpSocket.LISTEN, 0, 9002)
                + tcpLine("127.0.0.1:43000", "0.0.0.0:0", TcpSocket.LISTEN, 0, 9003)
                + tcpLine("127.0.0.1:29500", "127.0.0.1:50001", 0x06, 0, 0)
                + tcpLine("127.0.0.1:29500", "127.0.0.1:50002", 0x06, 0, 0)
                + tcpLine("127.0.0.1:29500", "127.0.0.1:50003", 0x05, 0, 0)
                + tcpLine("127.0.0.1:41000", "127.0.0.1:50004", 0x06, 0, 0)
                // not counted: SYN_RECV (being accepted), a port not listened on, a socket some process still holds
                + tcpLine("127.0.0.1:43000", "127.0.0.1:50005", 0x03, 0, 0)
                + tcpLine("127.0.0.1:44000", "127.0.0.1:50006", 0x06, 0, 0)
                + tcpLine("127.0.0.1:43000", "127.0.0.1:50007", 0x08, 0, 9999), 500);
        JobCheck c = JobCheck.run(fs(), host, 500, "");
        List<Finding> notes = c.findings().stream().filter(f -> f.topic().equals("tcp")).toList();
        assertEquals(1, notes.size(), notes.toString());
        assertEquals("note: 4 connections in TIME_WAIT or FIN_WAIT2 on 2 ports the tree listens on (29500: 3, 41000: "
                + "1): a restore on this host before they expire (≤ 60 s) fails with \"Address already in use\"" + TcpCheck.UNLESS_CUDA,
                notes.getFirst().toString());
        assertEquals(List.of("2 connection(s) in TIME_WAIT and 1 in FIN_WAIT2 on port 29500, which the tree listens "
                + "on: a restore on this host before they expire (≤ 60 s) fails with \"Address already in use\"" + TcpCheck.UNLESS_CUDA,
                "1 connection(s) in TIME_WAIT on port 41000, which the tree listens on: a restore on this host before "
                + "they expire (≤ 60 s) fails with \"Address already in use\"" + TcpCheck.UNLESS_CUDA), notes.getFirst().items());
        assertEquals(0, c.exitStatus(), "TIME_WAIT does not stop the dump");
    }

    @Test
    void noTimeWaitOnTheTreesPortsNoLine() throws IOException {
        task(510, 1, "server", "", Map.of(3, "socket:[9101]"), "");
        appendTcp(tcpLine("127.0.0.1:29500", "0.0.0.0:0", TcpSocket.LISTEN, 0, 9101)
                + tcpLine("127.0.0.1:29501", "127.0.0.1:50001", 0x06, 0, 0), 510);
        assertEquals(List.of(), JobCheck.run(fs(), host, 510, "").findings().stream()
                .filter(f -> f.topic().equals("tcp")).toList());
    }

    /** A process holding one established loopback connection with a peer outside the tree. */
    private JobCheck oneConnection(String path) throws IOException {
        task(520, 1, "client", "", Map.of(3, "socket:[9201]"), "");
        appendTcp(tcpLine("127.0.0.1:50000", "127.0.0.1:29500", TcpSocket.ESTABLISHED, 0, 9201), 520);
        return JobCheck.run(fs(), host, 520, path);
    }

    private static String networkLock(JobCheck c) {
        List<String> l = lines(c.findings(), Kind.NEEDS, "network-lock");
        return l.isEmpty() ? "" : l.getFirst();
    }

    @Test
    void nftablesIsTheLockWhereTheKernelHasNfTablesAndCriuLinksLibnftables() throws IOException {
        nftablesHost();
        JobCheck c = oneConnection(bin.toString());
        assertTrue(networkLock(c).startsWith("needs: --network-lock nftables: "), networkLock(c));
        assertTrue(c.summary(520).endsWith("options: criu dump -t 520 --tcp-established --network-lock nftables, criu "
                + "restore --tcp-established --network-lock nftables"), c.summary(520));
    }

    @Test
    void iptablesRestoreOnThePathNeedsNoLockOption() throws IOException {
        nftablesHost();
        Files.writeString(bin.resolve("iptables-restore"), "#!/bin/sh\n");
        assertTrue(bin.resolve("iptables-restore").toFile().setExecutable(true));
        JobCheck c = oneConnection(bin.toString());
        assertEquals("", networkLock(c));
        assertTrue(c.summary(520).endsWith("criu dump -t 520 --tcp-established, criu restore --tcp-established"),
                c.summary(520));
    }

    @Test
    void criuWithoutLibnftablesOrNoCriuAtAllMeansSkipWithTheReason() throws IOException {
        Files.createDirectories(host.resolve("sys/module/nf_tables"));
        elf(bin.resolve("criu"), "libc.so.6", "libprotobuf-c.so.1");
        JobCheck c = oneConnection(bin.toString());
        assertEquals("needs: --network-lock skip: iptables-restore is not on this host's PATH, and criu locks TCP "
                + "connections with iptables by default, and nftables cannot lock here: " + bin.resolve("criu")
                + " does not link libnftables (skip leaves the connections unlocked while criu works, safe when both "
                + "ends are in the dumped tree)", networkLock(c));
        assertTrue(c.summary(520).endsWith("--tcp-established --network-lock skip, criu restore --tcp-established "
                + "--network-lock skip"), c.summary(520));

        elf(bin.resolve("criu"));
        assertTrue(networkLock(JobCheck.run(fs(), host, 520, bin.toString())).contains(bin.resolve("criu")
                + " does not link libnftables (statically linked: no shared libraries)"));
        Files.writeString(bin.resolve("criu"), "#!/bin/sh\nexec /usr/local/sbin/criu \"$@\"\n");
        assertTrue(networkLock(JobCheck.run(fs(), host, 520, bin.toString())).contains(": " + bin.resolve("criu")
                + " is no ELF executable whose libraries can be read ("));
        assertTrue(networkLock(JobCheck.run(fs(), host, 520, "")).contains(": no criu on this PATH to look at ("));
    }

    @Test
    void theKernelsNfTablesIsReadFromModulesDepBuiltinOrConfigAndItsAbsenceIsNamed() throws IOException {
        elf(bin.resolve("criu"), "libnftables.so.1");
        JobCheck c = oneConnection(bin.toString());
        assertEquals("needs: --network-lock skip: iptables-restore is not on this host's PATH, and criu locks TCP "
                + "connections with iptables by default, and nftables cannot lock here: nothing here says whether the "
                + "kernel has nf_tables (no /sys/module/nf_tables, no nf_tables in /proc/modules, no "
                + "/lib/modules/6.8.0-90-generic/modules.dep, no /proc/config.gz or /boot/config-6.8.0-90-generic) "
                + "(skip leaves the connections unlocked while criu works, safe when both ends are in the dumped tree)",
                networkLock(c));

        Path mods = Files.createDirectories(host.resolve("lib/modules/6.8.0-90-generic"));
        Files.writeString(mods.resolve("modules.dep"), "kernel/net/netfilter/nfnetlink.ko.zst:\n"
                + "kernel/net/netfilter/nft_ct.ko.zst: kernel/net/netfilter/nf_tables.ko.zst\n");
        Files.writeString(mods.resolve("modules.builtin"), "kernel/net/ipv4/tcp_cubic.ko\n");
        assertTrue(networkLock(JobCheck.run(fs(), host, 520, bin.toString())).contains("nftables cannot lock here: the "
                + "kernel has no nf_tables (not loaded, not in /lib/modules/6.8.0-90-generic/modules.builtin, "
                + "/lib/modules/6.8.0-90-generic/modules.dep) ("), networkLock(JobCheck.run(fs(), host, 520,
                bin.toString())));

        Files.writeString(mods.resolve("modules.dep"), "kernel/net/netfilter/nf_tables.ko.zst: "
                + "kernel/net/netfilter/nfnetlink.ko.zst\n", StandardOpenOption.APPEND);
        assertTrue(networkLock(JobCheck.run(fs(), host, 520, bin.toString())).startsWith("needs: --network-lock "
                + "nftables: iptables-restore is not on this host's PATH, and criu locks TCP connections with iptables "
                + "by default; nftables can lock instead: the kernel has nf_tables (/lib/modules/6.8.0-90-generic/"
                + "modules.dep: a module the kernel loads when criu asks for it) and " + bin.resolve("criu")
                + " links libnftables.so.1"));

        Files.delete(mods.resolve("modules.dep"));
        Files.writeString(mods.resolve("modules.builtin"), "kernel/net/netfilter/nf_tables.ko\n");
        assertTrue(networkLock(JobCheck.run(fs(), host, 520, bin.toString())).contains("the kernel has nf_tables "
                + "(/lib/modules/6.8.0-90-generic/modules.builtin: built in)"));

        Files.delete(mods.resolve("modules.builtin"));
        try (var gz = new java.util.zip.GZIPOutputStream(Files.newOutputStream(proc.resolve("config.gz")))) {
            gz.write("CONFIG_NETFILTER=y\nCONFIG_NF_TABLES=m\n".getBytes(StandardCharsets.US_ASCII));
        }
        assertTrue(networkLock(JobCheck.run(fs(), host, 520, bin.toString())).contains("the kernel has nf_tables "
                + "(/proc/config.gz: CONFIG_NF_TABLES=m)"));
        try (var gz = new java.util.zip.GZIPOutputStream(Files.newOutputStream(proc.resolve("config.gz")))) {
            gz.write("CONFIG_NETFILTER=y\n# CONFIG_NF_TABLES is not set\n".getBytes(StandardCharsets.US_ASCII));
        }
        assertTrue(networkLock(JobCheck.run(fs(), host, 520, bin.toString())).contains("the kernel has no nf_tables "
                + "(not loaded, not in /proc/config.gz)"));
        Files.writeString(proc.resolve("modules"), "nf_tables 376832 0 - Live 0x0000000000000000\n");
        assertTrue(networkLock(JobCheck.run(fs(), host, 520, bin.toString())).contains("the kernel has nf_tables "
                + "(/proc/modules: loaded)"));
    }

    @Test
    void elfNeededReadsTheDynamicSectionAndNothingElse() throws IOException {
        elf(bin.resolve("a"), "libc.so.6", "libnftables.so.1");
        assertEquals(Optional.of(List.of("libc.so.6", "libnftables.so.1")), ElfNeeded.of(bin.resolve("a")));
        elf(bin.resolve("b"));
        assertEquals(Optional.of(List.of()), ElfNeeded.of(bin.resolve("b")));
        Files.writeString(bin.resolve("c"), "#!/bin/sh\n");
        assertEquals(Optional.empty(), ElfNeeded.of(bin.resolve("c")));
        Files.write(bin.resolve("d"), new byte[]{0x7f, 'E', 'L', 'F', 2, 1});
        assertEquals(Optional.empty(), ElfNeeded.of(bin.resolve("d")));
        assertEquals(Optional.empty(), ElfNeeded.of(bin.resolve("missing")));
        assertTrue(ElfNeeded.of(Path.of("/proc/self/exe")).orElseThrow().contains("libc.so.6"));
    }

    /** A user can make an environment hundreds of MiB; check, run as root, reads 1 MiB of it and says so (issue 41). */
    @Test
    void anOversizedEnvironmentIsReadUpToItsBoundAndTheCutIsNamed() throws IOException {
        task(900, 1, "python3", "", Map.of(), "");
        String pad = "PAD=" + "x".repeat(1 << 20) + "\0";
        Files.writeString(proc.resolve("900/environ"), "EARLY=1\0" + pad + pad + "LATE=1\0");
        ProcFs.Task t = fs().task(900).orElseThrow();
        assertEquals("1", t.env().get("EARLY"));
        assertEquals(null, t.env().get("LATE"), "read past the bound");
        assertEquals(null, t.env().get("PAD"), "the entry cut in two must not be taken as a value");
        assertEquals(List.of("environ (longer than 1024 KiB: read that far, the rest not checked)"), t.unreadable());
        assertEquals(List.of("note: could not read all of /proc/900/environ (longer than 1024 KiB: read that far, the "
                + "rest not checked): what they hold is not checked"), lines(JobCheck.run(fs(), host, 900, "").findings(),
                Kind.NOTE, "unreadable"));
    }

    @Test
    void torchsTcpStoreServerOnLibuvIsToldToTurnLibuvOff() throws IOException {
        task(600, 1, "python3", "MASTER_PORT=29500\0", Map.of(9, "anon_inode:[io_uring]"), "");
        threads(600, "python3", "pt_tcpstore_uv", "pt_nccl_watchdg");
        assertEquals(List.of("problem: pid 600 (python3: python3 train.py) fd 9: io_uring (anon_inode:[io_uring]): "
                + "criu 4.2.1 cannot dump it (\"Unknown shit 600 (anon_inode:[io_uring])\"); this process hosts torch's "
                + "TCPStore server on libuv (thread pt_tcpstore_uv: rank 0, or MASTER_ADDR's process, with env:// "
                + "rendezvous), whose event loop holds it: start the job with USE_LIBUV=0 in its environment (its "
                + "TCPStore then holds none)"), lines(JobCheck.run(fs(), host, 600, "").findings(), Kind.PROBLEM,
                "io_uring"));
    }

    @Test
    void torchrunsElasticAgentIsNamedAndCriuGpuRunIsTheWayOut() throws IOException {
        task(700, 1, "python3", "USE_LIBUV=0\0UV_USE_IO_URING=0\0", Map.of(5, "anon_inode:[io_uring]"), "", 701);
        Files.writeString(proc.resolve("700/cmdline"), "/usr/bin/python3\0/usr/local/bin/torchrun\0"
                + "--nproc-per-node\0002\0train.py\0");
        threads(700, "pt_tcpstore_uv", "pt_elastic");
        task(701, 700, "python3", "USE_LIBUV=0\0", Map.of(0, "/dev/null"), "");
        List<String> problems = lines(JobCheck.run(fs(), host, 700, "").findings(), Kind.PROBLEM, "io_uring");
        assertEquals(List.of("problem: pid 700 (python3: /usr/bin/python3 /usr/local/bin/torchrun --nproc-per-node 2 "
                + "train.py) fd 5: io_uring (anon_inode:[io_uring]): criu 4.2.1 cannot dump it (\"Unknown shit 600 "
                + "(anon_inode:[io_uring])\"); this is torchrun's elastic agent (thread pt_elastic), which holds one "
                + "for its rendezvous store's libuv whatever USE_LIBUV, UV_USE_IO_URING, TORCHELASTIC_USE_AGENT_STORE "
                + "or --rdzv-conf use_libuv=0 say: start the job with `criu-gpu run -- torchrun ...` (io_uring "
                + "unavailable to it and all it starts, so libuv uses epoll), or start the ranks with a plain launcher "
                + "(env:// rendezvous) and USE_LIBUV=0"), problems);
    }

    @Test
    void severalDeletedFilesOverTheGhostLimitMakeOneLine() throws IOException {
        String maps = "7f0000400000-7f0002400000 rw-s 00000000 00:1a 77 /dev/shm/nccl-A (deleted)\n"
                + "7f0004000000-7f0006000000 rw-s 00000000 00:1a 78 /dev/shm/nccl-B (deleted)\n";
        task(800, 1, "python3", "", Map.of(), maps);
        ProcFs fs = new ProcFs(proc) {
            @Override
            protected Optional<FileStat> stat(Path p) {
                String s = p.toString();
                if (s.contains("/map_files/7f0000400000-")) return Optional.of(new FileStat(32L << 20, 32L << 20, 0,
                        "00:1a", 77, true));
                if (s.contains("/map_files/7f0004000000-")) return Optional.of(new FileStat(40L << 20, 40L << 20, 0,
                        "00:1a", 78, true));
                return Optional.empty();
            }
        };
        JobCheck c = JobCheck.run(fs, host, 800, "");
        List<Finding> ghost = c.findings().stream().filter(f -> f.topic().equals("ghost")).toList();
        assertEquals(1, ghost.size(), ghost.toString());
        assertEquals("needs: --ghost-limit 40M: 2 deleted files (held by pid 800) hold 72.0 MiB in all, the largest "
                + "/dev/shm/nccl-B 40.0 MiB, over criu's default ghost limit of 1 MiB (criu copies deleted files into "
                + "the images; NCCL leaves such files in /dev/shm)", ghost.getFirst().toString());
        assertEquals(List.of("deleted file /dev/shm/nccl-A (mapped by pid 800) holds 32.0 MiB, over criu's default "
                + "ghost limit of 1 MiB", "deleted file /dev/shm/nccl-B (mapped by pid 800) holds 40.0 MiB, over "
                + "criu's default ghost limit of 1 MiB"), ghost.getFirst().items());
        assertTrue(c.summary(800).endsWith("options: criu dump -t 800 --ghost-limit 40M"), c.summary(800));
    }
}
