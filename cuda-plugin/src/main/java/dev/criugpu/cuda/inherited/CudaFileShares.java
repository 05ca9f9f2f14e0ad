package dev.criugpu.cuda.inherited;

import dev.criugpu.api.DeviceFile;
import dev.criugpu.api.Errno;
import dev.criugpu.api.sys.SyscallException;
import dev.criugpu.api.sys.Syscalls;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeMap;

/**
 * Which NVIDIA files of the tree's tasks without CUDA state are open files of a CUDA task too: the same open file
 * description, as a child gets its parent's through fork(). The driver's checkpoint closes the CUDA task's own, so
 * this is asked before it ({@link #scan}), with kcmp(2) between the CUDA task and each other task, all of them
 * stopped by criu; later criu's copy of a task's fd is compared with what was found ({@link #find}).
 */
final class CudaFileShares {
    /** fd {@code fd} of {@code task} is the open file that fd {@code cudaFd} of CUDA task {@code cudaPid} was. */
    record Share(int task, int fd, long rdev, int cudaPid, int cudaFd) {
    }

    private final Syscalls sys;
    private final NvidiaMajors majors;
    private final int self = (int) ProcessHandle.current().pid();
    private final Map<Integer, Map<Integer, Long>> nvidiaFds = new HashMap<>();
    private final List<Share> shares = new ArrayList<>();
    private String unknown;

    CudaFileShares(Syscalls sys, NvidiaMajors majors) {
        this.sys = sys;
        this.majors = majors;
    }

    /**
     * Before CUDA task {@code cudaPid}'s checkpoint, with every task stopped: which of its NVIDIA files {@code others}
     * have too. One task holding an open file is enough to recognise criu's copy of it later, so each of the CUDA
     * task's files is looked for until one is found, and the scan ends when all are: after fork() the first child
     * usually holds them all, at the same fd numbers (tried first).
     */
    void scan(int cudaPid, Collection<Integer> others) {
        Map<Integer, Long> unfound = new TreeMap<>(nvidiaFdsOf(cudaPid));
        for (int task : others) {
            if (unfound.isEmpty()) return;
            for (var t : nvidiaFds.computeIfAbsent(task, this::nvidiaFdsOf).entrySet()) {
                int fd = t.getKey();
                long rdev = t.getValue();
                Integer cudaFd = Objects.equals(unfound.get(fd), rdev) && same(cudaPid, fd, task, fd) ? Integer.valueOf(fd)
                        : unfound.entrySet().stream().filter(c -> c.getValue() == rdev && same(cudaPid, c.getKey(), task, fd))
                                .map(Map.Entry::getKey).findFirst().orElse(null);
                if (cudaFd == null) continue;
                shares.add(new Share(task, fd, rdev, cudaPid, cudaFd));
                unfound.remove(cudaFd);
            }
        }
    }

    /** Why the files could not be compared (kcmp refused, /proc unreadable); empty when they were. */
    Optional<String> unknown() {
        return Optional.ofNullable(unknown);
    }

    /** The share criu's fd {@code fd} (a copy of a task's, of device {@code rdev}) is one of. */
    Optional<Share> find(int fd, long rdev) {
        for (Share s : shares) {
            if (s.rdev() == rdev && same(self, fd, s.task(), s.fd())) return Optional.of(s);
        }
        return Optional.empty();
    }

    /** Whether {@code s}'s CUDA task still has the open file behind criu's fd {@code fd}: its checkpoint left it. */
    boolean stillInCudaTask(Share s, int fd) {
        return same(self, fd, s.cudaPid(), s.cudaFd());
    }

    int count() {
        return shares.size();
    }

    /** kcmp; a task or fd gone (ESRCH, EBADF) is not the same file, any other refusal makes the answer unknown. */
    private boolean same(int pid1, int fd1, int pid2, int fd2) {
        try {
            return sys.kcmpFile(pid1, pid2, fd1, fd2) == 0;
        } catch (SyscallException e) {
            if (e.errno() != Errno.ESRCH && e.errno() != Errno.EBADF && unknown == null) unknown = e.getMessage();
            return false;
        }
    }

    /**
     * The task's fds on an NVIDIA device and the device (st_rdev): a stat of each magic link, which opens nothing.
     * None for a task that is gone; none, and the answer unknown, for one whose fds cannot be read.
     */
    private Map<Integer, Long> nvidiaFdsOf(int pid) {
        Map<Integer, Long> fds = new TreeMap<>();
        try (DirectoryStream<Path> dir = Files.newDirectoryStream(Path.of("/proc/" + pid + "/fd"))) {
            for (Path p : dir) {
                Optional<DeviceFile> f = DeviceFiles.stat(p);
                if (f.isPresent() && majors.isNvidia(f.get())) fds.put(Integer.parseInt(p.getFileName().toString()), f.get().rdev());
            }
        } catch (NoSuchFileException e) {
            return Map.of();
        } catch (IOException | RuntimeException e) {
            if (unknown == null) unknown = "cannot read /proc/" + pid + "/fd: " + e.getMessage();
        }
        return fds;
    }
}
