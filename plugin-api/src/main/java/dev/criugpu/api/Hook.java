package dev.criugpu.api;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The criu plugin hooks (criu-plugin.h, CR_PLUGIN_HOOK__*) that the shim hands criu: the project's one list of them,
 * with criu's ids, their C parameters and where they are served. Everything else follows from it: the shim's
 * trampolines and table and each vendor's mask (from its plugin's {@link CriuPlugin#hooks()}), which the shim's build
 * asks {@link HookTable} for, the upcall's C signature and the
 * {@link CriuPlugin} method a {@link Context#MAIN} hook calls: the method named as the hook in lower camel case, its
 * parameters those of C with {@code const struct stat *} as a {@link DeviceFile}. Adding a hook is this list and
 * that method. A hook no plugin serves is not registered: criu then never calls us for it.
 * Hooks that run in a task criu forked ({@link Context#CHILD}) never enter Java (DESIGN rule 1): the shim serves them
 * natively ({@code t_NAME} in native/src), as it does its own ({@link Context#SHIM}).
 */
public enum Hook {
    DUMP_EXT_FILE(2, Context.MAIN, "int fd, int id"),
    RESTORE_EXT_FILE(3, Context.CHILD, "int id"),
    HANDLE_DEVICE_VMA(7, Context.MAIN, "int fd, const struct stat *st"),
    UPDATE_VMA_MAP(8, Context.CHILD, "const char *path, uint64_t addr, uint64_t old_pgoff, uint64_t *new_pgoff, int *plugin_fd"),
    RESUME_DEVICES_LATE(9, Context.MAIN, "int pid"),
    PAUSE_DEVICES(10, Context.MAIN, "int pid"),
    CHECKPOINT_DEVICES(11, Context.MAIN, "int pid"),
    POST_FORKING(12, Context.SHIM, ""),
    /** criu 4.3: after every task's pages are written, with the tree's root pid; its failure fails the dump. */
    DUMP_DEVICES_LATE(14, Context.MAIN, "int pid"),
    /**
     * criu 4.3: before the dumped tree is released, {@code ret} non-zero when it will be resumed because the dump
     * failed; a failure after a successful dump has criu resume the tree and call it once more with that error.
     */
    DUMP_FINISH(16, Context.MAIN, "int ret");

    /**
     * Where criu calls the hook and who serves it: criu's main process through Java, a child criu forked (the shim,
     * from the plan Java wrote), or criu's main process by the shim alone.
     */
    public enum Context { MAIN, CHILD, SHIM }

    /** The exit slot of the shim's hook table, after one slot per hook id up to the highest in this list. */
    public static final int EXIT_SLOT = 1 + java.util.Arrays.stream(values()).mapToInt(h -> h.id).max().orElseThrow();
    /** Size of the shim's hook table: one slot per hook id, then the exit slot. */
    public static final int TABLE_SLOTS = EXIT_SLOT + 1;

    public final int id;
    public final Context context;
    /** The C parameters, as in criu-plugin.h ("" for none). */
    public final String cParameters;
    /** Name of the {@link CriuPlugin} method that serves it, null for hooks that do not enter Java. */
    public final String javaMethod;

    Hook(int id, Context context, String cParameters) {
        this.id = id;
        this.context = context;
        this.cParameters = cParameters;
        this.javaMethod = context == Context.MAIN ? lowerCamel(name()) : null;
    }

    /** A criu whose hook table has {@code criuHookCount} entries knows this hook. */
    public boolean knownTo(int criuHookCount) {
        return id < criuHookCount;
    }

    /** The C parameters one by one: type and name, e.g. {@code ["const struct stat *", "st"]}. */
    public List<String[]> parameters() {
        List<String[]> out = new ArrayList<>();
        if (cParameters.isBlank()) return out;
        for (String p : cParameters.split(",")) {
            String s = p.strip();
            int name = s.length();
            while (name > 0 && (Character.isLetterOrDigit(s.charAt(name - 1)) || s.charAt(name - 1) == '_')) name--;
            out.add(new String[] {s.substring(0, name).strip(), s.substring(name)});
        }
        return out;
    }

    /** Bit mask of hooks, bit n = hook id n; the form the shim uses. */
    public static int mask(Iterable<Hook> hooks) {
        int m = 0;
        for (Hook h : hooks) m |= 1 << h.id;
        return m;
    }

    private static String lowerCamel(String constant) {
        StringBuilder b = new StringBuilder();
        for (String word : constant.toLowerCase(Locale.ROOT).split("_")) {
            b.append(b.isEmpty() ? word : Character.toUpperCase(word.charAt(0)) + word.substring(1));
        }
        return b.toString();
    }

    /**
     * The shim's hook list as C (native/src/shim.h includes it): {@code #define SHIM_HOOKS(X)} with one
     * {@code X(id, NAME, (params), (args), KIND)} per hook, KIND JAVA for {@link Context#MAIN}.
     */
    public static String cHeader() {
        StringBuilder b = new StringBuilder("/* Written by the build from dev.criugpu.api.Hook (plugin-api): edit that list, not this. */\n");
        b.append("#define SHIM_HOOKS(X)");
        for (Hook h : values()) {
            List<String> names = h.parameters().stream().map(p -> p[1]).toList();
            String kind = h.context == Context.MAIN ? "JAVA" : h.context.name();
            b.append(" \\\n\tX(").append(h.id).append(", ").append(h.name()).append(", (")
                    .append(h.cParameters.isBlank() ? "void" : h.cParameters).append("), (")
                    .append(String.join(", ", names)).append("), ").append(kind).append(')');
        }
        b.append("\n/* slots of the shim's hook table before its exit slot: one per hook id */\n");
        return b.append("#define SHIM_HOOK_SLOTS ").append(EXIT_SLOT).append("\n").toString();
    }
}
