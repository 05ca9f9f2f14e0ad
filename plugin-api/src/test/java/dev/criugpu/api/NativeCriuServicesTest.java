package dev.criugpu.api;

import dev.criugpu.api.bindings.criu_gpu_services;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link NativeCriuServices#setChildExecutor}: the three addresses land in the shim's struct at the offsets the
 * binding declares (which LayoutConformanceIT checks against criu_gpu_shim.h), and nothing else changes.
 */
class NativeCriuServicesTest {
    private final Arena arena = Arena.ofAuto();
    private MemorySegment struct;

    @BeforeEach
    void shimStruct() {
        struct = arena.allocate(criu_gpu_services.layout());
        criu_gpu_services.size(struct, (int) criu_gpu_services.layout().byteSize());
        criu_gpu_services.stage(struct, Stage.RESTORE.id);
        criu_gpu_services.set(struct, "plugin_name", arena.allocateFrom("amdgpu_plugin"));
        criu_gpu_services.set(struct, "plugin_dir", arena.allocateFrom("/usr/lib/criu"));
        criu_gpu_services.set(struct, "compel_wait_task", MemorySegment.ofAddress(0x7000_0000_1000L));
    }

    private static long rawAt(MemorySegment s, String field) {
        return s.get(JAVA_LONG, criu_gpu_services.offsetOf(field));
    }

    @Test
    void writesContextAndBothFunctionsAtTheBindingsOffsets() {
        byte[] before = struct.toArray(JAVA_BYTE);
        NativeCriuServices services = new NativeCriuServices(struct);

        assertTrue(services.setChildExecutor(MemorySegment.ofAddress(0x1111_0000L),
                MemorySegment.ofAddress(0x2222_0000L), MemorySegment.ofAddress(0x3333_0000L)));

        assertEquals(0x1111_0000L, rawAt(struct, "child_ctx"));
        assertEquals(0x2222_0000L, rawAt(struct, "child_restore_ext_file"));
        assertEquals(0x3333_0000L, rawAt(struct, "child_update_vma_map"));
        // the three fields are the struct's last 24 bytes; everything before them is as it was
        long firstChildField = criu_gpu_services.offsetOf("child_ctx");
        assertEquals(criu_gpu_services.layout().byteSize() - 3 * 8, firstChildField);
        assertArrayEquals(struct.asSlice(0, firstChildField).toArray(JAVA_BYTE),
                MemorySegment.ofArray(before).asSlice(0, firstChildField).toArray(JAVA_BYTE));
        assertEquals(Path.of("/usr/lib/criu"), services.pluginDir());
    }

    @Test
    void aShimStructWithoutTheFieldsIsLeftAlone() {
        criu_gpu_services.size(struct, (int) criu_gpu_services.offsetOf("child_ctx"));
        byte[] before = struct.toArray(JAVA_BYTE);

        assertFalse(new NativeCriuServices(struct).setChildExecutor(MemorySegment.ofAddress(0x1111_0000L),
                MemorySegment.ofAddress(0x2222_0000L), MemorySegment.ofAddress(0x3333_0000L)));

        assertArrayEquals(before, struct.toArray(JAVA_BYTE));
    }

    @Test
    void standaloneHasNoShimToHandTheExecutorTo() {
        CriuServices standalone = new StandaloneCriuServices("amdgpu_plugin", Stage.RESTORE, LogLevel.ERROR,
                Path.of("."));
        assertFalse(standalone.setChildExecutor(MemorySegment.ofAddress(1), MemorySegment.ofAddress(2),
                MemorySegment.ofAddress(3)));
    }
}
