package dev.criugpu.api;

/**
 * A failure with the errno a hook should return to criu. The message is the one line criu's log shows; it names
 * the pid or file concerned.
 */
public class CriuException extends RuntimeException {
    private final int errno;

    public CriuException(int errno, String message) {
        super(message);
        this.errno = errno;
    }

    public CriuException(int errno, String message, Throwable cause) {
        super(message, cause);
        this.errno = errno;
    }

    public int errno() {
        return errno;
    }
}
