package dev.criugpu.api;

/** The errno values hooks return and system calls report (Linux x86-64 numbers), and their names for log lines. */
public final class Errno {
    public static final int EPERM = 1;
    public static final int ENOENT = 2;
    public static final int ESRCH = 3;
    public static final int EINTR = 4;
    public static final int EIO = 5;
    public static final int ENXIO = 6;
    public static final int EBADF = 9;
    public static final int EAGAIN = 11;
    public static final int ENOMEM = 12;
    public static final int EACCES = 13;
    public static final int EFAULT = 14;
    public static final int EBUSY = 16;
    public static final int EEXIST = 17;
    public static final int ENODEV = 19;
    public static final int EINVAL = 22;
    public static final int ENOTTY = 25;
    public static final int EFBIG = 27;
    public static final int ENOSPC = 28;
    public static final int EPIPE = 32;
    public static final int ELOOP = 40;
    public static final int ETIME = 62;
    public static final int EMSGSIZE = 90;
    public static final int ENOTSUP = 95;
    public static final int ECONNABORTED = 103;
    public static final int ECONNRESET = 104;
    public static final int ETIMEDOUT = 110;
    public static final int ECONNREFUSED = 111;
    public static final int ECANCELED = 125;

    /** What a hook returns for something that is not its business: criu then asks the next plugin. */
    public static final int NOT_SUPPORTED = -ENOTSUP;

    private Errno() {
    }

    /** {@code ENOENT (errno 2)}, or {@code errno 300} for a number without a name here. */
    public static String name(int errno) {
        String n = switch (errno) {
            case EPERM -> "EPERM";
            case ENOENT -> "ENOENT";
            case ESRCH -> "ESRCH";
            case EINTR -> "EINTR";
            case EIO -> "EIO";
            case ENXIO -> "ENXIO";
            case EBADF -> "EBADF";
            case EAGAIN -> "EAGAIN";
            case ENOMEM -> "ENOMEM";
            case EACCES -> "EACCES";
            case EFAULT -> "EFAULT";
            case EBUSY -> "EBUSY";
            case EEXIST -> "EEXIST";
            case ENODEV -> "ENODEV";
            case EINVAL -> "EINVAL";
            case ENOTTY -> "ENOTTY";
            case EFBIG -> "EFBIG";
            case ENOSPC -> "ENOSPC";
            case EPIPE -> "EPIPE";
            case ELOOP -> "ELOOP";
            case ETIME -> "ETIME";
            case EMSGSIZE -> "EMSGSIZE";
            case ENOTSUP -> "ENOTSUP";
            case ECONNABORTED -> "ECONNABORTED";
            case ECONNRESET -> "ECONNRESET";
            case ETIMEDOUT -> "ETIMEDOUT";
            case ECONNREFUSED -> "ECONNREFUSED";
            case ECANCELED -> "ECANCELED";
            default -> null;
        };
        return n == null ? "errno " + errno : n + " (errno " + errno + ")";
    }
}
