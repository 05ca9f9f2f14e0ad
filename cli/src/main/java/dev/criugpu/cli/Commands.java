package dev.criugpu.cli;

import java.io.PrintStream;

/** Subcommands served by other modules. */
final class Commands {
    private Commands() {
    }

    static int inspect(String[] args, PrintStream out, PrintStream err) {
        return dev.criugpu.inventory.inspect.InspectCommand.run(args, out, err);
    }

    static int cuda(String[] args, PrintStream out, PrintStream err) {
        return dev.criugpu.cuda.cli.CudaCheckpointCommand.run(args, out, err);
    }
}
