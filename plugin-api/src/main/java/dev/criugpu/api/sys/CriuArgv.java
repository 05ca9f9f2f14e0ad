package dev.criugpu.api.sys;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Pattern;

/**
 * What criu's own command line ({@code /proc/self/cmdline} in criu) tells of how it runs. As an RPC worker (runc,
 * crun, podman, containerd, libcriu and pycriu start {@code criu swrk FD}; {@code criu service} serves a socket) criu
 * retitles itself once a request arrives, before any plugin runs: its cmdline becomes one string such as
 * "criu: dump --rpc -t 1234" or "criu: restore --rpc" (libbsd's setproctitle, as Debian builds criu).
 */
public final class CriuArgv {
    private static final Pattern RPC_TITLE = Pattern.compile("^\\S+: \\S.*\\s--rpc(\\s.*)?$");

    private CriuArgv() {
    }

    /** Whether {@code argv} (argv[0] included) is that of criu serving RPC requests. */
    public static boolean rpcWorker(List<String> argv) {
        if (argv.size() > 1 && (argv.get(1).equals("swrk") || argv.get(1).equals("service"))) return true;
        return !argv.isEmpty() && RPC_TITLE.matcher(argv.getFirst()).matches();
    }

    /** {@link #rpcWorker} of this process; false where its cmdline cannot be read. */
    public static boolean selfIsRpcWorker() {
        try {
            return rpcWorker(ProcEntries.read(Path.of("/proc/self/cmdline"), ProcEntries.CMDLINE_LIMIT).entries());
        } catch (IOException e) {
            return false;
        }
    }
}
