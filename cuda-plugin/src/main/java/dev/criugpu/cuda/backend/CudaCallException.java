package dev.criugpu.cuda.backend;

/** A driver call (or cuda-checkpoint run) that failed: the CUresult and the driver's words for it. */
public final class CudaCallException extends Exception {
    /** The call never reached the driver, or its answer never came back: the CUDA agent is unusable or died. */
    public static final int AGENT_FAILED = -2;

    private final int code;
    private final String reason;

    public CudaCallException(int code, String reason) {
        super(code == AGENT_FAILED ? reason : reason + " (CUDA error " + code + ")");
        this.code = code;
        this.reason = reason;
    }

    /** The CUresult, cuda-checkpoint's exit status for the CLI backend, or {@link #AGENT_FAILED}. */
    public int code() {
        return code;
    }

    /** The driver's description, e.g. "operation not permitted". */
    public String reason() {
        return reason;
    }
}
