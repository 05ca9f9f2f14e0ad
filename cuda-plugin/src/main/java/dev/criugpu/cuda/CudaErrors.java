package dev.criugpu.cuda;

import dev.criugpu.api.CriuException;
import dev.criugpu.api.Errno;
import dev.criugpu.cuda.backend.CudaCallException;
import dev.criugpu.cuda.bindings.cuda_h;

/** Turns backend failures into the one-line CriuException a hook reports (never -ENOTSUP: that means "not mine"). */
final class CudaErrors {
    private CudaErrors() {
    }

    static int errno(CudaCallException e) {
        return switch (e.code()) {
            case cuda_h.CUDA_ERROR_TIMEOUT, cuda_h.CUDA_ERROR_NOT_READY -> Errno.ETIMEDOUT;
            case cuda_h.CUDA_ERROR_NOT_PERMITTED -> Errno.EPERM;
            case cuda_h.CUDA_ERROR_NO_DEVICE -> Errno.ENODEV;
            default -> Errno.EIO;
        };
    }

    static CriuException of(int pid, String step, CudaCallException e) {
        return new CriuException(errno(e), "pid " + pid + ": " + step + " failed: " + e.getMessage(), e);
    }

    static String describe(Throwable t) {
        return t instanceof CriuException || t instanceof CudaCallException ? t.getMessage() : t.toString();
    }
}
