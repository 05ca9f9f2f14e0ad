package dev.criugpu.amdgpu.topology;

import dev.criugpu.api.CriuException;
import dev.criugpu.api.Errno;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Finds local GPUs for the checkpointed ones (upstream's rules, except that this host may show more GPUs than the
 * checkpoint used — upstream requires the same count): XGMI hives matched to hives
 * first, with backtracking; then the remaining GPUs; each pair must have matching device properties, at least as
 * many valid links, and CPU links that can be served consistently (NUMA). List orders follow upstream so the
 * same systems give the same mapping.
 *
 * <p>Deliberate differences from upstream: when a hive pair matched but the hives after it could not, the
 * mappings made for that pair are undone before the next candidate is tried (upstream keeps them). And the search
 * only enters a choice after which the rest can still be matched: each checkpointed GPU has its candidates (the
 * local GPUs it fits whatever the other pairs are: device properties, link counts, links that can serve its links),
 * and a pair (or a hive pair) is tried only if the GPUs (hives) left over still have a matching among their
 * candidates (bipartite matching). The first mapping found is the one upstream's order finds, since only choices
 * with no mapping behind them are skipped; where there is none, that is seen at once instead of after trying every
 * order (16 identical GPUs, one without a match: 16! orders). What candidates cannot see is the consistency of the
 * CPU (NUMA) links across pairs; a search that still runs past {@link #MAX_STEPS} pair checks gives up with one line.
 */
public final class GpuMatcher {
    private final Topology src;
    private final Topology dest;
    private final MatchChecks checks;
    private final Map<Integer, Integer> gpuMap = new LinkedHashMap<>();
    private final Map<Integer, Integer> cpuMap = new LinkedHashMap<>();
    /** Checkpointed gpu id → the local gpu ids it fits whatever else is mapped. */
    private final Map<Integer, Set<Integer>> candidates = new HashMap<>();
    /** Pair checks made by the search (bounded by {@link #MAX_STEPS}). */
    int steps;
    static final int MAX_STEPS = 200_000;

    private GpuMatcher(Topology src, Topology dest, MatchChecks checks) {
        this.src = src;
        this.dest = dest;
        this.checks = checks;
        for (KfdNode s : src.gpus()) {
            Set<Integer> fits = new HashSet<>();
            for (KfdNode d : dest.gpus()) if (fitsAlone(s, d)) fits.add(d.gpuId());
            candidates.put(s.gpuId(), fits);
        }
    }

    /** How many pair checks deciding {@code checkpointed} against {@code local} takes (for tests of the bound). */
    static int stepsToDecide(Topology checkpointed, Topology local, MatchChecks checks) {
        GpuMatcher m = new GpuMatcher(checkpointed, local, checks);
        try {
            m.run();
        } catch (CriuException e) {
            // the count is the answer either way
        }
        return m.steps;
    }

    /** Maps every GPU of {@code checkpointed} to one of {@code local}, or fails naming the GPU that has no match. */
    public static GpuMapping match(Topology checkpointed, Topology local, MatchChecks checks) {
        return new GpuMatcher(checkpointed, local, checks).run();
    }

    private GpuMapping run() {
        int ns = src.gpus().size();
        int nd = dest.gpus().size();
        if (ns > nd) {
            throw new CriuException(Errno.EINVAL, "the checkpoint used " + ns + " GPU(s) but " + nd
                    + " are visible here");
        }
        if (src.hives().size() > dest.hives().size()) {
            throw new CriuException(Errno.EINVAL, "the checkpoint has " + src.hives().size()
                    + " XGMI hive(s) but this host has " + dest.hives().size());
        }
        boolean ok = matchable(src.gpus(), dest.gpus())
                && matchHives(new ArrayDeque<>(src.hives()), new ArrayDeque<>(dest.hives()));
        if (ok) {
            Deque<KfdNode> srcLeft = new ArrayDeque<>();
            Deque<KfdNode> destLeft = new ArrayDeque<>();
            for (KfdNode n : src.gpus()) if (!gpuMap.containsKey(n.gpuId())) srcLeft.addFirst(n);
            for (KfdNode n : dest.gpus()) if (!gpuMap.containsValue(n.gpuId())) destLeft.addFirst(n);
            ok = mapDevices(srcLeft, destLeft);
        }
        if (!ok) throw new CriuException(Errno.EINVAL, explainFailure());
        return new GpuMapping(gpuMap, cpuMap);
    }

    private boolean matchHives(Deque<List<KfdNode>> srcHives, Deque<List<KfdNode>> destHives) {
        if (srcHives.isEmpty()) return true;
        if (!hivesMatchable(srcHives, destHives)) return false;
        List<KfdNode> srcHive = srcHives.removeFirst();
        for (List<KfdNode> destHive : new ArrayList<>(destHives)) {
            List<List<KfdNode>> othersLeft = new ArrayList<>(destHives);
            othersLeft.remove(destHive);
            if (!matchable(srcHive, destHive) || !hivesMatchable(srcHives, othersLeft)) continue;
            Snapshot before = snapshot();
            if (mapDevices(new ArrayDeque<>(srcHive), new ArrayDeque<>(destHive))) {
                destHives.remove(destHive);
                if (matchHives(srcHives, destHives)) return true;
                destHives.addFirst(destHive);
            }
            before.restore();
        }
        srcHives.addLast(srcHive);
        return false;
    }

    private boolean mapDevices(Deque<KfdNode> srcNodes, Deque<KfdNode> destNodes) {
        if (srcNodes.isEmpty()) return true;
        KfdNode s = srcNodes.removeFirst();
        for (KfdNode d : new ArrayList<>(destNodes)) {
            if (!candidates.get(s.gpuId()).contains(d.gpuId())) continue;
            List<KfdNode> destLeft = new ArrayList<>(destNodes);
            destLeft.remove(d);
            if (!matchable(srcNodes, destLeft)) continue;
            if (++steps > MAX_STEPS) {
                throw new CriuException(Errno.EINVAL, "no GPU mapping found after " + MAX_STEPS + " tries: the"
                        + " checkpointed GPUs' CPU links can be served in too many ways to try them all; set"
                        + " KFD_GPU_MAP to choose one");
            }
            Optional<Pending> pending = mapDevice(s, d);
            if (pending.isEmpty()) continue;
            destNodes.remove(d);
            Snapshot before = snapshot();
            pending.get().commit();
            if (mapDevices(srcNodes, destNodes)) return true;
            before.restore();
            destNodes.addFirst(d);
        }
        srcNodes.addFirst(s);
        return false;
    }

    /**
     * Whether {@code d} can serve {@code s} for some choice of the other pairs: what {@link #reasonNotMappable} checks
     * but the CPU links' consistency with mappings made for other GPUs.
     */
    private boolean fitsAlone(KfdNode s, KfdNode d) {
        if (DeviceMatch.mismatch(s, d, checks).isPresent()) return false;
        if (src.validLinks(s).size() > dest.validLinks(d).size()) return false;
        for (IoLink sLink : s.links()) {
            if (!src.isValid(sLink) || !src.target(sLink).isCpu()) continue;
            if (d.links().stream().noneMatch(dLink -> linkServes(s, sLink, d, dLink))) return false;
        }
        return true;
    }

    /** Whether every GPU of {@code srcNodes} can have its own GPU of {@code destNodes} among its candidates. */
    private boolean matchable(Collection<KfdNode> srcNodes, Collection<KfdNode> destNodes) {
        if (srcNodes.size() > destNodes.size()) return false;
        List<Integer> destIds = destNodes.stream().map(KfdNode::gpuId).toList();
        List<List<Integer>> edges = new ArrayList<>();
        for (KfdNode s : srcNodes) {
            List<Integer> e = new ArrayList<>();
            for (int j = 0; j < destIds.size(); j++) if (candidates.get(s.gpuId()).contains(destIds.get(j))) e.add(j);
            edges.add(e);
        }
        return Matching.perfect(edges, destIds.size());
    }

    /** Whether every hive of {@code srcHives} can have its own hive of {@code destHives} that its GPUs can match. */
    private boolean hivesMatchable(Collection<List<KfdNode>> srcHives, Collection<List<KfdNode>> destHives) {
        List<List<KfdNode>> dests = new ArrayList<>(destHives);
        List<List<Integer>> edges = new ArrayList<>();
        for (List<KfdNode> s : srcHives) {
            List<Integer> e = new ArrayList<>();
            for (int j = 0; j < dests.size(); j++) if (matchable(s, dests.get(j))) e.add(j);
            edges.add(e);
        }
        return Matching.perfect(edges, dests.size());
    }

    /** Bipartite matching (Kuhn's augmenting paths): polynomial, and exact for the question it is asked. */
    private static final class Matching {
        /** Whether each left vertex {@code i} gets its own right vertex among {@code edges.get(i)}. */
        static boolean perfect(List<List<Integer>> edges, int rights) {
            int[] owner = new int[rights];
            Arrays.fill(owner, -1);
            for (int i = 0; i < edges.size(); i++) {
                if (!augment(i, edges, owner, new boolean[rights])) return false;
            }
            return true;
        }

        private static boolean augment(int left, List<List<Integer>> edges, int[] owner, boolean[] seen) {
            for (int r : edges.get(left)) {
                if (seen[r]) continue;
                seen[r] = true;
                if (owner[r] < 0 || augment(owner[r], edges, owner, seen)) {
                    owner[r] = left;
                    return true;
                }
            }
            return false;
        }
    }

    /** New mappings that one checkpointed/local GPU pair needs. */
    private final class Pending {
        final int srcGpu;
        final int destGpu;
        final Map<Integer, Integer> cpus = new LinkedHashMap<>();

        Pending(int srcGpu, int destGpu) {
            this.srcGpu = srcGpu;
            this.destGpu = destGpu;
        }

        void commit() {
            cpuMap.putAll(cpus);
            gpuMap.put(srcGpu, destGpu);
        }
    }

    private Optional<Pending> mapDevice(KfdNode s, KfdNode d) {
        Pending p = new Pending(s.gpuId(), d.gpuId());
        return reasonNotMappable(s, d, p).isEmpty() ? Optional.of(p) : Optional.empty();
    }

    /** Why {@code d} cannot serve {@code s} now, or empty (then {@code p} holds the CPU mappings it needs). */
    private Optional<String> reasonNotMappable(KfdNode s, KfdNode d, Pending p) {
        Optional<String> props = DeviceMatch.mismatch(s, d, checks);
        if (props.isPresent()) return props;
        int sl = src.validLinks(s).size();
        int dl = dest.validLinks(d).size();
        if (sl > dl) return Optional.of(sl + " valid io links > " + dl);
        for (IoLink sLink : s.links()) {
            if (!src.isValid(sLink) || !src.target(sLink).isCpu()) continue;
            int srcCpu = sLink.nodeTo();
            if (!checks.on(MatchCheck.NUMA)) {
                if (d.links().stream().noneMatch(dLink -> linkServes(s, sLink, d, dLink))) {
                    return Optional.of("no link can serve the " + sLink.typeName() + " link to CPU node " + srcCpu);
                }
                continue;
            }
            Integer mappedCpu = cpuMap.containsKey(srcCpu) ? cpuMap.get(srcCpu) : p.cpus.get(srcCpu);
            if (mappedCpu != null) {
                boolean served = d.links().stream().anyMatch(dLink -> dLink.nodeTo() == mappedCpu
                        && dLink.type() == sLink.type() && linkServes(s, sLink, d, dLink));
                if (!served) {
                    return Optional.of("no " + sLink.typeName() + " link to CPU node " + mappedCpu
                            + ", which stands in for CPU node " + srcCpu + " (KFD_NUMA_CHECK=0 skips this)");
                }
            } else {
                Optional<IoLink> free = d.links().stream().filter(dLink -> linkServes(s, sLink, d, dLink)
                        && !cpuMap.containsValue(dLink.nodeTo()) && !p.cpus.containsValue(dLink.nodeTo())).findFirst();
                if (free.isEmpty()) {
                    return Optional.of("no free CPU link can serve the " + sLink.typeName() + " link to CPU node "
                            + srcCpu + " (KFD_NUMA_CHECK=0 skips this)");
                }
                p.cpus.put(srcCpu, free.get().nodeTo());
            }
        }
        return Optional.empty();
    }

    /** Upstream's iolink_match: can the local link {@code dLink} of {@code d} stand in for {@code sLink}? */
    private boolean linkServes(KfdNode s, IoLink sLink, KfdNode d, IoLink dLink) {
        if (!src.isValid(sLink)) return true;
        if (!dest.isValid(dLink)) return false;
        if (src.target(sLink).isCpu() != dest.target(dLink).isCpu()) return false;
        if (sLink.type() == IoLink.XGMI && dLink.type() == IoLink.PCIE) return false;
        return !src.isBidirectional(s, sLink) || dest.isBidirectional(d, dLink);
    }

    private String explainFailure() {
        gpuMap.clear();
        cpuMap.clear();
        List<String> candidates = new ArrayList<>();
        List<String> rejected = new ArrayList<>();
        for (KfdNode s : src.gpus()) {
            List<String> why = new ArrayList<>();
            List<String> fits = new ArrayList<>();
            for (KfdNode d : dest.gpus()) {
                Optional<String> r = reasonNotMappable(s, d, new Pending(s.gpuId(), d.gpuId()));
                if (r.isPresent()) why.add(d.describe() + ": " + r.get());
                else fits.add(String.format("0x%04x", d.gpuId()));
            }
            if (fits.isEmpty()) {
                return "checkpointed GPU " + String.format("0x%04x", s.gpuId()) + " (" + s.describe()
                        + ") matches no local GPU: " + String.join("; ", why);
            }
            candidates.add(String.format("0x%04x -> %s", s.gpuId(), fits));
            for (String w : why) rejected.add(String.format("0x%04x vs %s", s.gpuId(), w));
        }
        return "no assignment gives every checkpointed GPU its own local GPU while keeping XGMI hives and CPU links"
                + " consistent (candidates: " + String.join(", ", candidates) + "; rejected: "
                + (rejected.isEmpty() ? "none" : String.join("; ", rejected)) + "); set KFD_GPU_MAP to choose one";
    }

    private Snapshot snapshot() {
        return new Snapshot(new LinkedHashMap<>(gpuMap), new LinkedHashMap<>(cpuMap));
    }

    private final class Snapshot {
        final Map<Integer, Integer> gpus;
        final Map<Integer, Integer> cpus;

        Snapshot(Map<Integer, Integer> gpus, Map<Integer, Integer> cpus) {
            this.gpus = gpus;
            this.cpus = cpus;
        }

        void restore() {
            gpuMap.clear();
            gpuMap.putAll(gpus);
            cpuMap.clear();
            cpuMap.putAll(cpus);
        }
    }
}
