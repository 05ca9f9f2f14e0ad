package dev.criugpu.api;

import org.junit.jupiter.api.Test;

import java.lang.reflect.Method;
import java.util.EnumSet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

class HookTest {
    @Test
    void idsAreCriusNumbersAndUnique() {
        for (Hook h : Hook.values()) assertEquals(h, Hook.of(h.id));
        assertEquals(15, Hook.values().length);
        assertEquals(0x1c00, Hook.mask(EnumSet.of(Hook.PAUSE_DEVICES, Hook.CHECKPOINT_DEVICES, Hook.POST_FORKING)));
    }

    @Test
    void everyMainHookHasAPluginMethodWithItsCSignature() throws Exception {
        for (Hook h : Hook.values()) {
            if (h.context == Hook.Context.CHILD) {
                assertNull(h.javaMethod, h + " runs in a forked child and must not enter Java");
                continue;
            }
            Method m = CriuPlugin.class.getMethod(h.javaMethod, h.descriptor.toMethodType().parameterArray());
            assertNotNull(m);
            assertEquals(int.class, m.getReturnType());
        }
    }
}
