package dev.criugpu.cuda.backend;

/** A driver call (or cuda-checkpoint run) that failed: the CUresult and the driver's words for it. */
public final class CudaCallException extends Exception {
    private final int code;
    private final String reason;

    public CudaCallException(int code, String reason) {
        super(reason + " (CUDA error " + code + ")");
        this.code = code;
        this.reason = reason;
    }

    /** The CUresult, or cuda-checkpoint's exit status for the CLI backend. */
    public int code() {
        return code;
    }

    /** The driver's description, e.g. "operation not permitted". */
    public String reason() {
        return reason;
    }
}
