package dev.criugpu.cuda.job;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Which tasks import another's CUDA IPC events, on a stand-in /proc with the files the GPU host showed for a tensor
 * sent through torch.multiprocessing (the exporter's /dev/shm/cuda.shm.0.HEXPID.1): the importer is named with its
 * exporter; the exporter, a task with only its own files and a child fork()ed from the exporter are not.
 */
class CudaIpcImportsTest {
    @TempDir
    Path proc;

    private static final String VDSO_A = "7ffd1000-7ffd3000 r-xp 00000000 00:00 0 [vdso]\n";
    private static final String VDSO_B = "7ffe8000-7ffea000 r-xp 00000000 00:00 0 [vdso]\n";

    private void task(int pid, int ppid, int nsPid, String maps) throws IOException {
        Path d = Files.createDirectories(proc.resolve(Integer.toString(pid)));
        Files.writeString(d.resolve("status"), "Name:\tpython3\nPPid:\t" + ppid + "\nNSpid:\t" + pid
                + (nsPid == pid ? "" : "\t" + nsPid) + "\n");
        Files.writeString(d.resolve("maps"), maps);
    }

    private static String shm(int owner) {
        return "7f00a000-7f00b000 rw-s 00000000 00:19 4242 /dev/shm/cuda.shm.0." + Integer.toHexString(owner) + ".1\n";
    }

    @Test
    void theImporterOfATensorSentThroughTorchMultiprocessingIsNamedWithItsExporter() throws IOException {
        task(3059, 1, 3059, VDSO_A + shm(3059));
        task(3100, 3059, 3100, VDSO_B + shm(3059) + shm(3100));
        task(3060, 3059, 3060, VDSO_A + shm(3059));   // a worker fork()ed from the exporter: it inherited the map
        task(3200, 1, 3200, VDSO_B + shm(3200));      // a process with IPC events of its own only
        List<CudaIpcImports.Import> imports = CudaIpcImports.of(proc, List.of(3059, 3100, 3060, 3200));
        assertEquals(List.of(new CudaIpcImports.Import(3100, 3059, "/dev/shm/cuda.shm.0.bf3.1")), imports);
        List<String> lines = CudaIpcImports.blockers(imports, ns -> Map.of(3059, 3059).containsKey(ns) ? Optional.of(ns) : Optional.empty());
        assertTrue(lines.getFirst().startsWith("pid 3100 imports GPU memory of pid 3059 through CUDA IPC (it maps "
                + "/dev/shm/cuda.shm.0.bf3.1"), lines.getFirst());
    }

    @Test
    void pidsAreComparedAsEachTaskSeesItselfInItsPidNamespace() throws IOException {
        // a container: the exporter is pid 7 inside (4007 outside), the importer pid 9 inside
        task(4007, 4000, 7, VDSO_A + shm(7));
        task(4009, 4007, 9, VDSO_B + shm(7));
        List<CudaIpcImports.Import> imports = CudaIpcImports.of(proc, List.of(4007, 4009));
        assertEquals(List.of(new CudaIpcImports.Import(4009, 7, "/dev/shm/cuda.shm.0.7.1")), imports);
        assertEquals("pid 4009 imports GPU memory of pid 4007", CudaIpcImports.blockers(imports,
                ns -> ns == 7 ? Optional.of(4007) : Optional.empty()).getFirst().substring(0, 39));
    }

    @Test
    void otherFilesInDevShmAreNotEvents() {
        assertEquals(Optional.of(0xbf3), CudaIpcImports.owner("/dev/shm/cuda.shm.0.bf3.1"));
        assertEquals(Optional.empty(), CudaIpcImports.owner("/dev/shm/cuda.shm.0.xyz.1"));
        assertEquals(Optional.empty(), CudaIpcImports.owner("/dev/shm/nccl-Xa9bQ2"));
        assertEquals(Optional.empty(), CudaIpcImports.owner("/dev/shm/torch_3059_1234_0"));
    }
}
