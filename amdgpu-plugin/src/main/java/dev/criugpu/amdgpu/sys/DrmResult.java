package dev.criugpu.amdgpu.sys;

import dev.criugpu.api.CriuException;
import dev.criugpu.api.Errno;

/** libdrm_amdgpu calls return 0 or a negative errno; this turns the latter into a one-line failure. */
final class DrmResult {
    private DrmResult() {
    }

    static void check(int rc, String what) {
        if (rc == 0) return;
        int errno = rc < 0 ? -rc : Errno.EIO;
        throw new CriuException(errno, what + " failed: " + (rc < 0 ? Errno.name(errno) : "returned " + rc));
    }
}
