package dev.criugpu.api;

import dev.criugpu.api.bindings.stat;

import java.lang.foreign.MemorySegment;
import java.util.function.IntSupplier;

/**
 * The Java end of every upcall stub. Each method traces the hook (criu's log, debug level), runs the plugin's
 * method behind the exception barrier (DESIGN rule 9) and returns what criu should see.
 */
final class HookDispatcher {
    private static final int PATH_MAX = 4096;
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

    int dumpUnixSk(int fd, int id) {
        return call(Hook.DUMP_UNIX_SK, "fd=" + fd + ", id=" + id, () -> plugin.dumpUnixSk(fd, id));
    }

    int dumpExtFile(int fd, int id) {
        return call(Hook.DUMP_EXT_FILE, "fd=" + fd + ", id=" + id, () -> plugin.dumpExtFile(fd, id));
    }

    int dumpExtMount(MemorySegment mountpoint, int id) {
        return call(Hook.DUMP_EXT_MOUNT, "id=" + id, () -> plugin.dumpExtMount(string(mountpoint), id));
    }

    int dumpExtLink(int index, int type, MemorySegment kind) {
        return call(Hook.DUMP_EXT_LINK, "index=" + index + ", type=" + type,
                () -> plugin.dumpExtLink(index, type, string(kind)));
    }

    int handleDeviceVma(int fd, MemorySegment st) {
        return call(Hook.HANDLE_DEVICE_VMA, "fd=" + fd, () -> plugin.handleDeviceVma(fd, deviceFile(st)));
    }

    /** A C string criu passes (a path at most PATH_MAX long), or null for NULL. */
    private static String string(MemorySegment s) {
        return s.equals(MemorySegment.NULL) ? null : s.reinterpret(PATH_MAX).getString(0);
    }

    static DeviceFile deviceFile(MemorySegment st) {
        MemorySegment s = stat.reinterpret(st);
        return new DeviceFile(stat.st_dev(s), stat.st_ino(s), stat.st_mode(s), stat.st_rdev(s));
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

    int postForking() {
        return call(Hook.POST_FORKING, "", plugin::postForking);
    }

    int restoreInit() {
        return call(Hook.RESTORE_INIT, "", plugin::restoreInit);
    }

    int dumpDevicesLate(int rootPid) {
        return call(Hook.DUMP_DEVICES_LATE, "pid=" + rootPid, () -> plugin.dumpDevicesLate(rootPid));
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
