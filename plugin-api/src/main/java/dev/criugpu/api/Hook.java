package dev.criugpu.api;

/**
 * The criu plugin hooks (criu-plugin.h, CR_PLUGIN_HOOK__*) that our plugins serve, with criu's ids, their C signatures
 * and the process they run in ({@link HookStubs#descriptor} holds the C signatures). This enum is the Java side's one list of hooks: {@link CriuPlugin} has a method for each
 * main-process hook, {@link HookDispatcher} the upcall of the same name, and the shim's trampoline table
 * (native/src/shim.h, SHIM_HOOKS) and its per-plugin masks (native/Makefile) are checked against it by
 * ShimHookTableTest. A hook no plugin serves is not listed: criu then never calls us for it.
 * Hooks that run in a task criu forked ({@link Context#CHILD}) never enter Java (DESIGN rule 1): the shim
 * handles them natively.
 */
public enum Hook {
    DUMP_EXT_FILE(2, Context.MAIN, "dumpExtFile"),
    RESTORE_EXT_FILE(3, Context.CHILD, null),
    HANDLE_DEVICE_VMA(7, Context.MAIN, "handleDeviceVma"),
    UPDATE_VMA_MAP(8, Context.CHILD, null),
    RESUME_DEVICES_LATE(9, Context.MAIN, "resumeDevicesLate"),
    PAUSE_DEVICES(10, Context.MAIN, "pauseDevices"),
    CHECKPOINT_DEVICES(11, Context.MAIN, "checkpointDevices");

    /** Where criu calls the hook: its main process, or a child it forked that becomes a restored task. */
    public enum Context { MAIN, CHILD }

    /** Size of the shim's hook table: one slot per hook id, then the exit slot. */
    public static final int TABLE_SLOTS = 16;
    public static final int EXIT_SLOT = 15;

    public final int id;
    public final Context context;
    /** Name of the {@link CriuPlugin} method that serves it, null for child-context hooks. */
    public final String javaMethod;

    Hook(int id, Context context, String javaMethod) {
        this.id = id;
        this.context = context;
        this.javaMethod = javaMethod;
    }

    /** A criu whose hook table has {@code criuHookCount} entries knows this hook. */
    public boolean knownTo(int criuHookCount) {
        return id < criuHookCount;
    }

    /** Bit mask of hooks, bit n = hook id n; the form the shim uses. */
    public static int mask(Iterable<Hook> hooks) {
        int m = 0;
        for (Hook h : hooks) m |= 1 << h.id;
        return m;
    }
}
