package dev.criugpu.it.ship;

import dev.criugpu.it.CommandResult;
import dev.criugpu.it.CriuContainer;
import dev.criugpu.it.CriuRun;
import dev.criugpu.it.ExecBound;

/**
 * criu driven over its RPC interface the way container engines drive it: a python3 script in the container uses
 * pycriu to spawn {@code criu swrk} and sends it one dump or restore request. The log goes into the images dir
 * ({@code dump.log}, {@code restore.log}); the swrk process inherits the script's environment.
 *
 * <p>criu's RPC request has no {@code libdir} field: the plugin dir reaches swrk through the request's
 * {@code config_file} (a file with the line {@code lib DIR}), the way runc hands criu its own settings.
 */
final class PycriuSwrk {
    static final String SCRIPT = "/tmp/criu-rpc.py";
    private static final String SOURCE = """
            import os, sys
            import pycriu

            action, images, libdir = sys.argv[1], sys.argv[2], sys.argv[3]
            c = pycriu.criu()
            c.use_binary("criu")
            c.opts.images_dir_fd = os.open(images, os.O_DIRECTORY)
            c.opts.log_level = 4
            c.opts.log_file = action + ".log"
            # RPC has no libdir field: --lib reaches criu swrk through a config file, as runc's criu.conf does
            conf = os.path.join(images, action + ".conf")
            with open(conf, "w") as f:
                f.write("lib " + libdir + "\\n")
            c.opts.config_file = conf
            try:
                if action == "dump":
                    c.opts.pid = int(sys.argv[4])
                    c.dump()
                    print("dumped")
                else:
                    # the restored tree becomes our sibling's, then init's: like criu restore --restore-detached
                    c.opts.rst_sibling = True
                    print("restored pid %d" % c.restore().pid)
            except pycriu.CRIUException as e:
                print("criu %s over RPC failed: %s" % (action, e), file=sys.stderr)
                sys.exit(1)
            """;

    private final CriuContainer container;
    private final String libdir;
    private String env = "";

    private PycriuSwrk(CriuContainer container, String libdir) {
        this.container = container;
        this.libdir = libdir;
    }

    /** Writes the script into the container; each request loads the plugins from {@code libdir}. */
    static PycriuSwrk install(CriuContainer container, String libdir) {
        container.writeFile(SCRIPT, SOURCE, 0644);
        return new PycriuSwrk(container, libdir);
    }

    /** The same driver, with CRIU_GPU_PLUGIN_FORCE=1 in the environment of the swrk process. */
    PycriuSwrk forced() {
        PycriuSwrk f = new PycriuSwrk(container, libdir);
        f.env = "CRIU_GPU_PLUGIN_FORCE=1";
        return f;
    }

    CriuRun dump(int pid, String images) {
        return run("dump", images, Integer.toString(pid));
    }

    /** The line criu logs when it applies a request's config file: proof the request came over RPC. */
    static String rpcConfigLine(String images, String action) {
        return "Would overwrite RPC settings with values from " + images + "/" + action + ".conf";
    }

    CriuRun restore(String images) {
        return run("restore", images, "");
    }

    private CriuRun run(String action, String images, String extra) {
        String line = "mkdir -p " + images + " && env " + env + " python3 " + SCRIPT + " " + action + " " + images
                + " " + libdir + " " + extra;
        String log = images + "/" + action + ".log";
        CommandResult result = container.sh(ExecBound.DEFAULT.showingLogs(log), line);
        return new CriuRun(result, container.readFileIfExists(log));
    }
}
