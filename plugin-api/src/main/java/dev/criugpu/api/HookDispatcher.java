package dev.criugpu.api;

import java.lang.invoke.MethodHandle;
import java.util.List;
import java.util.function.IntSupplier;

/**
 * The Java end of every upcall stub ({@link HookStubs#upcallTarget} adapts criu's C arguments): {@link #call} traces the
 * hook (criu's log, debug level), runs the plugin's method behind the exception barrier (DESIGN rule 9) and returns
 * what criu should see.
 */
final class HookDispatcher {
    private final CriuPlugin plugin;
    private final CriuServices services;
    private boolean threadsListed;

    HookDispatcher(CriuPlugin plugin, CriuServices services) {
        this.plugin = plugin;
        this.services = services;
    }

    CriuPlugin plugin() {
        return plugin;
    }

    /**
     * Every main-process hook: traced, then {@code pluginCall} (the plugin's method, {@link HookStubs#upcallTarget})
     * with criu's arguments behind the exception barrier; the few hooks with more to do say so here.
     */
    int call(Hook hook, MethodHandle pluginCall, Object[] args) {
        LogSink.drain();
        if (services.isLoggable(LogLevel.DEBUG)) {
            services.log(LogLevel.DEBUG, "hook " + hook + "(" + describe(hook, args) + ") entered Java");
        }
        if (hook == Hook.RESUME_DEVICES_LATE && !threadsListed && services.isLoggable(LogLevel.DEBUG)) {
            // criu has created every task and thread by now: any thread of ours missing from the list logged after
            // init was started while criu restored exact pids (DESIGN rule 3)
            services.log(LogLevel.DEBUG, "JVM threads: " + PidGuard.threads());
        }
        threadsListed |= hook == Hook.RESUME_DEVICES_LATE;
        int rc = guarded(services, hook.toString(), () -> {
            if (hook == Hook.RESUME_DEVICES_LATE && Faults.injected(services, "resume-devices-late")) {
                return Faults.failResumeDevicesLate((int) args[0]);
            }
            if (hook == Hook.CHECKPOINT_DEVICES) Faults.stall(services, "before-checkpoint");
            try {
                return (int) pluginCall.invokeExact(args);
            } catch (RuntimeException | Error e) {
                throw e;
            } catch (Throwable t) {
                throw new IllegalStateException(t);
            }
        });
        LogSink.drain();
        return rc;
    }

    /** "fd=3, id=7" from the hook's C parameter names; addresses left out. */
    private static String describe(Hook hook, Object[] args) {
        StringBuilder b = new StringBuilder();
        List<String[]> params = hook.parameters();
        for (int i = 0; i < params.size(); i++) {
            if (params.get(i)[0].endsWith("*")) continue;
            b.append(b.isEmpty() ? "" : ", ").append(params.get(i)[1]).append('=').append(args[i]);
        }
        return b.toString();
    }

    /** Runs {@code body}; a throwable becomes one error line and a negative errno. */
    static int guarded(CriuServices services, String what, IntSupplier body) {
        try {
            return body.getAsInt();
        } catch (CriuException e) {
            services.log(LogLevel.ERROR, e.getMessage());
            return -Math.abs(e.errno());
        } catch (Throwable t) {
            services.log(LogLevel.ERROR, what + " failed: " + t);
            if (services.isLoggable(LogLevel.DEBUG)) {
                for (StackTraceElement e : t.getStackTrace()) services.log(LogLevel.DEBUG, "    at " + e);
            }
            return -Errno.EIO;
        }
    }

    void exit(int stage, int ret) {
        LogSink.drain();
        if (services.isLoggable(LogLevel.DEBUG)) {
            services.log(LogLevel.DEBUG, "hook EXIT(stage=" + stage + ", ret=" + ret + ") entered Java");
        }
        guarded(services, "exit", () -> {
            plugin.exit(Stage.of(stage), ret);
            Faults.stall(services, "after-exit");
            return 0;
        });
        LogSink.drain();
    }
}
