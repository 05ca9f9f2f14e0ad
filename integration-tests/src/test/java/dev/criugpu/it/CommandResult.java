package dev.criugpu.it;

/** What a command run in a container gave back. */
public record CommandResult(String command, int exitCode, String stdout, String stderr) {

    public boolean succeeded() {
        return exitCode == 0;
    }

    /** This result, or an AssertionError naming the command, its exit code and its output. */
    public CommandResult orFail() {
        if (!succeeded()) throw new AssertionError(describe());
        return this;
    }

    public String describe() {
        return "`" + command + "` exited " + exitCode + "\n--- stdout\n" + stdout + "\n--- stderr\n" + stderr;
    }
}
