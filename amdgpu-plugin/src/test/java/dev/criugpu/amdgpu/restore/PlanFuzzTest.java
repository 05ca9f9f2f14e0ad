package dev.criugpu.amdgpu.restore;

import dev.criugpu.amdgpu.AmdgpuHost;
import dev.criugpu.amdgpu.images.AmdgpuImages;
import dev.criugpu.amdgpu.testing.FuzzedTask;
import dev.criugpu.amdgpu.testing.KfdSimulator;
import dev.criugpu.amdgpu.testing.SimulatedGpuProcess;
import dev.criugpu.amdgpu.testing.SimulatedHost;
import dev.criugpu.amdgpu.topology.Topology;
import dev.criugpu.api.plan.ChildPlan;
import dev.criugpu.api.plan.PlanMutations;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The plan executor's input, fuzzed (issue 22): a real AMD restore plan (KfdPrograms over simulated images) whose
 * step numbers (op, slot, arg, arg2, lengths, fd offsets and counts, the plan's counts) are mutated, or whose
 * programs are cut short, run by the real C executor in a forked task over the simulated KFD. Every run ends (no
 * crash, no hang); a program either hands over an fd or is refused with exactly one line; no byte outside a step's
 * {@code [buf, buf + len)} changed (each buffer is followed by guard bytes). Seeded; the timeout only guards
 * against a hang.
 */
@Timeout(120)
class PlanFuzzTest {
    private static final int ITERATIONS = 400;
    private static final int GUARD = 64;

    @TempDir
    Path dir;

    private final AmdgpuHost host = SimulatedHost.create(Path.of("/nonexistent"), Path.of("/nonexistent"), Map.of());
    private final RefillChannels channels = new RefillChannels(host.fdstore().orElseThrow());
    private Path images;
    private Topology here;

    @BeforeEach
    void dumped() throws IOException {
        images = SimulatedGpuProcess.seededDump(dir);
        KfdSimulator.reset();
        here = SimulatedGpuProcess.swappedHere(dir);
    }

    @AfterEach
    void tearDown() {
        channels.close();
        KfdSimulator.reset();
    }

    /** The programs RestorePlan builds for the images, in a plan with guard bytes after every buffer. */
    private ChildPlan guardedPlan() {
        AmdgpuImages in = new AmdgpuImages(images);
        try (RestorePlan built = RestorePlan.build(in, here, Map.of(), e -> { }, id -> 0)) {
            ChildPlan plan = new ChildPlan("amdgpu", GUARD);
            KfdPrograms programs = new KfdPrograms(plan, here);
            for (var e : built.kfds().entrySet()) {
                programs.addKfd(e.getKey(), e.getValue(), built.mappings().get(e.getKey()),
                        channels.fdstoreIdFor(e.getKey()));
            }
            int user = in.readRenderNode(SimulatedGpuProcess.RENDER_FILE).getGpuId();
            int actual = built.mappings().get(SimulatedGpuProcess.KFD_FILE).localGpu(user);
            programs.addRender(SimulatedGpuProcess.RENDER_FILE, built.renderMinor(actual));
            return plan;
        }
    }

    @Test
    void mutatedAndTruncatedPlansEndWithAnFdOrOneLineAndWriteNothingOutsideTheirBuffers() {
        int[] ids = {SimulatedGpuProcess.KFD_FILE, SimulatedGpuProcess.RENDER_FILE};
        try (ChildPlan plan = guardedPlan()) {
            FuzzedTask task = new FuzzedTask(plan);
            int drain = channels.mainEnds().get(SimulatedGpuProcess.KFD_FILE);
            PlanMutations m = new PlanMutations(plan.sealed().address(), GUARD);

            // as built, every program runs: the checks pass every plan Java builds
            FuzzedTask.Outcome clean = task.run(ids, m.watched(), m.allowed(), drain);
            assertEquals(0, clean.status());
            for (int i = 0; i < ids.length; i++) {
                assertTrue(clean.rc()[i] >= 0, "file " + ids[i] + ": " + clean.rc()[i] + " " + clean.log()[i]);
            }
            assertEquals(0, clean.stray());

            Random r = new Random(0x9a22f00d);
            int handedOver = 0;
            int refused = 0;
            int refusedByCheck = 0;
            for (int it = 0; it < ITERATIONS; it++) {
                m.restore();
                List<String> what = it % 5 == 0 ? List.of(m.truncate(r)) : m.mutate(r);
                FuzzedTask.Outcome o = task.run(ids, m.watched(), m.allowed(), drain);
                String where = "iteration " + it + " " + what + ": ";
                if (o.status() != 0) {
                    fail(where + (o.status() == -1 ? "the task hung" : o.status() < 1000
                            ? "the task died of signal " + o.status() : "the task exited " + (o.status() - 1000)));
                }
                assertEquals(0, o.stray(), where + "bytes outside every step's buffer changed, the first at 0x"
                        + Long.toHexString(o.firstStray()));
                for (int i = 0; i < ids.length; i++) {
                    String w = where + "file " + ids[i] + " returned " + o.rc()[i] + ", logged " + o.lines()[i]
                            + " lines, the last " + o.log()[i];
                    assertEquals(1, o.lines()[i], w);
                    assertEquals(o.log()[i].indexOf('\n'), o.log()[i].length() - 1, w);
                    if (o.rc()[i] >= 0) {
                        assertTrue(o.log()[i].startsWith("4 amdgpu: restored file " + ids[i] + " as fd "), w);
                        handedOver++;
                    } else {
                        assertTrue(o.log()[i].startsWith("1 amdgpu: "), w);
                        refused++;
                        if (o.log()[i].startsWith("1 amdgpu: file " + ids[i] + ": ")) refusedByCheck++;
                    }
                }
            }
            // both outcomes occur, and the new checks do the refusing often, or the mutations exercise nothing
            assertTrue(handedOver > 100 && refused > 200 && refusedByCheck > 100,
                    "handed over " + handedOver + ", refused " + refused + " (" + refusedByCheck + " by a step check)");
        }
    }
}
