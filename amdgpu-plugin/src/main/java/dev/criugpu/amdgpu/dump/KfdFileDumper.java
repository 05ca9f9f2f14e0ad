package dev.criugpu.amdgpu.dump;

import com.google.protobuf.ByteString;
import dev.criugpu.amdgpu.images.AmdgpuImages;
import dev.criugpu.amdgpu.images.DeviceEntries;
import dev.criugpu.amdgpu.images.ImageFormat;
import dev.criugpu.amdgpu.images.proto.CriuKfd;
import dev.criugpu.amdgpu.images.proto.KfdBoEntry;
import dev.criugpu.amdgpu.kfd.BoBucket;
import dev.criugpu.amdgpu.kfd.DeviceBucket;
import dev.criugpu.amdgpu.kfd.KfdCheckpoint;
import dev.criugpu.amdgpu.sys.KfdFile;
import dev.criugpu.amdgpu.kfd.ProcessInfo;
import dev.criugpu.amdgpu.topology.Topology;
import dev.criugpu.api.CriuException;
import dev.criugpu.api.Errno;
import dev.criugpu.api.sys.RegularFiles;
import dev.criugpu.api.sys.Syscalls;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

/**
 * Dumps one KFD fd (DUMP_EXT_FILE): version check on a fresh {@code /dev/kfd}, PROCESS_INFO (pauses the
 * queues), CHECKPOINT, the {@code amdgpu-kfd-<id>.img} image, and UNPAUSE on every path once PROCESS_INFO has
 * paused the queues, so a failed dump never leaves the GPU queues stopped. Must run on the hook's thread.
 * Between CHECKPOINT and the image, {@link BoContentDumper} copies the VRAM/GTT contents into the pages files
 * through the dma-buf fds CHECKPOINT opened; those fds are closed on every path (those the copies took by the copy
 * threads, which may outlive an interrupted wait).
 */
public final class KfdFileDumper {
    public static final Path HSAKMT_SHM = Path.of("/dev/shm/hsakmt_shared_mem");

    private final Syscalls sys;
    private final AmdgpuImages images;
    private final Topology topology;
    private final Path hsakmtShm;
    /** actual gpu id → user gpu id, from every KFD fd dumped so far (render nodes need it). */
    private final Map<Integer, Integer> checkpointMaps = new HashMap<>();

    private final BoContentDumper contents;

    private final ImageFormat format;

    /** {@code maxBufferSize}: {@code KFD_MAX_BUFFER_SIZE} (0 = no cap), see {@link MaxBufferSize}. Writes the default format. */
    public KfdFileDumper(Syscalls sys, AmdgpuImages images, Topology topology, Path hsakmtShm, long maxBufferSize) {
        this(sys, images, topology, hsakmtShm, maxBufferSize, ImageFormat.CRIU_DEV);
    }

    public KfdFileDumper(Syscalls sys, AmdgpuImages images, Topology topology, Path hsakmtShm, long maxBufferSize,
                         ImageFormat format) {
        this.format = format;
        this.sys = sys;
        this.images = images;
        this.topology = topology;
        this.hsakmtShm = hsakmtShm;
        this.contents = new BoContentDumper(sys, images.dir(), maxBufferSize);
    }

    public Map<Integer, Integer> checkpointMaps() {
        return Map.copyOf(checkpointMaps);
    }

    public CriuKfd dump(int kfdFd, int fileId) {
        checkVersion();
        KfdFile kfd = new KfdFile(sys, kfdFd);
        ProcessInfo info = kfd.processInfo();
        CriuException failure = null;
        try {
            KfdCheckpoint cp = kfd.checkpoint(info);
            Set<Integer> takenByCopies = new HashSet<>();
            try {
                Map<Integer, Integer> toUser = userGpuIds(info, cp);
                // Only the GPUs the process uses go into the image (upstream v4.2 fails on a visible unused GPU, #2723).
                Topology used = topology.onlyGpus(toUser.keySet());
                CriuKfd image = toImage(info, cp, used, toUser);
                contents.dump(fileId, cp, used, checkpointMaps, takenByCopies);
                images.writeKfd(fileId, image);
                return image;
            } finally {
                closeDmabufs(cp, takenByCopies);
            }
        } catch (CriuException e) {
            failure = e;
            throw e;
        } finally {
            try {
                kfd.unpause();
            } catch (CriuException e) {
                if (failure != null) failure.addSuppressed(e);
                else throw e;
            }
        }
    }

    private void checkVersion() {
        int fd = sys.open(KfdFile.DEVICE, Syscalls.O_RDONLY | Syscalls.O_CLOEXEC);
        try {
            new KfdFile(sys, fd).requireCriuSupport();
        } finally {
            sys.close(fd);
        }
    }

    /** actual → user gpu id of the process's GPUs, each of which must be in the topology; added to the maps. */
    private Map<Integer, Integer> userGpuIds(ProcessInfo info, KfdCheckpoint cp) {
        Map<Integer, Integer> toUser = new HashMap<>();
        for (DeviceBucket d : cp.devices()) {
            if (topology.gpu(d.actualGpuId()).isEmpty()) {
                throw new CriuException(Errno.EINVAL, String.format("pid %d uses GPU 0x%04x, which the KFD topology"
                        + " (%s) does not show", info.pid(), d.actualGpuId(), topology.label()));
            }
            toUser.put(d.actualGpuId(), d.userGpuId());
        }
        checkpointMaps.putAll(toUser);
        return toUser;
    }

    private CriuKfd toImage(ProcessInfo info, KfdCheckpoint cp, Topology used, Map<Integer, Integer> toUser) {
        CriuKfd.Builder b = CriuKfd.newBuilder()
                .setPid(info.pid())
                .setNumOfGpus(cp.devices().size())
                .setNumOfCpus(used.cpus().size())
                .addAllDeviceEntries(DeviceEntries.fromTopology(used, toUser::get))
                .setNumOfBos(cp.bos().size())
                .setNumOfObjects(info.numObjects())
                .setPrivData(ByteString.copyFrom(cp.privData()));
        for (BoBucket bo : cp.bos()) {
            KfdBoEntry.Builder e = KfdBoEntry.newBuilder().setAddr(bo.addr()).setSize(bo.size()).setOffset(bo.offset())
                    .setAllocFlags(bo.allocFlags()).setGpuId(bo.gpuId());
            // criu-dev keys dma-buf fds and imported DRM BOs by this handle; neither is dumped by this plugin, so
            // no BO is shared with one: criu-dev's "no handle".
            if (format == ImageFormat.CRIU_DEV) e.setHandle(ImageFormat.NO_HANDLE);
            b.addBoEntries(e);
        }
        setSharedMem(b);
        return b.build();
    }

    /** hsakmt's shared memory file: its size and first 4 bytes (host order), or size 0 when absent. */
    private void setSharedMem(CriuKfd.Builder b) {
        if (!Files.exists(hsakmtShm, LinkOption.NOFOLLOW_LINKS)) {
            b.setSharedMemSize(0).setSharedMemMagic(0);
            return;
        }
        try (FileChannel ch = RegularFiles.openForReading(hsakmtShm)) {
            ByteBuffer magic = ByteBuffer.allocate(4).order(ByteOrder.nativeOrder());
            while (magic.hasRemaining() && ch.read(magic) >= 0) {
                // a short file has no magic: 0, as upstream reads it
            }
            b.setSharedMemSize(ch.size()).setSharedMemMagic(magic.hasRemaining() ? 0 : magic.getInt(0));
        } catch (IOException e) {
            throw new CriuException(Errno.EIO, "cannot read " + hsakmtShm + ": " + e.getMessage(), e);
        }
    }

    /** Closes the dma-buf fds the copies did not take (they close theirs, see {@link BoContentDumper}). */
    private void closeDmabufs(KfdCheckpoint cp, Set<Integer> takenByCopies) {
        for (BoBucket bo : cp.bos()) {
            if (bo.hasDmabuf() && !takenByCopies.contains(bo.dmabufFd())) sys.close(bo.dmabufFd());
        }
    }
}
