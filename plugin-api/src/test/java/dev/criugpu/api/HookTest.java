package dev.criugpu.api;

import dev.criugpu.api.bindings.stat;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

class HookTest {
    private static final CriuServices SERVICES = new StandaloneCriuServices("test", Stage.DUMP, LogLevel.ERROR,
            java.nio.file.Path.of("."));

    @Test
    void idsAreCriusNumbersAndUnique() {
        assertEquals(Hook.values().length, Arrays.stream(Hook.values()).mapToInt(h -> h.id).distinct().count());
        for (Hook h : Hook.values()) assertTrue(h.id >= 0 && h.id < Hook.EXIT_SLOT, h + " outside the shim's table");
        assertEquals(0xe04, Hook.mask(EnumSet.of(Hook.PAUSE_DEVICES, Hook.CHECKPOINT_DEVICES, Hook.RESUME_DEVICES_LATE,
                Hook.DUMP_EXT_FILE)));
    }

    @Test
    void everyMainHookReachesAPluginMethodOfJavaTypesThroughAnUpcallOfItsCSignature() {
        for (Hook h : Hook.values()) {
            if (h.context != Hook.Context.MAIN) {
                assertNull(h.javaMethod, h + " does not enter Java");
                continue;
            }
            HookDispatcher dispatcher = new HookDispatcher(new RecordingPlugin(), SERVICES);
            assertEquals(HookStubs.descriptor(h).toMethodType(), HookStubs.upcallTarget(dispatcher, h).type(),
                    h + ": the upcall's C signature");
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
    void anUpcallCallsThePluginWithCriusArgumentsAndTurnsAThrowIntoAnErrno() throws Throwable {
        CallsPlugin plugin = new CallsPlugin();
        HookDispatcher dispatcher = new HookDispatcher(plugin, SERVICES);
        assertEquals(0, (int) HookStubs.upcallTarget(dispatcher, Hook.DUMP_EXT_FILE).invokeExact(5, 9));
        assertEquals(List.of("dumpExtFile 5 9"), plugin.calls);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment st = stat.allocate(arena);
            stat.st_rdev(st, (195L << 8) | 2);
            assertEquals(0, (int) HookStubs.upcallTarget(dispatcher, Hook.HANDLE_DEVICE_VMA).invokeExact(4, st));
        }
        assertEquals("handleDeviceVma 4 rdev 195:2", plugin.calls.getLast());
        // criu 4.3's DUMP_FINISH (id 16, beyond the first table's size): the list entry and this method were all it took
        assertEquals(0, (int) HookStubs.upcallTarget(dispatcher, Hook.DUMP_FINISH).invokeExact(-5));
        assertEquals("dumpFinish -5", plugin.calls.getLast());
        plugin.failWith = new CriuException(Errno.ENODEV, "no GPU");
        assertEquals(-Errno.ENODEV, (int) HookStubs.upcallTarget(dispatcher, Hook.PAUSE_DEVICES).invokeExact(77));
        plugin.failWith = new IllegalStateException("a bug");
        assertEquals(-Errno.EIO, (int) HookStubs.upcallTarget(dispatcher, Hook.DUMP_DEVICES_LATE).invokeExact(3));
    }

    /** Records each hook call with its Java arguments; throws {@link #failWith} once set. */
    private static final class CallsPlugin implements CriuPlugin {
        final List<String> calls = new java.util.ArrayList<>();
        RuntimeException failWith;

        private int record(String call) {
            if (failWith != null) throw failWith;
            calls.add(call);
            return 0;
        }

        @Override
        public String name() {
            return "calls_plugin";
        }

        @Override
        public Set<Hook> hooks() {
            return EnumSet.of(Hook.DUMP_EXT_FILE, Hook.HANDLE_DEVICE_VMA, Hook.PAUSE_DEVICES, Hook.DUMP_DEVICES_LATE,
                    Hook.DUMP_FINISH);
        }

        @Override
        public Diagnosis diagnose() {
            return null;
        }

        @Override
        public int dumpExtFile(int fd, int id) {
            return record("dumpExtFile " + fd + " " + id);
        }

        @Override
        public int handleDeviceVma(int fd, DeviceFile file) {
            return record("handleDeviceVma " + fd + " rdev " + file.rdevMajor() + ":" + file.rdevMinor());
        }

        @Override
        public int pauseDevices(int pid) {
            return record("pauseDevices " + pid);
        }

        @Override
        public int dumpDevicesLate(int id) {
            return record("dumpDevicesLate " + id);
        }

        @Override
        public int dumpFinish(int ret) {
            return record("dumpFinish " + ret);
        }
    }

    @Test
    void theContractServesTheEnumsMainHooksAndNothingElse() {
        Set<String> main = Arrays.stream(Hook.values()).filter(h -> h.context == Hook.Context.MAIN)
                .map(h -> h.javaMethod).collect(Collectors.toSet());
        Set<String> plugin = Arrays.stream(CriuPlugin.class.getDeclaredMethods()).filter(Method::isDefault)
                .map(Method::getName).filter(n -> !Set.of("prepare", "warmUp", "earlyHelper", "init", "checkRestore", "exit").contains(n)).collect(Collectors.toSet());
        assertEquals(main, plugin, "CriuPlugin's hook methods vs the MAIN hooks of dev.criugpu.api.Hook");
    }

    @Test
    void theStatCriuPassesBecomesADeviceFile() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment st = stat.allocate(arena);
            stat.st_dev(st, 0x803);
            stat.st_ino(st, 77);
            stat.st_mode(st, 0020660);
            stat.st_rdev(st, (226L << 8) | 128);
            DeviceFile f = HookStubs.deviceFile(st);
            assertEquals(new DeviceFile(0x803, 77, 0020660, (226L << 8) | 128), f);
            assertTrue(f.isCharDevice());
            assertEquals(226, f.rdevMajor());
            assertEquals(128, f.rdevMinor());
        }
    }
}
