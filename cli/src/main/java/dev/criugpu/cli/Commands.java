package dev.criugpu.cli;

import java.io.PrintStream;

/** Subcommands served by other modules. */
final class Commands {
    private Commands() {
    }

    static int inspect(String[] args, PrintStream out, PrintStream err) {
        err.println("criu-gpu inspect: not available in this build");
        return 2;
    }

    static int cuda(String[] args, PrintStream out, PrintStream err) {
        err.println("criu-gpu cuda: not available in this build");
        return 2;
    }
}
