package dev.criugpu.amdgpu.bindings;

import dev.criugpu.amdgpu.testing.NativeTestPrograms;
import dev.criugpu.api.bindings.gpu_plan;
import dev.criugpu.api.bindings.gpu_plan_child;
import dev.criugpu.api.bindings.gpu_plan_h;
import dev.criugpu.api.bindings.gpu_plan_path;
import dev.criugpu.api.bindings.gpu_plan_program;
import dev.criugpu.api.bindings.gpu_plan_seam;
import dev.criugpu.api.bindings.gpu_plan_step;
import dev.criugpu.api.bindings.gpu_plan_vma;
import dev.criugpu.api.bindings.stat;
import org.junit.jupiter.api.Test;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Compares every binding with the real C headers: a probe compiled by gcc against linux/kfd_ioctl.h (and
 * libdrm/amdgpu.h where libdrm-dev is installed) prints sizes, offsets and constants; each must equal the Java
 * side, and each side must cover the other, so a field or constant added on one side only fails too.
 */
class LayoutConformanceTest {
    private static final List<Class<?>> KFD_STRUCTS = List.of(kfd_ioctl_get_version_args.class,
            kfd_ioctl_get_available_memory_args.class, kfd_ioctl_criu_args.class, kfd_criu_device_bucket.class,
            kfd_criu_bo_bucket.class, stat.class);
    private static final List<Class<?>> KFD_CONSTANTS = List.of(kfd_ioctl_h.class, kfd_sysfs_h.class);
    private static final List<Class<?>> DRM_STRUCTS = List.of(amdgpu_bo_alloc_request.class,
            amdgpu_bo_import_result.class, amdgpu_cs_ib_info.class, amdgpu_cs_fence_info.class, amdgpu_cs_fence.class,
            amdgpu_cs_request.class, amdgpu_gpu_info.class);
    private static final List<Class<?>> DRM_CONSTANTS = List.of(amdgpu_h.class);
    private static final List<Class<?>> PLAN_STRUCTS = List.of(gpu_plan_step.class, gpu_plan_program.class,
            gpu_plan_vma.class, gpu_plan_path.class, gpu_plan.class, gpu_plan_seam.class, gpu_plan_child.class);
    private static final List<Class<?>> PLAN_CONSTANTS = List.of(gpu_plan_h.class);
    private static final List<Class<?>> SOCKET_STRUCTS = List.of(msghdr.class, cmsghdr.class, iovec.class,
            pollfd.class);

    @Test
    void kfdBindingsMatchTheKernelUapiHeader() throws Exception {
        assertConforms(Probe.run("kfd_layout_probe"), KFD_STRUCTS, KFD_CONSTANTS);
    }

    @Test
    void libdrmBindingsMatchLibdrmHeaders() throws Exception {
        assumeTrue(Files.exists(Path.of("/usr/include/libdrm/amdgpu.h")), "libdrm-dev is not installed");
        assertConforms(Probe.run("drm_layout_probe"), DRM_STRUCTS, DRM_CONSTANTS);
    }

    @Test
    void restorePlanBindingsMatchTheExecutorHeader() throws Exception {
        assertConforms(Probe.run("plan_layout_probe"), PLAN_STRUCTS, PLAN_CONSTANTS);
    }

    @Test
    void socketBindingsMatchTheLibcHeaders() throws Exception {
        assertConforms(Probe.run("socket_layout_probe"), SOCKET_STRUCTS, List.of(socket_h.class));
    }

    @Test
    void criuArgsHaveTheDocumentedIoctlNumbers() {
        // Numbers quoted in the facts (x86-64), independent of the probe.
        assertEquals(0x80084B01, kfd_ioctl_h.AMDKFD_IOC_GET_VERSION());
        assertEquals(0xC0384B22, kfd_ioctl_h.AMDKFD_IOC_CRIU_OP());
        assertEquals(56, kfd_ioctl_criu_args.sizeof());
        assertEquals(48, kfd_criu_bo_bucket.sizeof());
        assertEquals(16, kfd_criu_device_bucket.sizeof());
    }

    @Test
    void accessorOffsetsAgreeWithLayouts() throws Exception {
        List<Class<?>> all = new ArrayList<>(KFD_STRUCTS);
        all.addAll(DRM_STRUCTS);
        all.addAll(PLAN_STRUCTS);
        all.addAll(SOCKET_STRUCTS);
        for (Class<?> c : all) {
            GroupLayout layout = layoutOf(c);
            for (MemoryLayout m : layout.memberLayouts()) {
                if (m.name().isEmpty()) continue;
                String f = m.name().get();
                long viaAccessor = (long) c.getMethod(f + "$offset").invoke(null);
                assertEquals(layout.byteOffset(MemoryLayout.PathElement.groupElement(f)), viaAccessor, c.getSimpleName() + "." + f);
            }
        }
    }

    @Test
    void installedLibdrmAmdgpuHasEveryBoundFunction() {
        // The real library, not the simulator the test JVM binds amdgpu_h to.
        var real = dev.criugpu.api.bindings.NativeLibrary.open(amdgpu_h.LIBRARY, null, null);
        assumeTrue(real.available(), amdgpu_h.LIBRARY + " is not installed");
        for (String f : amdgpu_h.FUNCTIONS) {
            assertTrue(real.has(f), f);
        }
    }

    @Test
    void simulatorHasEveryBoundFunction() {
        for (String f : amdgpu_h.FUNCTIONS) {
            assertTrue(amdgpu_h.find(f).isPresent(), amdgpu_h.origin() + " lacks " + f);
        }
    }

    private static void assertConforms(Probe probe, List<Class<?>> structs, List<Class<?>> constantClasses)
            throws Exception {
        TreeSet<String> boundStructs = new TreeSet<>();
        for (Class<?> c : structs) {
            GroupLayout layout = layoutOf(c);
            String name = layout.name().orElseThrow();
            boundStructs.add(name);
            assertEquals(c.getSimpleName(), name);
            assertTrue(probe.sizes.containsKey(name), "probe does not know struct " + name);
            assertEquals(probe.sizes.get(name), layout.byteSize(), "sizeof(struct " + name + ")");
            TreeSet<String> javaFields = new TreeSet<>();
            for (MemoryLayout m : layout.memberLayouts()) {
                if (m.name().isEmpty()) continue;
                String f = m.name().get();
                javaFields.add(f);
                long[] c0 = probe.fields.get(name + "." + f);
                assertTrue(c0 != null, "probe has no field " + name + "." + f);
                assertEquals(c0[0], layout.byteOffset(MemoryLayout.PathElement.groupElement(f)), "offsetof " + name + "." + f);
                assertEquals(c0[1], m.byteSize(), "sizeof " + name + "." + f);
            }
            TreeSet<String> cFields = new TreeSet<>();
            probe.fields.keySet().stream().filter(k -> k.startsWith(name + ".")).forEach(k -> cFields.add(k.substring(name.length() + 1)));
            assertEquals(cFields, javaFields, "fields of struct " + name);
        }
        assertEquals(new TreeSet<>(probe.sizes.keySet()), boundStructs, "structs probed vs bound");

        Map<String, Long> javaConstants = new HashMap<>();
        for (Class<?> c : constantClasses) {
            for (Method m : c.getDeclaredMethods()) {
                if (!Modifier.isPublic(m.getModifiers()) || !Modifier.isStatic(m.getModifiers())
                        || m.getParameterCount() != 0) continue;
                Object v = m.invoke(null);
                if (v instanceof Integer i) javaConstants.put(m.getName(), Integer.toUnsignedLong(i));
                else if (v instanceof Long l) javaConstants.put(m.getName(), l);
            }
        }
        assertEquals(new TreeSet<>(probe.constants.keySet()), new TreeSet<>(javaConstants.keySet()), "constants probed vs bound");
        for (var e : probe.constants.entrySet()) {
            assertEquals(Long.toUnsignedString(e.getValue()), Long.toUnsignedString(javaConstants.get(e.getKey())), e.getKey());
        }
    }

    private static GroupLayout layoutOf(Class<?> c) throws Exception {
        return (GroupLayout) c.getMethod("layout").invoke(null);
    }

    /** Parsed output of one layout probe (format in src/test/c/layout_probe.h). */
    private static final class Probe {
        final Map<String, Long> sizes = new HashMap<>();
        final Map<String, long[]> fields = new HashMap<>();
        final Map<String, Long> constants = new HashMap<>();

        static Probe run(String program) throws Exception {
            Probe p = new Probe();
            for (String line : NativeTestPrograms.runForOutput(program).split("\n")) {
                String[] w = line.trim().split(" ");
                switch (w[0]) {
                    case "S" -> p.sizes.put(w[1], Long.parseLong(w[2]));
                    case "F" -> p.fields.put(w[1] + "." + w[2], new long[]{Long.parseLong(w[3]), Long.parseLong(w[4])});
                    case "C" -> p.constants.put(w[1], Long.parseUnsignedLong(w[2]));
                    default -> throw new AssertionError(program + " printed an unknown line: " + line);
                }
            }
            assertTrue(!p.sizes.isEmpty(), program + " printed no structs");
            return p;
        }
    }
}
