package dev.criugpu.cuda.bindings;

import dev.criugpu.api.bindings.libc_h;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
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
 * Compiles a C probe against the real cuda.h and linux/ptrace.h (and nvml.h where it is installed) and compares every
 * size and offset we bind.
 */
class LayoutConformanceTest {
    static final Path CUDA_H = Path.of("/usr/local/cuda-13.0/include/cuda.h");
    /** The CUDA toolkit's NVML header (its nvml-dev part); {@code -Dnvml.h=FILE} names another copy of NVIDIA's. */
    static final Path NVML_H = Path.of(System.getProperty("nvml.h", "/usr/local/cuda-13.0/include/nvml.h"));
    static Map<String, Long> c = new HashMap<>();
    static Map<String, Long> nvml = new HashMap<>();

    /** Each test, not the class, is skipped without the header: so the reports name the reason for every check. */
    @BeforeEach
    void needsCudaH() {
        Assumptions.assumeTrue(Files.isRegularFile(CUDA_H), "skipped: " + CUDA_H + " is absent (install the CUDA 13.0 toolkit headers)");
    }

    @BeforeAll
    static void probe(@TempDir Path dir) throws IOException, InterruptedException {
        if (!Files.isRegularFile(CUDA_H)) return;
        Path src = dir.resolve("probe.c");
        Files.writeString(src, """
                #include <stdio.h>
                #include <stddef.h>
                #include <signal.h>
                #include <sys/wait.h>
                #include <sys/prctl.h>
                #include <linux/ptrace.h>
                #include <cuda.h>
                #define S(t) printf("sizeof %s %zu\\n", #t, sizeof(t))
                #define O(t, f) printf("offsetof %s.%s %zu\\n", #t, #f, offsetof(t, f))
                #define V(n) printf("value %s %ld\\n", #n, (long)(n))
                int main(void) {
                    S(CUuuid); O(CUuuid, bytes);
                    S(CUcheckpointLockArgs); O(CUcheckpointLockArgs, timeoutMs); O(CUcheckpointLockArgs, reserved0);
                    O(CUcheckpointLockArgs, reserved1);
                    S(CUcheckpointCheckpointArgs); O(CUcheckpointCheckpointArgs, reserved);
                    S(CUcheckpointGpuPair); O(CUcheckpointGpuPair, oldUuid); O(CUcheckpointGpuPair, newUuid);
                    S(CUcheckpointRestoreArgs); O(CUcheckpointRestoreArgs, gpuPairs); O(CUcheckpointRestoreArgs, gpuPairsCount);
                    O(CUcheckpointRestoreArgs, reserved); O(CUcheckpointRestoreArgs, reserved1);
                    S(CUcheckpointUnlockArgs); O(CUcheckpointUnlockArgs, reserved);
                    S(CUprocessState);
                    V(CU_PROCESS_STATE_RUNNING); V(CU_PROCESS_STATE_LOCKED); V(CU_PROCESS_STATE_CHECKPOINTED); V(CU_PROCESS_STATE_FAILED);
                    V(CUDA_SUCCESS); V(CUDA_ERROR_INVALID_VALUE); V(CUDA_ERROR_OUT_OF_MEMORY); V(CUDA_ERROR_NOT_INITIALIZED); V(CUDA_ERROR_NO_DEVICE);
                    V(CUDA_ERROR_ILLEGAL_STATE); V(CUDA_ERROR_NOT_FOUND); V(CUDA_ERROR_NOT_READY); V(CUDA_ERROR_NOT_PERMITTED);
                    V(CUDA_ERROR_NOT_SUPPORTED); V(CUDA_ERROR_TIMEOUT);
                    V(PTRACE_CONT); V(PTRACE_SETOPTIONS); V(PTRACE_INTERRUPT); V(PTRACE_GETSIGMASK); V(PTRACE_SETSIGMASK);
                    V(PTRACE_O_TRACESYSGOOD); V(PTRACE_O_SUSPEND_SECCOMP); V(PTRACE_EVENT_STOP); V(__WALL); V(SIGTRAP);
                    V(PR_GET_CHILD_SUBREAPER);
                    return 0;
                }
                """);
        compileAndRun(src, CUDA_H, c);
        if (!Files.isRegularFile(NVML_H)) return;
        Path nvmlSrc = dir.resolve("nvml_probe.c");
        Files.writeString(nvmlSrc, """
                #include <stdio.h>
                #include <stddef.h>
                #include <nvml.h>
                #define S(t) printf("sizeof %s %zu\\n", #t, sizeof(t))
                #define O(t, f) printf("offsetof %s.%s %zu\\n", #t, #f, offsetof(t, f))
                #define V(n) printf("value %s %lld\\n", #n, (long long)(n))
                int main(void) {
                    S(nvmlDevice_t);
                    S(nvmlMemory_t); O(nvmlMemory_t, total); O(nvmlMemory_t, free); O(nvmlMemory_t, used);
                    S(nvmlProcessInfo_t); O(nvmlProcessInfo_t, pid); O(nvmlProcessInfo_t, usedGpuMemory);
                    O(nvmlProcessInfo_t, gpuInstanceId); O(nvmlProcessInfo_t, computeInstanceId);
                    V(NVML_SUCCESS); V(NVML_ERROR_UNINITIALIZED); V(NVML_ERROR_NOT_SUPPORTED); V(NVML_ERROR_NO_PERMISSION);
                    V(NVML_ERROR_INSUFFICIENT_SIZE); V(NVML_ERROR_DRIVER_NOT_LOADED); V(NVML_ERROR_GPU_IS_LOST);
                    V(NVML_DEVICE_UUID_V2_BUFFER_SIZE); V(NVML_VALUE_NOT_AVAILABLE);
                    return 0;
                }
                """);
        compileAndRun(nvmlSrc, NVML_H, nvml);
    }

    private static void compileAndRun(Path src, Path header, Map<String, Long> into) throws IOException, InterruptedException {
        Path exe = src.resolveSibling(src.getFileName().toString().replace(".c", ""));
        Process gcc = new ProcessBuilder("gcc", "-I", header.getParent().toString(), "-o", exe.toString(), src.toString())
                .redirectErrorStream(true).start();
        String gccOut = new String(gcc.getInputStream().readAllBytes());
        assertTrue(gcc.waitFor(60, TimeUnit.SECONDS) && gcc.exitValue() == 0, "gcc failed:\n" + gccOut);
        Process run = new ProcessBuilder(exe.toString()).start();
        for (String line : new String(run.getInputStream().readAllBytes()).split("\n")) {
            int value = line.lastIndexOf(' ');
            into.put(line.substring(0, value), Long.parseLong(line.substring(value + 1)));
        }
        assertEquals(0, run.waitFor());
    }

    private static long size(String t) {
        return c.get("sizeof " + t);
    }

    private static long off(String t, String f) {
        return c.get("offsetof " + t + "." + f);
    }

    private static long value(String n) {
        return c.get("value " + n);
    }

    @Test
    void uuid() {
        assertEquals(size("CUuuid"), CUuuid.sizeof());
        assertEquals(off("CUuuid", "bytes"), CUuuid.offsetOf("bytes"));
    }

    @Test
    void lockArgs() {
        assertEquals(64, size("CUcheckpointLockArgs"));
        assertEquals(size("CUcheckpointLockArgs"), CUcheckpointLockArgs.sizeof());
        for (String f : new String[] {"timeoutMs", "reserved0", "reserved1"}) {
            assertEquals(off("CUcheckpointLockArgs", f), CUcheckpointLockArgs.offsetOf(f), f);
        }
    }

    @Test
    void checkpointAndUnlockArgs() {
        assertEquals(size("CUcheckpointCheckpointArgs"), CUcheckpointCheckpointArgs.sizeof());
        assertEquals(off("CUcheckpointCheckpointArgs", "reserved"), CUcheckpointCheckpointArgs.offsetOf("reserved"));
        assertEquals(size("CUcheckpointUnlockArgs"), CUcheckpointUnlockArgs.sizeof());
        assertEquals(off("CUcheckpointUnlockArgs", "reserved"), CUcheckpointUnlockArgs.offsetOf("reserved"));
    }

    @Test
    void gpuPairAndRestoreArgs() {
        assertEquals(size("CUcheckpointGpuPair"), CUcheckpointGpuPair.sizeof());
        assertEquals(off("CUcheckpointGpuPair", "oldUuid"), CUcheckpointGpuPair.offsetOf("oldUuid"));
        assertEquals(off("CUcheckpointGpuPair", "newUuid"), CUcheckpointGpuPair.offsetOf("newUuid"));
        assertEquals(64, size("CUcheckpointRestoreArgs"));
        assertEquals(size("CUcheckpointRestoreArgs"), CUcheckpointRestoreArgs.sizeof());
        for (String f : new String[] {"gpuPairs", "gpuPairsCount", "reserved", "reserved1"}) {
            assertEquals(off("CUcheckpointRestoreArgs", f), CUcheckpointRestoreArgs.offsetOf(f), f);
        }
    }

    @Test
    void enumsAndResultCodes() {
        assertEquals(4, size("CUprocessState"));
        assertEquals(value("CU_PROCESS_STATE_RUNNING"), CUprocessState.CU_PROCESS_STATE_RUNNING);
        assertEquals(value("CU_PROCESS_STATE_LOCKED"), CUprocessState.CU_PROCESS_STATE_LOCKED);
        assertEquals(value("CU_PROCESS_STATE_CHECKPOINTED"), CUprocessState.CU_PROCESS_STATE_CHECKPOINTED);
        assertEquals(value("CU_PROCESS_STATE_FAILED"), CUprocessState.CU_PROCESS_STATE_FAILED);
        assertEquals(value("CUDA_SUCCESS"), cuda_h.CUDA_SUCCESS);
        assertEquals(value("CUDA_ERROR_INVALID_VALUE"), cuda_h.CUDA_ERROR_INVALID_VALUE);
        assertEquals(value("CUDA_ERROR_OUT_OF_MEMORY"), cuda_h.CUDA_ERROR_OUT_OF_MEMORY);
        assertEquals(value("CUDA_ERROR_NOT_INITIALIZED"), cuda_h.CUDA_ERROR_NOT_INITIALIZED);
        assertEquals(value("CUDA_ERROR_NO_DEVICE"), cuda_h.CUDA_ERROR_NO_DEVICE);
        assertEquals(value("CUDA_ERROR_ILLEGAL_STATE"), cuda_h.CUDA_ERROR_ILLEGAL_STATE);
        assertEquals(value("CUDA_ERROR_NOT_FOUND"), cuda_h.CUDA_ERROR_NOT_FOUND);
        assertEquals(value("CUDA_ERROR_NOT_READY"), cuda_h.CUDA_ERROR_NOT_READY);
        assertEquals(value("CUDA_ERROR_NOT_PERMITTED"), cuda_h.CUDA_ERROR_NOT_PERMITTED);
        assertEquals(value("CUDA_ERROR_NOT_SUPPORTED"), cuda_h.CUDA_ERROR_NOT_SUPPORTED);
        assertEquals(value("CUDA_ERROR_TIMEOUT"), cuda_h.CUDA_ERROR_TIMEOUT);
    }

    private static long nvml(String key) {
        Assumptions.assumeTrue(!nvml.isEmpty(), "skipped: " + NVML_H + " is absent (install the CUDA toolkit's nvml-dev headers "
                + "or pass -Dnvml.h=FILE)");
        return nvml.get(key);
    }

    @Test
    void nvmlStructs() {
        assertEquals(nvml("sizeof nvmlDevice_t"), java.lang.foreign.ValueLayout.ADDRESS.byteSize());
        assertEquals(nvml("sizeof nvmlMemory_t"), nvmlMemory_t.sizeof());
        for (String f : new String[] {"total", "free", "used"}) {
            assertEquals(nvml("offsetof nvmlMemory_t." + f), nvmlMemory_t.offsetOf(f), f);
        }
        assertEquals(24, nvml("sizeof nvmlProcessInfo_t"));
        assertEquals(nvml("sizeof nvmlProcessInfo_t"), nvmlProcessInfo_t.sizeof());
        for (String f : new String[] {"pid", "usedGpuMemory", "gpuInstanceId", "computeInstanceId"}) {
            assertEquals(nvml("offsetof nvmlProcessInfo_t." + f), nvmlProcessInfo_t.offsetOf(f), f);
        }
    }

    @Test
    void nvmlConstants() {
        assertEquals(nvml("value NVML_SUCCESS"), nvml_h.NVML_SUCCESS);
        assertEquals(nvml("value NVML_ERROR_UNINITIALIZED"), nvml_h.NVML_ERROR_UNINITIALIZED);
        assertEquals(nvml("value NVML_ERROR_NOT_SUPPORTED"), nvml_h.NVML_ERROR_NOT_SUPPORTED);
        assertEquals(nvml("value NVML_ERROR_NO_PERMISSION"), nvml_h.NVML_ERROR_NO_PERMISSION);
        assertEquals(nvml("value NVML_ERROR_INSUFFICIENT_SIZE"), nvml_h.NVML_ERROR_INSUFFICIENT_SIZE);
        assertEquals(nvml("value NVML_ERROR_DRIVER_NOT_LOADED"), nvml_h.NVML_ERROR_DRIVER_NOT_LOADED);
        assertEquals(nvml("value NVML_ERROR_GPU_IS_LOST"), nvml_h.NVML_ERROR_GPU_IS_LOST);
        assertEquals(nvml("value NVML_DEVICE_UUID_V2_BUFFER_SIZE"), nvml_h.NVML_DEVICE_UUID_V2_BUFFER_SIZE);
        assertEquals(nvml("value NVML_VALUE_NOT_AVAILABLE"), nvml_h.NVML_VALUE_NOT_AVAILABLE);
    }

    @Test
    void ptraceNumbers() {
        assertEquals(value("PTRACE_CONT"), libc_h.PTRACE_CONT);
        assertEquals(value("PTRACE_SETOPTIONS"), libc_h.PTRACE_SETOPTIONS);
        assertEquals(value("PTRACE_INTERRUPT"), libc_h.PTRACE_INTERRUPT);
        assertEquals(value("PTRACE_GETSIGMASK"), libc_h.PTRACE_GETSIGMASK);
        assertEquals(value("PTRACE_SETSIGMASK"), libc_h.PTRACE_SETSIGMASK);
        assertEquals(value("PTRACE_O_TRACESYSGOOD"), libc_h.PTRACE_O_TRACESYSGOOD);
        assertEquals(value("PTRACE_O_SUSPEND_SECCOMP"), libc_h.PTRACE_O_SUSPEND_SECCOMP);
        assertEquals(value("PTRACE_EVENT_STOP"), libc_h.PTRACE_EVENT_STOP);
        assertEquals(value("__WALL"), libc_h.WALL);
        assertEquals(value("SIGTRAP"), libc_h.SIGTRAP);
        assertEquals(value("PR_GET_CHILD_SUBREAPER"), libc_h.PR_GET_CHILD_SUBREAPER);
    }
}
