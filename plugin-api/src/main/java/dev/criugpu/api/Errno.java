package dev.criugpu.api;

/** The errno values hooks return (Linux x86-64 numbers). */
public final class Errno {
    public static final int EPERM = 1;
    public static final int ENOENT = 2;
    public static final int ESRCH = 3;
    public static final int EINTR = 4;
    public static final int EIO = 5;
    public static final int EBADF = 9;
    public static final int EAGAIN = 11;
    public static final int ENOMEM = 12;
    public static final int EACCES = 13;
    public static final int EBUSY = 16;
    public static final int ENODEV = 19;
    public static final int EINVAL = 22;
    public static final int ENOSPC = 28;
    public static final int ENOTSUP = 95;
    public static final int ETIMEDOUT = 110;

    /** What a hook returns for something that is not its business: criu then asks the next plugin. */
    public static final int NOT_SUPPORTED = -ENOTSUP;

    private Errno() {
    }
}
