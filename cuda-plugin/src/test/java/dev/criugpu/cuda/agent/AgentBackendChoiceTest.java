package dev.criugpu.cuda.agent;

import dev.criugpu.cuda.backend.CudaCallException;
import dev.criugpu.cuda.sys.DriverBackend;
import org.junit.jupiter.api.Test;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The agent looks at libcuda before criu's first line names the backend; that line still decides: the look is used
 * where the driver may be, and never where the user chose cuda-checkpoint.
 */
class AgentBackendChoiceTest {
    private static CudaAgent.Args args(String backend) {
        return new CudaAgent.Args(1, 1, backend, 0, 0);
    }

    private static Supplier<DriverBackend.Probe> counting(AtomicInteger asked) {
        return () -> {
            asked.incrementAndGet();
            return new DriverBackend.Probe(null, 0, "stand-in: no libcuda");
        };
    }

    @Test
    void aForcedDriverChoiceTakesTheEarlyLookAndSaysWhyItIsUnusable() {
        AtomicInteger asked = new AtomicInteger();
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> CudaAgent.open(args("driver"), counting(asked)));
        assertEquals(1, asked.get());
        assertTrue(e.getMessage().contains("CRIU_CUDA_BACKEND=driver but stand-in: no libcuda"), e.getMessage());
    }

    /** How often opening the backend named {@code backend} asked the early look (no cuda-checkpoint on PATH here). */
    private static int timesAsked(String backend) {
        AtomicInteger asked = new AtomicInteger();
        try {
            CudaAgent.open(args(backend), counting(asked));
        } catch (CudaCallException | RuntimeException e) {
            // the outcome depends on this machine's PATH: not this test's point
        }
        return asked.get();
    }

    @Test
    void theAutomaticChoiceAsksTheEarlyLookOnce() {
        assertEquals(1, timesAsked("auto"));
    }

    @Test
    void theCliChoiceNeverUsesTheDriver() {
        assertEquals(0, timesAsked("cli"));
    }

    @Test
    void withoutLibcudaTheEarlyLookSaysSoInsteadOfThrowing() {
        DriverBackend.Probe p = CudaAgent.probeDriver();
        assertTrue(p.usable() || !p.reason().isBlank(), p.toString());
    }
}
