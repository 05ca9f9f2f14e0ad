package dev.criugpu.api;

import java.util.function.IntSupplier;

/**
 * The Java end of every upcall stub, in Java types ({@link HookStubs#upcallTarget} adapts criu's C arguments). Each method
 * traces the hook (criu's log, debug level), runs the plugin's method behind the exception barrier (DESIGN rule 9)
 * and returns what criu should see.
 */
final class HookDispatcher {
    private final CriuPlugin plugin;
    private final CriuServices services;
    private boolean threadsListed;

    HookDispatcher(CriuPlugin plugin, CriuServices services) {
        this.plugin = plugin;
        this.services = services;
    }

    private int call(Hook hook, String args, IntSupplier body) {
        LogSink.drain();
        if (services.isLoggable(LogLevel.DEBUG)) {
            services.log(LogLevel.DEBUG, "hook " + hook + "(" + args + ") entered Java");
        }
        int rc = guarded(services, hook.toString(), body);
        LogSink.drain();
        return rc;
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

    int dumpExtFile(int fd, int id) {
        return call(Hook.DUMP_EXT_FILE, "fd=" + fd + ", id=" + id, () -> plugin.dumpExtFile(fd, id));
    }

    int handleDeviceVma(int fd, DeviceFile file) {
        return call(Hook.HANDLE_DEVICE_VMA, "fd=" + fd, () -> plugin.handleDeviceVma(fd, file));
    }

    int resumeDevicesLate(int pid) {
        // criu has created every task and thread by now: any thread of ours missing from the list logged after
        // init was started while criu restored exact pids (DESIGN rule 3)
        if (!threadsListed && services.isLoggable(LogLevel.DEBUG)) {
            services.log(LogLevel.DEBUG, "JVM threads: " + PidGuard.threads());
        }
        threadsListed = true;
        return call(Hook.RESUME_DEVICES_LATE, "pid=" + pid, () -> Faults.injected(services, "resume-devices-late")
                ? Faults.failResumeDevicesLate(pid) : plugin.resumeDevicesLate(pid));
    }

    int pauseDevices(int pid) {
        return call(Hook.PAUSE_DEVICES, "pid=" + pid, () -> plugin.pauseDevices(pid));
    }

    int checkpointDevices(int pid) {
        return call(Hook.CHECKPOINT_DEVICES, "pid=" + pid, () -> {
            Faults.stall(services, "before-checkpoint");
            return plugin.checkpointDevices(pid);
        });
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
