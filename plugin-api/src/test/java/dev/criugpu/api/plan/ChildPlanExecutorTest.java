package dev.criugpu.api.plan;

import dev.criugpu.api.sys.PlanCalls;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The C executor (native/plan/gpu_plan.c, built alone by native/'s Makefile) running a plan built in Java, as the
 * shim runs it in a restored task: a program that puts a stand-in file at a file id, and a path whose mappings go
 * through a stand-in file (what the CUDA plugin gives inherited /dev/nvidia* references). Called in this process.
 */
class ChildPlanExecutorTest {
    static final Linker L = Linker.nativeLinker();
    static SymbolLookup lib;

    static int noFd(int pid) {
        return -1;
    }

    static void noLog(int level, MemorySegment fmt) {
    }

    static int noFdstore(int id) {
        return -1;
    }

    @BeforeAll
    static void build(@TempDir Path dir) throws Exception {
        Path nativeDir = Path.of(System.getProperty("user.dir")).resolveSibling("native");
        Process make = new ProcessBuilder("make", "-s", "-C", nativeDir.toString(), "OUT=" + dir, "plan-executor")
                .redirectErrorStream(true).start();
        String out = new String(make.getInputStream().readAllBytes());
        assertTrue(make.waitFor(120, TimeUnit.SECONDS) && make.exitValue() == 0, "make plan-executor failed:\n" + out);
        lib = SymbolLookup.libraryLookup(dir.resolve("libcriugpu_plan.so"), Arena.global());
    }

    static PlanCalls calls() throws Exception {
        SymbolLookup libc = L.defaultLookup();
        MethodHandles.Lookup me = MethodHandles.lookup();
        MemorySegment findUnused = L.upcallStub(me.findStatic(ChildPlanExecutorTest.class, "noFd",
                MethodType.methodType(int.class, int.class)), FunctionDescriptor.of(JAVA_INT, JAVA_INT), Arena.global());
        MemorySegment log = L.upcallStub(me.findStatic(ChildPlanExecutorTest.class, "noLog",
                MethodType.methodType(void.class, int.class, MemorySegment.class)), FunctionDescriptor.ofVoid(JAVA_INT, ADDRESS),
                Arena.global());
        MemorySegment fdstore = L.upcallStub(me.findStatic(ChildPlanExecutorTest.class, "noFdstore",
                MethodType.methodType(int.class, int.class)), FunctionDescriptor.of(JAVA_INT, JAVA_INT), Arena.global());
        return new PlanCalls(libc.find("open").orElseThrow(), libc.find("close").orElseThrow(),
                libc.find("ioctl").orElseThrow(), findUnused, log, fdstore);
    }

    static String target(int fd) throws Exception {
        return Files.readSymbolicLink(Path.of("/proc/self/fd/" + fd)).toString();
    }

    @Test
    void standInsForAFileIdAndForEveryMappingOfAPathPrefix() throws Throwable {
        try (ChildPlan plan = new ChildPlan("test")) {
            int slot = plan.newSlot();
            plan.program(7).open(slot, "/dev/null", 02 | 02000000, false).handOver(slot, "the stand-in");
            plan.substitutePath("/dev/nvidia", true, "/dev/zero");
            MemorySegment ctx = plan.sealed().context(calls());
            MethodHandle restore = L.downcallHandle(lib.find("gpu_plan_restore_ext_file").orElseThrow(),
                    FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
            MethodHandle update = L.downcallHandle(lib.find("gpu_plan_update_vma_map").orElseThrow(),
                    FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG, JAVA_LONG, ADDRESS, ADDRESS));

            int fd = (int) restore.invokeExact(ctx, 7);
            assertTrue(fd >= 0, "RESTORE_EXT_FILE(7) returned " + fd);
            assertEquals("/dev/null", target(fd));
            assertEquals(-95, (int) restore.invokeExact(ctx, 8), "an id with no program is not the plan's");

            try (Arena a = Arena.ofConfined()) {
                MemorySegment newOffset = a.allocate(JAVA_LONG);
                newOffset.set(JAVA_LONG, 0, -1);
                MemorySegment pluginFd = a.allocate(JAVA_INT);
                int rc = (int) update.invokeExact(ctx, a.allocateFrom("/dev/nvidia0"), 0x200600000L, 0x1234L, newOffset, pluginFd);
                assertEquals(1, rc);
                assertEquals(0, newOffset.get(JAVA_LONG, 0));
                assertEquals("/dev/zero", target(pluginFd.get(JAVA_INT, 0)));
                int uvm = (int) update.invokeExact(ctx, a.allocateFrom("/dev/nvidia-uvm"), 0x7f0000000000L, 0L, newOffset, pluginFd);
                assertEquals(1, uvm, "the prefix covers every NVIDIA device node");
                int other = (int) update.invokeExact(ctx, a.allocateFrom("/dev/dri/renderD128"), 0x1000L, 0L, newOffset, pluginFd);
                assertEquals(-95, other, "a path the plan does not claim goes to the next plugin");
            }
        }
    }
}
