package dev.criugpu.amdgpu.images;

import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import dev.criugpu.amdgpu.images.proto.CriuKfd;
import dev.criugpu.amdgpu.images.proto.CriuDmabufNode;
import dev.criugpu.amdgpu.images.proto.CriuRenderNode;
import dev.criugpu.amdgpu.images.proto.DrmBoEntry;
import dev.criugpu.amdgpu.images.proto.DrmVmEntry;
import dev.criugpu.amdgpu.images.proto.DevIolink;
import dev.criugpu.amdgpu.images.proto.KfdBoEntry;
import dev.criugpu.amdgpu.images.proto.KfdDeviceEntry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

/** Our .proto against criu v4.2's field table (criu's images/amdgpu-plugin.proto), and the file framing. */
class ImageWireFormatTest {
    @TempDir
    Path dir;

    /** "number name type label" per field, in the facts' order; type u32/u64/bytes/msg, label req/rep/opt. */
    private static final String DEV_IOLINK = "1 type u32 req|2 node_to_id u32 req";
    private static final String KFD_DEVICE_ENTRY = "1 node_id u32 req|2 gpu_id u32 req|3 cpu_cores_count u32 req|"
            + "4 simd_count u32 req|5 mem_banks_count u32 req|6 caches_count u32 req|7 io_links_count u32 req|"
            + "8 max_waves_per_simd u32 req|9 lds_size_in_kb u32 req|10 gds_size_in_kb u32 req|11 num_gws u32 req|"
            + "12 wave_front_size u32 req|13 array_count u32 req|14 simd_arrays_per_engine u32 req|"
            + "15 cu_per_simd_array u32 req|16 simd_per_cu u32 req|17 max_slots_scratch_cu u32 req|"
            + "18 vendor_id u32 req|19 device_id u32 req|20 domain u32 req|21 drm_render_minor u32 req|"
            + "22 hive_id u64 req|23 num_sdma_engines u32 req|24 num_sdma_xgmi_engines u32 req|"
            + "25 num_sdma_queues_per_engine u32 req|26 num_cp_queues u32 req|27 fw_version u32 req|"
            + "28 capability u32 req|29 sdma_fw_version u32 req|30 vram_public u32 req|31 vram_size u64 req|"
            + "32 iolinks msg rep";
    private static final String KFD_BO_ENTRY = "1 addr u64 req|2 size u64 req|3 offset u64 req|4 alloc_flags u32 req|"
            + "5 gpu_id u32 req|6 handle u32 opt";
    private static final String CRIU_KFD = "1 pid u32 req|2 num_of_gpus u32 req|3 num_of_cpus u32 req|"
            + "4 device_entries msg rep|5 num_of_bos u64 req|6 bo_entries msg rep|7 num_of_objects u32 req|"
            + "8 shared_mem_size u64 req|9 shared_mem_magic u32 req|10 priv_data bytes req";
    private static final String CRIU_RENDER_NODE = "1 gpu_id u32 req|2 id u32 opt|3 drm_render_minor u32 opt|"
            + "4 num_of_bos u64 opt|5 bo_entries msg rep";
    // criu-dev's new messages (criu-dev's plugins/amdgpu/criu-amdgpu.proto), labels as there.
    private static final String DRM_BO_ENTRY = "1 addr u64 req|2 size u64 req|3 offset u64 req|4 alloc_flags u64 req|"
            + "5 alignment u64 req|6 preferred_domains u32 req|7 handle u32 req|8 is_import u32 req|9 num_of_vms u32 req|"
            + "10 vm_entries msg rep";
    private static final String DRM_VM_ENTRY = "1 addr u64 req|2 size u64 req|3 offset u64 req|4 flags u64 req";
    private static final String CRIU_DMABUF_NODE = "1 gem_handle u32 req";

    private static String describe(Descriptor d) {
        List<String> out = new ArrayList<>();
        for (FieldDescriptor f : d.getFields()) {
            String type = switch (f.getType()) {
                case UINT32 -> "u32";
                case UINT64 -> "u64";
                case BYTES -> "bytes";
                case MESSAGE -> "msg";
                default -> f.getType().toString();
            };
            String label = f.isRepeated() ? "rep" : f.isRequired() ? "req" : "opt";
            out.add(f.getNumber() + " " + f.getName() + " " + type + " " + label);
        }
        return String.join("|", out);
    }

    @Test
    void fieldsMatchCriuV42() {
        assertEquals(DEV_IOLINK, describe(DevIolink.getDescriptor()));
        assertEquals(KFD_DEVICE_ENTRY, describe(KfdDeviceEntry.getDescriptor()));
        assertEquals(KFD_BO_ENTRY, describe(KfdBoEntry.getDescriptor()));
        assertEquals(CRIU_KFD, describe(CriuKfd.getDescriptor()));
        assertEquals(CRIU_RENDER_NODE, describe(CriuRenderNode.getDescriptor()));
    }

    @Test
    void newMessagesMatchCriuDev() {
        assertEquals(DRM_BO_ENTRY, describe(DrmBoEntry.getDescriptor()));
        assertEquals(DRM_VM_ENTRY, describe(DrmVmEntry.getDescriptor()));
        assertEquals(CRIU_DMABUF_NODE, describe(CriuDmabufNode.getDescriptor()));
        assertEquals("DrmVmEntry", DrmBoEntry.getDescriptor().findFieldByNumber(10).getMessageType().getName());
        assertEquals("DrmBoEntry", CriuRenderNode.getDescriptor().findFieldByNumber(5).getMessageType().getName());
    }

    @Test
    void criuDevRenderNodeBytes() throws Exception {
        // As criu-dev's plugin packs it (protobuf-c, fields in number order): gpu_id 0xf98b, id 7, minor 129, no BOs.
        byte[] criuDev = HexFormat.of().parseHex("088bf303" + "1007" + "188101" + "2000");
        FramedFile.write(dir, "amdgpu-renderD-7.img", criuDev);
        CriuRenderNode node = new AmdgpuImages(dir).readRenderNode(7);
        assertEquals(CriuRenderNode.newBuilder().setGpuId(0xf98b).setId(7).setDrmRenderMinor(129).setNumOfBos(0).build(), node);
        assertEquals(ImageFormat.CRIU_DEV, AmdgpuImages.formatOf(node));
        assertArrayEquals(criuDev, node.toByteArray(), "we write the same bytes");
    }

    @Test
    void criuDevKfdBoHandleIsFieldSix() {
        KfdBoEntry bo = KfdBoEntry.newBuilder().setAddr(1).setSize(2).setOffset(3).setAllocFlags(4).setGpuId(5)
                .setHandle(ImageFormat.NO_HANDLE).build();
        // field 6 varint 0xFFFFFFFF: 30 ff ff ff ff 0f (uint32, so 5 bytes, not a 10-byte negative int)
        assertEquals("0801" + "1002" + "1803" + "2004" + "2805" + "30ffffffff0f", HexFormat.of().formatHex(bo.toByteArray()));
    }

    @Test
    void renderNodeWithPartOfCriuDevsFieldsIsRefused() {
        FramedFile.write(dir, "amdgpu-renderD-8.img", CriuRenderNode.newBuilder().setGpuId(1).setId(8).build().toByteArray());
        var e = org.junit.jupiter.api.Assertions.assertThrows(dev.criugpu.api.CriuException.class,
                () -> new AmdgpuImages(dir).readRenderNode(8));
        assertEquals("amdgpu-renderD-8.img: has some of criu-dev's fields id, drm_render_minor and num_of_bos but not all",
                e.getMessage());
        FramedFile.write(dir, "amdgpu-renderD-9.img", CriuRenderNode.newBuilder().setGpuId(1).setId(9)
                .setDrmRenderMinor(128).setNumOfBos(2).build().toByteArray());
        e = org.junit.jupiter.api.Assertions.assertThrows(dev.criugpu.api.CriuException.class,
                () -> new AmdgpuImages(dir).readRenderNode(9));
        assertEquals("amdgpu-renderD-9.img: num_of_bos is 2 but 0 bo entries follow", e.getMessage());
    }

    @Test
    void renderNodeFileIsLengthHeaderThenMessageBytes() throws Exception {
        new AmdgpuImages(dir).writeRenderNode(7, CriuRenderNode.newBuilder().setGpuId(0xf98b).build());
        byte[] raw = Files.readAllBytes(dir.resolve("amdgpu-renderD-7.img"));
        // 8-byte little-endian length 4, then tag 0x08 (field 1, varint) and 0xf98b as a varint.
        assertEquals("0400000000000000" + "088bf303", HexFormat.of().formatHex(raw));
        assertEquals(0xf98b, new AmdgpuImages(dir).readRenderNode(7).getGpuId());
    }

    @Test
    void requiredZeroFieldsAreWritten() {
        CriuKfd kfd = CriuKfd.newBuilder().setPid(0).setNumOfGpus(0).setNumOfCpus(0).setNumOfBos(0)
                .setNumOfObjects(0).setSharedMemSize(0).setSharedMemMagic(0).setPrivData(com.google.protobuf.ByteString.EMPTY)
                .build();
        // Every required scalar appears on the wire even when 0: tags 08 10 18 28 38 40 48 52.
        assertArrayEquals(HexFormat.of().parseHex("0800100018002800380040004800" + "5200"), kfd.toByteArray());
    }

    @Test
    void fileNamesFollowUpstreamFormats() {
        assertEquals("amdgpu-kfd-12.img", ImageNames.kfd(12));
        assertEquals("amdgpu-renderD-13.img", ImageNames.renderNode(13));
        assertEquals("amdgpu-pages-5-f98b.img", ImageNames.pages(5, 0xf98b));
        assertEquals("amdgpu-pages-5-0007.img", ImageNames.pages(5, 7));
        assertEquals("amdgpu-pages-5-1a2b3.img", ImageNames.pages(5, 0x1a2b3));
        assertEquals("amdgpu-dmabuf_14.img", ImageNames.dmabuf(14));
        assertEquals("amdgpu-drm-pages-6-129-000a.img", ImageNames.drmPages(6, 129, 10));
    }
}
