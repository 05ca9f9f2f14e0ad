package dev.criugpu.inventory.inspect;

import dev.criugpu.inventory.ImageException;

import java.io.PrintStream;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;

/**
 * {@code criu-gpu inspect DIR [--json]}: what a checkpoint holds — the criu that wrote it (as far as the images
 * tell), the plugins its restore requires, the process tree, and the GPU state files per plugin. Reads only.
 */
public final class InspectCommand {
    public static final int OK = 0;
    /** Not a checkpoint, or a damaged one. */
    public static final int BAD_CHECKPOINT = 1;
    public static final int USAGE = 2;

    private static final String USAGE_LINE = "usage: criu-gpu inspect DIR [--json]";

    private InspectCommand() {
    }

    /** Runs the command; every failure is one line on {@code err} and a non-zero return. */
    public static int run(String[] args, PrintStream out, PrintStream err) {
        boolean json = false;
        String dir = null;
        for (String a : args) {
            if (a.equals("--json")) {
                json = true;
            } else if (a.equals("-h") || a.equals("--help")) {
                out.println(USAGE_LINE);
                return OK;
            } else if (a.startsWith("-") || dir != null) {
                err.println("criu-gpu inspect: unexpected argument '" + a + "'; " + USAGE_LINE);
                return USAGE;
            } else {
                dir = a;
            }
        }
        if (dir == null) {
            err.println("criu-gpu inspect: no images directory given; " + USAGE_LINE);
            return USAGE;
        }
        Checkpoint c;
        try {
            c = Checkpoint.load(Path.of(dir));
        } catch (ImageException e) {
            err.println("criu-gpu inspect: " + e.getMessage());
            return BAD_CHECKPOINT;
        } catch (InvalidPathException e) {
            err.println("criu-gpu inspect: " + dir + ": invalid path");
            return USAGE;
        }
        out.print(json ? JsonReport.render(c) + "\n" : HumanReport.render(c));
        out.flush();
        return OK;
    }
}
