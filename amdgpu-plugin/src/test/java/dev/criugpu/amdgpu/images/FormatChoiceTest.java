package dev.criugpu.amdgpu.images;

import com.google.protobuf.DescriptorProtos.DescriptorProto;
import com.google.protobuf.DescriptorProtos.FieldDescriptorProto;
import com.google.protobuf.DescriptorProtos.FileDescriptorProto;
import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.FileDescriptor;
import com.google.protobuf.DynamicMessage;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Message;
import dev.criugpu.amdgpu.images.proto.CriuKfd;
import dev.criugpu.amdgpu.images.proto.CriuRenderNode;
import dev.criugpu.amdgpu.images.proto.KfdBoEntry;
import org.junit.jupiter.api.Test;

import java.util.Set;
import java.util.function.Predicate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * Why criu-dev's format is what a dump writes by default, shown on the two upstream schemas as they are: criu-dev's
 * (our schema with its new fields required, as in criu-dev's criu-amdgpu.proto) and v4.2's (without them). Both
 * upstream plugins unpack with protobuf-c, which like protobuf-java refuses a message lacking a required field and
 * skips fields it does not know.
 */
class FormatChoiceTest {
    /** Fields criu-dev added and requires: message name → field names. */
    private static final Set<String> CRIU_DEV_REQUIRED = Set.of("KfdBoEntry.handle", "CriuRenderNode.id",
            "CriuRenderNode.drm_render_minor", "CriuRenderNode.num_of_bos");
    private static final Set<String> CRIU_DEV_ONLY_MESSAGES = Set.of("DrmBoEntry", "DrmVmEntry", "CriuDmabufNode");

    private static FileDescriptor schema(boolean criuDev) throws Exception {
        FileDescriptorProto ours = CriuKfd.getDescriptor().getFile().toProto();
        FileDescriptorProto.Builder f = ours.toBuilder().clearMessageType();
        for (DescriptorProto m : ours.getMessageTypeList()) {
            if (!criuDev && CRIU_DEV_ONLY_MESSAGES.contains(m.getName())) continue;
            DescriptorProto.Builder b = m.toBuilder().clearField();
            for (FieldDescriptorProto fd : m.getFieldList()) {
                boolean added = CRIU_DEV_REQUIRED.contains(m.getName() + "." + fd.getName())
                        || (m.getName().equals("CriuRenderNode") && fd.getName().equals("bo_entries"));
                if (!added) {
                    b.addField(fd);
                } else if (criuDev) {
                    b.addField(fd.getLabel() == FieldDescriptorProto.Label.LABEL_REPEATED ? fd
                            : fd.toBuilder().setLabel(FieldDescriptorProto.Label.LABEL_REQUIRED).build());
                }
            }
            f.addMessageType(b);
        }
        return FileDescriptor.buildFrom(f.build(), new FileDescriptor[0]);
    }

    private static Message parse(FileDescriptor schema, String type, byte[] bytes) throws InvalidProtocolBufferException {
        Descriptor d = schema.findMessageTypeByName(type);
        return DynamicMessage.parseFrom(d, bytes);
    }

    private static CriuKfd kfd(boolean handles) {
        KfdBoEntry.Builder bo = KfdBoEntry.newBuilder().setAddr(0x7f00_0000_0000L).setSize(4096).setOffset(0x1000)
                .setAllocFlags(1).setGpuId(0x1001);
        if (handles) bo.setHandle(ImageFormat.NO_HANDLE);
        return CriuKfd.newBuilder().setPid(1).setNumOfGpus(0).setNumOfCpus(0).setNumOfBos(1).addBoEntries(bo)
                .setNumOfObjects(0).setSharedMemSize(0).setSharedMemMagic(0)
                .setPrivData(com.google.protobuf.ByteString.EMPTY).build();
    }

    private static CriuRenderNode render(boolean criuDev) {
        CriuRenderNode.Builder b = CriuRenderNode.newBuilder().setGpuId(0x1001);
        if (criuDev) b.setId(6).setDrmRenderMinor(128).setNumOfBos(0);
        return b.build();
    }

    @Test
    void criuDevCannotReadV42Images() throws Exception {
        FileDescriptor criuDev = schema(true);
        var e = assertThrows(InvalidProtocolBufferException.class,
                () -> parse(criuDev, "CriuKfd", kfd(false).toByteArray()));
        assertEquals(true, e.getMessage().contains("handle"), e.getMessage());
        e = assertThrows(InvalidProtocolBufferException.class,
                () -> parse(criuDev, "CriuRenderNode", render(false).toByteArray()));
        assertEquals(true, e.getMessage().contains("num_of_bos"), e.getMessage());
    }

    @Test
    void bothUpstreamSchemasReadCriuDevImages() throws Exception {
        for (boolean dev : new boolean[]{true, false}) {
            FileDescriptor s = schema(dev);
            Message k = parse(s, "CriuKfd", kfd(true).toByteArray());
            Message r = parse(s, "CriuRenderNode", render(true).toByteArray());
            Descriptor bo = s.findMessageTypeByName("KfdBoEntry");
            Message first = (Message) k.getRepeatedField(k.getDescriptorForType().findFieldByName("bo_entries"), 0);
            assertEquals(0x7f00_0000_0000L, first.getField(bo.findFieldByName("addr")));
            assertEquals(0x1001, r.getField(r.getDescriptorForType().findFieldByName("gpu_id")));
            // v4.2 knows neither the handle nor the render node's new fields: it skips them.
            assertEquals(dev, bo.findFieldByName("handle") != null);
        }
    }

    @Test
    void oursReadsBoth() {
        Predicate<byte[]> reads = b -> {
            try {
                CriuKfd.parseFrom(b);
                return true;
            } catch (InvalidProtocolBufferException e) {
                return false;
            }
        };
        assertEquals(true, reads.test(kfd(true).toByteArray()));
        assertEquals(true, reads.test(kfd(false).toByteArray()));
        assertEquals(ImageFormat.CRIU_DEV, AmdgpuImages.formatOf(kfd(true)));
        assertEquals(ImageFormat.V4_2, AmdgpuImages.formatOf(kfd(false)));
        assertEquals(ImageFormat.CRIU_DEV, AmdgpuImages.formatOf(render(true)));
        assertEquals(ImageFormat.V4_2, AmdgpuImages.formatOf(render(false)));
    }

    @Test
    void defaultIsCriuDev() {
        assertEquals(ImageFormat.CRIU_DEV, ImageFormat.fromEnvironment(java.util.Map.of()));
        assertEquals(ImageFormat.V4_2, ImageFormat.fromEnvironment(java.util.Map.of(ImageFormat.ENV, "v4.2")));
        assertThrows(dev.criugpu.api.CriuException.class,
                () -> ImageFormat.fromEnvironment(java.util.Map.of(ImageFormat.ENV, "4.2")));
    }
}
