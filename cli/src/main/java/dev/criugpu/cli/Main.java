package dev.criugpu.cli;

import dev.criugpu.api.Printable;

import java.io.PrintStream;
import java.util.Arrays;

/** {@code criu-gpu}: the command-line front end of the plugins. */
public final class Main {
    private Main() {
    }

    public static void main(String[] args) {
        System.exit(run(args, System.out, System.err));
    }

    static final String USAGE = """
            usage: criu-gpu COMMAND [ARGS]
              version            print the version of criu-java-gpu
              doctor             tell, per plugin, whether it would be enabled on this host and why
              inspect DIR [--json]  describe a checkpoint directory
              check [--verbose] PID  what would stop criu dump of a running process tree (read from /proc)
              cuda ARGS          the cuda-checkpoint twin (criu-gpu cuda --help)
              run [--] COMMAND [ARG...]  COMMAND with io_uring unavailable (ENOSYS), so that criu 4.2.1 can dump it
                                 and what it starts (a torchrun job: criu-gpu run -- torchrun ...)
            """;

    /**
     * Runs {@code args}; what it prints passes through {@link Printable}: the commands show process names, command
     * lines, file names and image contents that other users chose, on root's terminal.
     */
    public static int run(String[] args, PrintStream out, PrintStream err) {
        PrintStream shownOut = Printable.stream(out);
        PrintStream shownErr = Printable.stream(err);
        try {
            return command(args, shownOut, shownErr);
        } finally {
            shownOut.flush();
            shownErr.flush();
        }
    }

    private static int command(String[] args, PrintStream out, PrintStream err) {
        if (args.length == 0 || args[0].equals("--help") || args[0].equals("-h") || args[0].equals("help")) {
            (args.length == 0 ? err : out).print(USAGE);
            return args.length == 0 ? 2 : 0;
        }
        String[] rest = Arrays.copyOfRange(args, 1, args.length);
        return switch (args[0]) {
            case "version" -> {
                out.println("criu-gpu " + Version.get());
                yield 0;
            }
            case "doctor" -> Doctor.run(rest, out);
            case "inspect" -> Commands.inspect(rest, out, err);
            case "check" -> dev.criugpu.cli.check.CheckCommand.run(rest, out, err);
            case "cuda" -> Commands.cuda(rest, out, err);
            case "run" -> RunCommand.run(rest, err);
            default -> {
                err.println("criu-gpu: unknown command '" + args[0] + "'");
                err.print(USAGE);
                yield 2;
            }
        };
    }
}
