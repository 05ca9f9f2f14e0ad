package dev.criugpu.api;

import java.lang.foreign.FunctionDescriptor;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * criu's plugin hooks (criu-plugin.h, CR_PLUGIN_HOOK__*), with their C signatures and the process they run in.
 * Hooks that run in a task criu forked ({@link Context#CHILD}) never enter Java (DESIGN rule 1): the shim
 * handles them natively.
 */
public enum Hook {
    DUMP_UNIX_SK(0, Context.MAIN, "dumpUnixSk", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT)),
    RESTORE_UNIX_SK(1, Context.CHILD, null, FunctionDescriptor.of(JAVA_INT, JAVA_INT)),
    DUMP_EXT_FILE(2, Context.MAIN, "dumpExtFile", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT)),
    RESTORE_EXT_FILE(3, Context.CHILD, null, FunctionDescriptor.of(JAVA_INT, JAVA_INT)),
    DUMP_EXT_MOUNT(4, Context.MAIN, "dumpExtMount", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT)),
    RESTORE_EXT_MOUNT(5, Context.CHILD, null, FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, ADDRESS, ADDRESS)),
    DUMP_EXT_LINK(6, Context.MAIN, "dumpExtLink", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS)),
    HANDLE_DEVICE_VMA(7, Context.MAIN, "handleDeviceVma", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS)),
    UPDATE_VMA_MAP(8, Context.CHILD, null,
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_LONG, ADDRESS, ADDRESS)),
    RESUME_DEVICES_LATE(9, Context.MAIN, "resumeDevicesLate", FunctionDescriptor.of(JAVA_INT, JAVA_INT)),
    PAUSE_DEVICES(10, Context.MAIN, "pauseDevices", FunctionDescriptor.of(JAVA_INT, JAVA_INT)),
    CHECKPOINT_DEVICES(11, Context.MAIN, "checkpointDevices", FunctionDescriptor.of(JAVA_INT, JAVA_INT)),
    POST_FORKING(12, Context.MAIN, "postForking", FunctionDescriptor.of(JAVA_INT)),
    RESTORE_INIT(13, Context.MAIN, "restoreInit", FunctionDescriptor.of(JAVA_INT)),
    DUMP_DEVICES_LATE(14, Context.MAIN, "dumpDevicesLate", FunctionDescriptor.of(JAVA_INT, JAVA_INT));

    /** Where criu calls the hook: its main process, or a child it forked that becomes a restored task. */
    public enum Context { MAIN, CHILD }

    /** Size of the shim's hook table: one slot per hook id, then the exit slot. */
    public static final int TABLE_SLOTS = 16;
    public static final int EXIT_SLOT = 15;
    public static final FunctionDescriptor EXIT_DESCRIPTOR = FunctionDescriptor.ofVoid(JAVA_INT, JAVA_INT);

    public final int id;
    public final Context context;
    /** Name of the {@link CriuPlugin} method that serves it, null for child-context hooks. */
    public final String javaMethod;
    public final FunctionDescriptor descriptor;

    Hook(int id, Context context, String javaMethod, FunctionDescriptor descriptor) {
        this.id = id;
        this.context = context;
        this.javaMethod = javaMethod;
        this.descriptor = descriptor;
    }

    /** A criu whose hook table has {@code criuHookCount} entries knows this hook. */
    public boolean knownTo(int criuHookCount) {
        return id < criuHookCount;
    }

    public static Hook of(int id) {
        for (Hook h : values()) {
            if (h.id == id) return h;
        }
        throw new IllegalArgumentException("unknown criu hook " + id);
    }

    /** Bit mask of hooks, bit n = hook id n; the form the shim uses. */
    public static int mask(Iterable<Hook> hooks) {
        int m = 0;
        for (Hook h : hooks) m |= 1 << h.id;
        return m;
    }
}
