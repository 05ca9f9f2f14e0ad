package dev.criugpu.cli.check;

import dev.criugpu.cli.check.ProcFs.Mapping;
import dev.criugpu.cli.check.ProcFs.Task;
import dev.criugpu.cuda.job.NcclTransports;

import java.util.Set;
import java.util.TreeSet;

/** What the names /proc gives fds and mappings say about the file behind them. */
final class ProcPaths {
    static final String DELETED = " (deleted)";

    private ProcPaths() {
    }

    /**
     * Files that are not files on a file system criu would copy as ghosts: shared anonymous memory, memfd (criu dumps
     * its contents), SysV shm, aio rings, hugetlb and dma-buf anon files.
     */
    static boolean special(String path) {
        return !path.startsWith("/") || path.startsWith("/memfd:") || path.startsWith("/SYSV")
                || path.startsWith("/dev/zero") || path.startsWith("/[") || path.startsWith("/anon_hugepage")
                || path.startsWith("/dmabuf") || path.startsWith("/dev/nvidia");
    }

    static String strip(String path) {
        return path.endsWith(DELETED) ? path.substring(0, path.length() - DELETED.length()) : path;
    }

    static boolean inShm(String path) {
        return path.startsWith("/dev/shm/");
    }

    /**
     * Whether some check reads the mappings of a file of this name; {@link ProcFs} keeps no others. NVIDIA devices:
     * {@link NvidiaHolderCheck}; io_uring: {@link IoUringCheck}; the vDSO, libnccl, libtorch_cuda: {@link NcclCheck};
     * deleted and /dev/shm files, memfd, SysV shm: {@link GhostFileCheck}, {@link SharedMemoryCheck}.
     */
    static boolean readByACheck(String path) {
        return nvidiaDevice(path) || path.contains("io_uring") || path.equals("[vdso]")
                || NcclTransports.ncclLibrary(path) || NcclTransports.torchLibrary(path) || path.endsWith(DELETED)
                || inShm(path) || path.startsWith("/memfd:") || path.startsWith("/SYSV");
    }

    static boolean nvidiaDevice(String path) {
        return path.startsWith("/dev/nvidia");
    }

    /** The NVIDIA device files {@code t} holds open or mapped, without "/dev/". */
    static Set<String> nvidiaFiles(Task t) {
        Set<String> devices = new TreeSet<>();
        t.fds().values().stream().filter(ProcPaths::nvidiaDevice).forEach(p -> devices.add(p.substring(5)));
        t.maps().stream().map(Mapping::path).filter(ProcPaths::nvidiaDevice).forEach(p -> devices.add(strip(p)
                .substring(5)));
        return devices;
    }
}
