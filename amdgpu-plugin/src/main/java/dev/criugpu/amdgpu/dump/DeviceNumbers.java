package dev.criugpu.amdgpu.dump;

/** glibc's encoding of {@code dev_t} (gnu_dev_major/minor/makedev). */
public final class DeviceNumbers {
    private DeviceNumbers() {
    }

    public static int major(long dev) {
        return (int) (((dev >>> 8) & 0xfffL) | ((dev >>> 32) & ~0xfffL));
    }

    public static int minor(long dev) {
        return (int) ((dev & 0xffL) | ((dev >>> 12) & ~0xffL));
    }

    public static long makedev(int major, int minor) {
        long ma = Integer.toUnsignedLong(major);
        long mi = Integer.toUnsignedLong(minor);
        return ((ma & 0xfffL) << 8) | ((ma & ~0xfffL) << 32) | (mi & 0xffL) | ((mi & ~0xffL) << 12);
    }
}
