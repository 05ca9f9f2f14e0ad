package dev.criugpu.amdgpu.images;

import com.google.protobuf.InvalidProtocolBufferException;
import dev.criugpu.amdgpu.images.proto.CriuKfd;
import dev.criugpu.amdgpu.images.proto.CriuDmabufNode;
import dev.criugpu.amdgpu.images.proto.CriuRenderNode;
import dev.criugpu.amdgpu.images.proto.DrmBoEntry;
import dev.criugpu.amdgpu.bindings.kfd_ioctl_h;
import dev.criugpu.amdgpu.images.proto.KfdBoEntry;
import dev.criugpu.amdgpu.kfd.BoBucket;
import dev.criugpu.api.CriuException;
import dev.criugpu.api.Errno;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;

/**
 * Reads and writes the plugin's protobuf files in one images directory. A reader rejects, with one line naming
 * the file, a file that is not framed right, does not decode, lacks a required field, whose counts disagree
 * with its lists, or whose BO sizes are not sizes (2^63 bytes or more, alone or added up per GPU): they size the
 * pages files, copies and buffers of the restore.
 */
public final class AmdgpuImages {
    private final Path dir;

    public AmdgpuImages(Path dir) {
        this.dir = dir;
    }

    public Path dir() {
        return dir;
    }

    public void writeKfd(int fileId, CriuKfd kfd) {
        validate(ImageNames.kfd(fileId), kfd);
        FramedFile.write(dir, ImageNames.kfd(fileId), kfd.toByteArray());
    }

    public boolean hasKfd(int fileId) {
        return FramedFile.exists(dir, ImageNames.kfd(fileId));
    }

    public CriuKfd readKfd(int fileId) {
        String name = ImageNames.kfd(fileId);
        CriuKfd kfd;
        try {
            kfd = CriuKfd.parseFrom(FramedFile.read(dir, name));
        } catch (InvalidProtocolBufferException e) {
            throw new CriuException(Errno.EINVAL, name + ": not a criu_kfd message: " + e.getMessage(), e);
        }
        validate(name, kfd);
        return kfd;
    }

    public void writeRenderNode(int fileId, CriuRenderNode node) {
        FramedFile.write(dir, ImageNames.renderNode(fileId), node.toByteArray());
    }

    /**
     * A render node in either format. criu-dev's fields come all or none (criu-dev requires them), and its BO and
     * VM counts must match its lists.
     */
    public CriuRenderNode readRenderNode(int fileId) {
        String name = ImageNames.renderNode(fileId);
        CriuRenderNode node;
        try {
            node = CriuRenderNode.parseFrom(FramedFile.read(dir, name));
        } catch (InvalidProtocolBufferException e) {
            throw new CriuException(Errno.EINVAL, name + ": not a criu_render_node message: " + e.getMessage(), e);
        }
        int present = (node.hasId() ? 1 : 0) + (node.hasDrmRenderMinor() ? 1 : 0) + (node.hasNumOfBos() ? 1 : 0);
        if (present != 0 && present != 3) {
            throw bad(name, "has some of criu-dev's fields id, drm_render_minor and num_of_bos but not all");
        }
        if (present == 0 && node.getBoEntriesCount() > 0) {
            throw bad(name, "has bo entries but no num_of_bos");
        }
        if (node.getNumOfBos() != node.getBoEntriesCount()) {
            throw bad(name, "num_of_bos is " + Long.toUnsignedString(node.getNumOfBos()) + " but "
                    + node.getBoEntriesCount() + " bo entries follow");
        }
        for (DrmBoEntry bo : node.getBoEntriesList()) {
            if (bo.getNumOfVms() != bo.getVmEntriesCount()) {
                throw bad(name, String.format("DRM BO %s: num_of_vms is %s but %d vm entries follow",
                        Integer.toUnsignedString(bo.getHandle()), Integer.toUnsignedString(bo.getNumOfVms()),
                        bo.getVmEntriesCount()));
            }
        }
        return node;
    }

    /** The format a render node was written in: criu-dev's when it carries criu-dev's fields. */
    public static ImageFormat formatOf(CriuRenderNode node) {
        return node.hasNumOfBos() ? ImageFormat.CRIU_DEV : ImageFormat.V4_2;
    }

    /** The format of a KFD image: criu-dev's when its BO entries carry handles (one without BOs reads as either). */
    public static ImageFormat formatOf(CriuKfd kfd) {
        return kfd.getBoEntriesList().stream().anyMatch(KfdBoEntry::hasHandle) ? ImageFormat.CRIU_DEV : ImageFormat.V4_2;
    }

    /** criu-dev: a dma-buf fd's image. */
    public void writeDmabuf(int fileId, CriuDmabufNode node) {
        FramedFile.write(dir, ImageNames.dmabuf(fileId), node.toByteArray());
    }

    public boolean hasDmabuf(int fileId) {
        return FramedFile.exists(dir, ImageNames.dmabuf(fileId));
    }

    public CriuDmabufNode readDmabuf(int fileId) {
        String name = ImageNames.dmabuf(fileId);
        try {
            return CriuDmabufNode.parseFrom(FramedFile.read(dir, name));
        } catch (InvalidProtocolBufferException e) {
            throw new CriuException(Errno.EINVAL, name + ": not a criu_dmabuf_node message: " + e.getMessage(), e);
        }
    }

    private static void validate(String name, CriuKfd kfd) {
        if (kfd.getNumOfBos() != kfd.getBoEntriesCount()) {
            throw bad(name, "num_of_bos is " + kfd.getNumOfBos() + " but " + kfd.getBoEntriesCount() + " bo entries follow");
        }
        long nodes = (long) kfd.getNumOfGpus() + kfd.getNumOfCpus();
        if (nodes != kfd.getDeviceEntriesCount()) {
            throw bad(name, "num_of_gpus + num_of_cpus is " + nodes + " but " + kfd.getDeviceEntriesCount()
                    + " device entries follow");
        }
        long gpus = kfd.getDeviceEntriesList().stream().filter(e -> e.getCpuCoresCount() == 0).count();
        if (gpus != kfd.getNumOfGpus()) {
            throw bad(name, "num_of_gpus is " + kfd.getNumOfGpus() + " but " + gpus + " device entries are GPUs");
        }
        Map<Integer, Long> contents = new HashMap<>();
        long handles = kfd.getBoEntriesList().stream().filter(KfdBoEntry::hasHandle).count();
        if (handles != 0 && handles != kfd.getBoEntriesCount()) {
            throw bad(name, handles + " of " + kfd.getBoEntriesCount() + " bo entries have criu-dev's handle field;"
                    + " criu-dev writes it on every entry");
        }
        for (KfdBoEntry bo : kfd.getBoEntriesList()) {
            boolean known = kfd.getDeviceEntriesList().stream()
                    .anyMatch(e -> e.getCpuCoresCount() == 0 && e.getGpuId() == bo.getGpuId());
            if (!known) {
                throw bad(name, String.format("BO at 0x%x belongs to GPU 0x%04x, which has no device entry",
                        bo.getAddr(), bo.getGpuId()));
            }
            if (bo.getSize() < 0) {
                throw bad(name, String.format("BO at 0x%x has size %s, not a size", bo.getAddr(),
                        Long.toUnsignedString(bo.getSize())));
            }
            if (!BoBucket.hasContents(bo.getAllocFlags())) continue;
            try {
                contents.merge(bo.getGpuId(), bo.getSize(), Math::addExact);
            } catch (ArithmeticException e) {
                throw bad(name, String.format("the VRAM/GTT BOs of GPU 0x%04x add up to 2^63 bytes or more",
                        bo.getGpuId()));
            }
        }
    }

    /** The bytes of the VRAM BOs of each checkpointed GPU of a validated image. */
    public static Map<Integer, Long> vramBytes(CriuKfd kfd) {
        Map<Integer, Long> vram = new TreeMap<>();
        for (KfdBoEntry bo : kfd.getBoEntriesList()) {
            if ((bo.getAllocFlags() & kfd_ioctl_h.KFD_IOC_ALLOC_MEM_FLAGS_VRAM()) != 0) {
                vram.merge(bo.getGpuId(), bo.getSize(), Long::sum);
            }
        }
        return vram;
    }

    private static CriuException bad(String name, String why) {
        return new CriuException(Errno.EINVAL, name + ": " + why);
    }
}
