package dev.criugpu.amdgpu.sys;

/** Names for the errno values device calls report, for one-line messages. */
public final class Errnos {
    public static final int EMSGSIZE = 90;

    private Errnos() {
    }

    public static String name(int errno) {
        String n = switch (errno) {
            case 1 -> "EPERM";
            case 2 -> "ENOENT";
            case 3 -> "ESRCH";
            case 4 -> "EINTR";
            case 5 -> "EIO";
            case 9 -> "EBADF";
            case 11 -> "EAGAIN";
            case 12 -> "ENOMEM";
            case 13 -> "EACCES";
            case 16 -> "EBUSY";
            case 19 -> "ENODEV";
            case 22 -> "EINVAL";
            case 25 -> "ENOTTY";
            case 28 -> "ENOSPC";
            case 32 -> "EPIPE";
            case 62 -> "ETIME";
            case 90 -> "EMSGSIZE";
            case 103 -> "ECONNABORTED";
            case 104 -> "ECONNRESET";
            case 111 -> "ECONNREFUSED";
            case 110 -> "ETIMEDOUT";
            case 125 -> "ECANCELED";
            default -> null;
        };
        return n == null ? "errno " + errno : n + " (errno " + errno + ")";
    }
}
