package dev.criugpu.api.bindings;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * {@code struct criu_gpu_services} from native/src/criu_gpu_shim.h: what the shim hands Java at bootstrap.
 * Written in the shape jextract generates; the layout conformance test checks it against the C header.
 */
public final class criu_gpu_services {
    public static final int FLAG_FORCED = 1;
    public static final int FLAG_RESTORE_CHECK = 2;
    /** The shim turns criu's exit status 0 into {@code exit_status} when criu's main returns. */
    public static final int FLAG_EXIT_STATUS = 4;

    private static final GroupLayout LAYOUT = MemoryLayout.structLayout(
            JAVA_INT.withName("size"),
            JAVA_INT.withName("stage"),
            JAVA_INT.withName("criu_hook_count"),
            JAVA_INT.withName("flags"),
            JAVA_INT.withName("inventory_claim"),
            JAVA_INT.withName("hook_mask"),
            ADDRESS.withName("plugin_name"),
            ADDRESS.withName("plugin_dir"),
            ADDRESS.withName("hook_table"),
            ADDRESS.withName("print_on_level"),
            ADDRESS.withName("log_get_loglevel"),
            ADDRESS.withName("criu_get_image_dir"),
            ADDRESS.withName("add_inventory_plugin"),
            ADDRESS.withName("set_compel_interrupt_only_mode"),
            ADDRESS.withName("compel_wait_task"),
            ADDRESS.withName("child_plan"),
            ADDRESS.withName("plan_region"),
            JAVA_LONG.withName("plan_region_size"),
            JAVA_INT.withName("exit_status"),
            MemoryLayout.paddingLayout(4),
            ADDRESS.withName("launch_helper"),
            JAVA_LONG.withName("park_last_pid")
    ).withName("criu_gpu_services");

    private criu_gpu_services() {
    }

    public static GroupLayout layout() {
        return LAYOUT;
    }

    public static long offsetOf(String field) {
        return LAYOUT.byteOffset(MemoryLayout.PathElement.groupElement(field));
    }

    public static MemorySegment reinterpret(MemorySegment address) {
        return address.reinterpret(LAYOUT.byteSize());
    }

    private static int i32(MemorySegment s, String f) {
        return s.get(JAVA_INT, offsetOf(f));
    }

    private static MemorySegment ptr(MemorySegment s, String f) {
        return s.get(ADDRESS, offsetOf(f));
    }

    public static int size(MemorySegment s) { return i32(s, "size"); }
    public static int stage(MemorySegment s) { return i32(s, "stage"); }
    public static int criu_hook_count(MemorySegment s) { return i32(s, "criu_hook_count"); }
    public static int flags(MemorySegment s) { return i32(s, "flags"); }
    public static int inventory_claim(MemorySegment s) { return i32(s, "inventory_claim"); }
    public static int hook_mask(MemorySegment s) { return i32(s, "hook_mask"); }
    public static MemorySegment plugin_name(MemorySegment s) { return ptr(s, "plugin_name"); }
    public static MemorySegment plugin_dir(MemorySegment s) { return ptr(s, "plugin_dir"); }
    public static MemorySegment hook_table(MemorySegment s) { return ptr(s, "hook_table"); }
    public static MemorySegment print_on_level(MemorySegment s) { return ptr(s, "print_on_level"); }
    public static MemorySegment log_get_loglevel(MemorySegment s) { return ptr(s, "log_get_loglevel"); }
    public static MemorySegment criu_get_image_dir(MemorySegment s) { return ptr(s, "criu_get_image_dir"); }
    public static MemorySegment add_inventory_plugin(MemorySegment s) { return ptr(s, "add_inventory_plugin"); }
    public static MemorySegment set_compel_interrupt_only_mode(MemorySegment s) {
        return ptr(s, "set_compel_interrupt_only_mode");
    }
    public static MemorySegment compel_wait_task(MemorySegment s) { return ptr(s, "compel_wait_task"); }
    public static MemorySegment child_plan(MemorySegment s) { return ptr(s, "child_plan"); }
    public static MemorySegment plan_region(MemorySegment s) { return ptr(s, "plan_region"); }
    public static long plan_region_size(MemorySegment s) { return s.get(JAVA_LONG, offsetOf("plan_region_size")); }
    public static int exit_status(MemorySegment s) { return i32(s, "exit_status"); }
    public static MemorySegment launch_helper(MemorySegment s) { return ptr(s, "launch_helper"); }
    public static long park_last_pid(MemorySegment s) { return s.get(JAVA_LONG, offsetOf("park_last_pid")); }

    /** Writers: child_plan, exit_status and park_last_pid are Java's to fill; the rest are used by tests and AOT training. */
    public static void stage(MemorySegment s, int v) { s.set(JAVA_INT, offsetOf("stage"), v); }
    public static void size(MemorySegment s, int v) { s.set(JAVA_INT, offsetOf("size"), v); }
    public static void flags(MemorySegment s, int v) { s.set(JAVA_INT, offsetOf("flags"), v); }
    public static void criu_hook_count(MemorySegment s, int v) { s.set(JAVA_INT, offsetOf("criu_hook_count"), v); }
    public static void inventory_claim(MemorySegment s, int v) { s.set(JAVA_INT, offsetOf("inventory_claim"), v); }
    public static void hook_mask(MemorySegment s, int v) { s.set(JAVA_INT, offsetOf("hook_mask"), v); }
    public static void child_plan(MemorySegment s, MemorySegment v) { set(s, "child_plan", v); }
    public static void exit_status(MemorySegment s, int v) { s.set(JAVA_INT, offsetOf("exit_status"), v); }
    public static void park_last_pid(MemorySegment s, long v) { s.set(JAVA_LONG, offsetOf("park_last_pid"), v); }
    public static void set(MemorySegment s, String pointerField, MemorySegment v) {
        s.set(ADDRESS, offsetOf(pointerField), v);
    }

}
