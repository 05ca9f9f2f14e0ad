package dev.criugpu.amdgpu.images;

import com.google.protobuf.InvalidProtocolBufferException;
import dev.criugpu.amdgpu.images.proto.CriuKfd;
import dev.criugpu.amdgpu.images.proto.CriuRenderNode;
import dev.criugpu.amdgpu.images.proto.KfdBoEntry;
import dev.criugpu.api.CriuException;
import dev.criugpu.api.Errno;

import java.nio.file.Path;

/**
 * Reads and writes the plugin's protobuf files in one images directory. A reader rejects, with one line naming
 * the file, a file that is not framed right, does not decode, lacks a required field, or whose counts disagree
 * with its lists.
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

    public CriuRenderNode readRenderNode(int fileId) {
        String name = ImageNames.renderNode(fileId);
        try {
            return CriuRenderNode.parseFrom(FramedFile.read(dir, name));
        } catch (InvalidProtocolBufferException e) {
            throw new CriuException(Errno.EINVAL, name + ": not a criu_render_node message: " + e.getMessage(), e);
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
        for (KfdBoEntry bo : kfd.getBoEntriesList()) {
            boolean known = kfd.getDeviceEntriesList().stream()
                    .anyMatch(e -> e.getCpuCoresCount() == 0 && e.getGpuId() == bo.getGpuId());
            if (!known) {
                throw bad(name, String.format("BO at 0x%x belongs to GPU 0x%04x, which has no device entry",
                        bo.getAddr(), bo.getGpuId()));
            }
        }
    }

    private static CriuException bad(String name, String why) {
        return new CriuException(Errno.EINVAL, name + ": " + why);
    }
}
