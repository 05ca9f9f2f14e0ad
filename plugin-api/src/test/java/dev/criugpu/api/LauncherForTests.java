package dev.criugpu.api;

import java.lang.foreign.Arena;
import java.lang.foreign.SymbolLookup;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * The shim's helper launcher (native/launch/helper_launch.c) built alone into the module's target/native and put in
 * use, for tests that start helpers outside criu: the same C code criu's shim starts them with.
 */
public final class LauncherForTests {
    private static boolean installed;

    private LauncherForTests() {
    }

    public static synchronized void install() {
        if (installed) return;
        Path module = Path.of(System.getProperty("user.dir"));
        Path out = module.resolve("target/native");
        try {
            Process make = new ProcessBuilder("make", "-s", "-C", module.resolveSibling("native").toString(), "OUT=" + out,
                    "helper-launcher").redirectErrorStream(true).start();
            String said = new String(make.getInputStream().readAllBytes());
            if (!make.waitFor(120, TimeUnit.SECONDS) || make.exitValue() != 0) {
                throw new IllegalStateException("make helper-launcher failed:\n" + said);
            }
        } catch (java.io.IOException e) {
            throw new IllegalStateException("make helper-launcher: " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("make helper-launcher interrupted", e);
        }
        SymbolLookup lib = SymbolLookup.libraryLookup(out.resolve("libcriugpu_launch.so"), Arena.global());
        HelperLauncher.use(lib.find(HelperLauncher.SYMBOL).orElseThrow());
        installed = true;
    }
}
