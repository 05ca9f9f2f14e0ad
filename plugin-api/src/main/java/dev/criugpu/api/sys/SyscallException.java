package dev.criugpu.api.sys;

import dev.criugpu.api.CriuException;

/** A failed system call: {@link #errno()} is the positive errno it set. */
public final class SyscallException extends CriuException {
    public SyscallException(int errno, String message) {
        super(errno, message);
    }
}
