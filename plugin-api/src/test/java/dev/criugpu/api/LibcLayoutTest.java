package dev.criugpu.api;

import dev.criugpu.api.bindings.signal_h;
import dev.criugpu.api.sys.Syscalls;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Compiles a C probe against glibc's headers and compares the sizes and numbers the signal binding and the syscall
 * seam ({@link Syscalls}) use.
 */
class LibcLayoutTest {
    static final Map<String, Long> c = new HashMap<>();

    @BeforeAll
    static void probe(@TempDir Path dir) throws IOException, InterruptedException {
        Path src = dir.resolve("probe.c");
        Files.writeString(src, """
                #define _GNU_SOURCE
                #include <stdio.h>
                #include <stddef.h>
                #include <signal.h>
                #include <fcntl.h>
                #include <semaphore.h>
                #include <sys/mman.h>
                #define S(t) printf("sizeof %s %zu\\n", #t, sizeof(t))
                #define O(t, f) printf("offsetof %s.%s %zu\\n", #t, #f, offsetof(t, f))
                #define V(n) printf("value %s %ld\\n", #n, (long)(n))
                int main(void) {
                    S(sigset_t); S(struct sigaction); O(struct sigaction, sa_handler); O(struct sigaction, sa_mask);
                    O(struct sigaction, sa_flags); O(struct sigaction, sa_restorer);
                    V(SIGHUP); V(SIGINT); V(SIGQUIT); V(SIGKILL); V(SIGTERM); V(SIG_IGN);
                    V(O_RDONLY); V(O_RDWR); V(O_CREAT); V(O_CLOEXEC); V(PROT_READ); V(PROT_WRITE); V(MAP_SHARED);
                    V(SEM_FAILED);
                    return 0;
                }
                """);
        Path exe = dir.resolve("probe");
        Process gcc = new ProcessBuilder("gcc", "-o", exe.toString(), src.toString()).redirectErrorStream(true).start();
        String out = new String(gcc.getInputStream().readAllBytes());
        assertTrue(gcc.waitFor(60, TimeUnit.SECONDS) && gcc.exitValue() == 0, "gcc failed:\n" + out);
        Process run = new ProcessBuilder(exe.toString()).start();
        for (String line : new String(run.getInputStream().readAllBytes()).split("\n")) {
            String[] f = line.split(" ");
            c.put(f[0] + " " + f[1] + (f.length > 3 ? " " + f[2] : ""), Long.parseLong(f[f.length - 1]));
        }
        assertEquals(0, run.waitFor());
    }

    static long v(String key) {
        Long x = c.get(key);
        if (x == null) throw new AssertionError("the probe printed no " + key + ": " + c.keySet());
        return x;
    }

    @Test
    void signalBindingMatches() {
        assertEquals(v("sizeof sigset_t"), 128);
        assertEquals(v("sizeof struct sigaction"), signal_h.sigactionSize());
        assertEquals(v("offsetof struct sigaction.sa_handler"), 0);
        assertEquals(v("value SIGHUP"), signal_h.SIGHUP);
        assertEquals(v("value SIGINT"), signal_h.SIGINT);
        assertEquals(v("value SIGQUIT"), signal_h.SIGQUIT);
        assertEquals(v("value SIGKILL"), signal_h.SIGKILL);
        assertEquals(v("value SIGTERM"), signal_h.SIGTERM);
        assertEquals(v("value SIG_IGN"), signal_h.SIG_IGN);
    }

    @Test
    void syscallSeamNumbersMatch() {
        assertEquals(v("value O_RDONLY"), Syscalls.O_RDONLY);
        assertEquals(v("value O_RDWR"), Syscalls.O_RDWR);
        assertEquals(v("value O_CREAT"), Syscalls.O_CREAT);
        assertEquals(v("value O_CLOEXEC"), Syscalls.O_CLOEXEC);
        assertEquals(v("value PROT_READ"), Syscalls.PROT_READ);
        assertEquals(v("value PROT_WRITE"), Syscalls.PROT_WRITE);
        assertEquals(v("value MAP_SHARED"), Syscalls.MAP_SHARED);
        assertEquals(v("value SEM_FAILED"), 0, "openOrCreateSemaphore takes a NULL sem_t * for SEM_FAILED");
    }
}
