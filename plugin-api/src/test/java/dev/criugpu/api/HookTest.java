package dev.criugpu.api;

import dev.criugpu.api.bindings.stat;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.reflect.Method;
import java.util.Arrays;
import java.util.EnumSet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

class HookTest {
    @Test
    void idsAreCriusNumbersAndUnique() {
        for (Hook h : Hook.values()) assertEquals(h, Hook.of(h.id));
        assertEquals(15, Hook.values().length);
        assertEquals(0x1c00, Hook.mask(EnumSet.of(Hook.PAUSE_DEVICES, Hook.CHECKPOINT_DEVICES, Hook.POST_FORKING)));
    }

    @Test
    void everyMainHookHasADispatcherMethodWithItsCSignatureAndAPluginMethodOfJavaTypes() throws Exception {
        for (Hook h : Hook.values()) {
            if (h.context == Hook.Context.CHILD) {
                assertNull(h.javaMethod, h + " runs in a forked child and must not enter Java");
                continue;
            }
            Method upcall = HookDispatcher.class.getDeclaredMethod(h.javaMethod,
                    h.descriptor.toMethodType().parameterArray());
            assertEquals(int.class, upcall.getReturnType());
            Method plugin = Arrays.stream(CriuPlugin.class.getMethods())
                    .filter(m -> m.getName().equals(h.javaMethod)).findFirst().orElse(null);
            assertNotNull(plugin, "CriuPlugin." + h.javaMethod);
            assertEquals(int.class, plugin.getReturnType());
            for (Class<?> p : plugin.getParameterTypes()) {
                assertFalse(MemorySegment.class.isAssignableFrom(p), "CriuPlugin." + h.javaMethod + " takes " + p);
            }
        }
    }

    @Test
    void theStatCriuPassesBecomesADeviceFile() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment st = stat.allocate(arena);
            stat.st_dev(st, 0x803);
            stat.st_ino(st, 77);
            stat.st_mode(st, 0020660);
            stat.st_rdev(st, (226L << 8) | 128);
            DeviceFile f = HookDispatcher.deviceFile(st);
            assertEquals(new DeviceFile(0x803, 77, 0020660, (226L << 8) | 128), f);
            assertTrue(f.isCharDevice());
            assertEquals(226, f.rdevMajor());
            assertEquals(128, f.rdevMinor());
        }
    }
}
