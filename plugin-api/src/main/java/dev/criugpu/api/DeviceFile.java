package dev.criugpu.api;

/**
 * The file behind a device mapping criu asks about (HANDLE_DEVICE_VMA): criu's {@code struct stat} of it, as Java
 * values. {@code rdev} and {@code dev} are the kernel's encoded device numbers (major/minor as glibc's makedev).
 */
public record DeviceFile(long dev, long ino, int mode, long rdev) {
    private static final int S_IFMT = 0170000;
    private static final int S_IFCHR = 0020000;

    public boolean isCharDevice() {
        return (mode & S_IFMT) == S_IFCHR;
    }

    public int rdevMajor() {
        return (int) (((rdev >>> 32) & 0xfffff000L) | ((rdev >>> 8) & 0xfffL));
    }

    public int rdevMinor() {
        return (int) (((rdev >>> 12) & 0xffffff00L) | (rdev & 0xffL));
    }
}
