package dev.criugpu.it;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * One criu dump or restore command line, run inside a {@link CriuContainer} at full verbosity with its log written
 * into the images dir ({@code <images>/dump.log} or {@code <images>/restore.log}), within {@link ExecBound#DEFAULT}
 * unless {@link #within} says otherwise: a criu still running then fails the test with its log and the container's
 * threads ({@link CommandTimedOut}) and is killed.
 */
public final class CriuCommand {
    private final String action;
    private final String imagesDir;
    private final List<String> args = new ArrayList<>();
    private final Map<String, String> env = new LinkedHashMap<>();
    private String prelude = "";
    private String launcher = "";
    private Duration limit = ExecBound.DEFAULT.limit();

    private CriuCommand(String action, String imagesDir) {
        this.action = action;
        this.imagesDir = imagesDir;
        args.addAll(List.of("-D", imagesDir, "-v4", "-o", logName()));
    }

    public static CriuCommand dump(int pid, String imagesDir) {
        return new CriuCommand("dump", imagesDir).args("-t", Integer.toString(pid));
    }

    /** Restore whose tree is reparented to the container's init when criu exits. */
    public static CriuCommand restore(String imagesDir) {
        return new CriuCommand("restore", imagesDir).args("--restore-detached");
    }

    /** Loads the plugins from the mounted plugin dir. */
    public CriuCommand withPlugins() {
        return args("--lib", CriuContainer.PLUGIN_DIR);
    }

    /** CRIU_GPU_PLUGIN_FORCE=1: the plugins skip their hardware gate. */
    public CriuCommand forced() {
        return env("CRIU_GPU_PLUGIN_FORCE", "1");
    }

    public CriuCommand args(String... more) {
        args.addAll(List.of(more));
        return this;
    }

    public CriuCommand env(String name, String value) {
        env.put(name, value);
        return this;
    }

    /** Shell commands run just before criu is exec'ed in the same process (so criu takes no extra pid). */
    public CriuCommand prelude(String shell) {
        prelude = shell;
        return this;
    }

    /**
     * criu is started by {@code program} (given criu's command line as its last arguments, it prepares the process
     * and execs criu, which keeps its pid), e.g. a test device that must be in place before criu runs.
     */
    public CriuCommand launchedBy(String program) {
        launcher = program + " ";
        return this;
    }

    /** criu may run for {@code limit} before it counts as hung. */
    public CriuCommand within(Duration limit) {
        this.limit = limit;
        return this;
    }

    public String logName() {
        return action + ".log";
    }

    public String logPath() {
        return imagesDir + "/" + logName();
    }

    public String shellLine() {
        StringBuilder sb = new StringBuilder("mkdir -p ").append(imagesDir).append(" && ");
        if (!prelude.isEmpty()) sb.append(prelude).append(" && ");
        sb.append("exec env");
        env.forEach((k, v) -> sb.append(' ').append(k).append('=').append(v));
        sb.append(' ').append(launcher).append("criu ").append(action);
        for (String a : args) sb.append(' ').append(a);
        return sb.toString();
    }

    public CriuRun runIn(CriuContainer container) {
        CommandResult result = container.sh(ExecBound.of(limit).showingLogs(logPath()), shellLine());
        return new CriuRun(result, container.readFileIfExists(logPath()));
    }
}
