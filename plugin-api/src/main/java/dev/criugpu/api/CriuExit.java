package dev.criugpu.api;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Fails criu's command from a plugin's exit hook. criu ignores what that hook returns ({@code cr_plugin_fini} is
 * void) and calls it before it leaves the tree stopped ({@code -s}) or resumes it ({@code -R}), before the rest of its
 * cleanup and before later plugins' exit: so the hook does not end criu, it has the shim's exit handler turn criu's
 * status 0 into a failure once criu has done all that and returned from its main
 * ({@link CriuServices#exitStatusAfterCleanup}). For a plugin that must leave a task of a tree criu keeps alive in a
 * state the user has to repair by hand: status 1 is how criu's caller learns that the dump was not clean.
 */
public final class CriuExit {
    private static final Map<String, CriuServices> SERVICES = new ConcurrentHashMap<>();

    private CriuExit() {
    }

    /** The services of {@code services.pluginName()}, from its bootstrap on. */
    static void bind(CriuServices services) {
        SERVICES.put(services.pluginName(), services);
    }

    /**
     * criu's process ends with {@code status} instead of 0 after criu's cleanup; false where that cannot be arranged
     * (no shim of this build for {@code plugin}, outside criu): the caller says so in criu's log.
     */
    public static boolean afterCleanup(String plugin, int status) {
        CriuServices services = SERVICES.get(plugin);
        return services != null && services.exitStatusAfterCleanup(status);
    }
}
