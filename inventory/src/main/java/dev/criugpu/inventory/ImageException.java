package dev.criugpu.inventory;

import java.io.IOException;
import java.nio.file.Path;

/**
 * A CRIU image file that cannot be read or written. The message is always one line of the form
 * {@code <file>: <reason>}, fit to show a user as is.
 */
public final class ImageException extends IOException {
    private final transient Path file;

    public ImageException(Path file, String reason) {
        super(oneLine(file + ": " + reason));
        this.file = file;
    }

    public ImageException(Path file, String reason, Throwable cause) {
        super(oneLine(file + ": " + reason), cause);
        this.file = file;
    }

    /** The image file (or images directory) the problem is about. */
    public Path file() {
        return file;
    }

    private static String oneLine(String s) {
        return s.replaceAll("[\\r\\n]+", " ");
    }
}
