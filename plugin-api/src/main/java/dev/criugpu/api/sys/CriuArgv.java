package dev.criugpu.api.sys;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Pattern;

/**
 * What criu's own command line ({@code /proc/self/cmdline} in criu) tells of how it runs. As an RPC worker (runc,
 * crun, podman, containerd, libcriu and pycriu start {@code criu swrk FD}; {@code criu service} serves a socket) criu
 * retitles itself once a request arrives, before any plugin runs: its cmdline becomes one string such as
 * "criu: dump --rpc -t 1234" or "criu: restore --rpc" (libbsd's setproctitle, as Debian builds criu). A criu started
 * through the dynamic loader ({@code ld-linux-x86-64.so.2 --library-path DIR --argv0 criu criu.bin ARGS}, as the GPU
 * bundle carries it) has the loader's words first: {@link #withoutLoader} takes them off.
 */
public final class CriuArgv {
    private static final Pattern RPC_TITLE = Pattern.compile("^\\S+: \\S.*\\s--rpc(\\s.*)?$");
    private static final Pattern LOADER = Pattern.compile("^(.*/)?ld(-linux[^/]*)?\\.so(\\.\\d+)*$");
    /** glibc's ld.so options that take a value (ld.so --help). */
    private static final List<String> LOADER_OPTIONS_WITH_VALUE = List.of("--library-path", "--argv0", "--preload",
            "--audit", "--inhibit-rpath", "--glibc-hwcaps-prepend", "--glibc-hwcaps-mask");

    private CriuArgv() {
    }

    /**
     * {@code argv} as the program saw it: when argv[0] is the dynamic loader, its options and the program's path are
     * replaced by the program's argv[0] ({@code --argv0}, else the path); anything else is returned as it is.
     */
    public static List<String> withoutLoader(List<String> argv) {
        if (argv.isEmpty() || !LOADER.matcher(argv.getFirst()).matches()) return argv;
        String argv0 = null;
        int i = 1;
        while (i < argv.size() && argv.get(i).startsWith("--")) {
            String o = argv.get(i);
            if (LOADER_OPTIONS_WITH_VALUE.contains(o)) {
                if (o.equals("--argv0") && i + 1 < argv.size()) argv0 = argv.get(i + 1);
                i += 2;
            } else {
                i++;
            }
        }
        if (i >= argv.size()) return argv;
        List<String> out = new java.util.ArrayList<>();
        out.add(argv0 != null ? argv0 : argv.get(i));
        out.addAll(argv.subList(i + 1, argv.size()));
        return out;
    }

    /**
     * Whether {@code argv} (argv[0] included; see {@link #withoutLoader}) is that of criu serving RPC requests: its
     * command, the first word getopt_long leaves (criu -v4 swrk 3), is swrk or service, or its title says so.
     */
    public static boolean rpcWorker(List<String> raw) {
        List<String> argv = withoutLoader(raw);
        if (argv.isEmpty()) return false;
        if (RPC_TITLE.matcher(argv.getFirst()).matches()) return true;
        List<String> operands = CriuGetopt.read(argv.subList(1, argv.size())).operands();
        return !operands.isEmpty() && (operands.getFirst().equals("swrk") || operands.getFirst().equals("service"));
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
