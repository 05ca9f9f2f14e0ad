package dev.criugpu.cuda.gpu;

import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Where each GPU that held a dumped task's CUDA state goes at restore. Policy, over the checkpointed GPUs of all
 * tasks only (GPUs a task merely saw are placed afterwards, per task, by {@link #pairsFor(TaskGpuRecord, List)}):
 * a GPU named in the explicit map goes where the map says; then a checkpointed GPU that is present (and not the
 * target of another) stays; then every other one goes to a present GPU of the same model that nothing goes to yet,
 * preferring the one with its old device minor, else the lowest minor. The driver restores only onto the same chip
 * type, so models must match.
 */
public final class GpuMapping {
    private final Map<GpuUuid, GpuUuid> map;

    private GpuMapping(Map<GpuUuid, GpuUuid> map) {
        this.map = map;
    }

    /**
     * @param recorded the GPUs that held the dumped tasks' state (union over tasks of {@link TaskGpuRecord#checkpointed})
     * @param present the GPUs of this host that may be used
     * @param explicit the user's map (entries for GPUs not recorded are ignored)
     * @throws IllegalArgumentException one line naming the GPU that cannot be placed and why
     */
    public static GpuMapping plan(Collection<GpuInfo> recorded, List<GpuInfo> present, Map<GpuUuid, GpuUuid> explicit) {
        Map<GpuUuid, GpuInfo> presentByUuid = new LinkedHashMap<>();
        for (GpuInfo g : present) presentByUuid.put(g.uuid(), g);
        Map<GpuUuid, GpuInfo> old = new LinkedHashMap<>();
        recorded.stream().sorted(java.util.Comparator.comparingInt(GpuInfo::minor)).forEach(g -> old.putIfAbsent(g.uuid(), g));

        Map<GpuUuid, GpuUuid> result = new LinkedHashMap<>();
        Set<GpuUuid> used = new LinkedHashSet<>();
        for (GpuInfo g : old.values()) {
            GpuUuid to = explicit.get(g.uuid());
            if (to == null) continue;
            GpuInfo target = presentByUuid.get(to);
            if (target == null) {
                throw new IllegalArgumentException("device map sends " + g.uuid() + " to " + to + ", which is not a usable GPU here");
            }
            if (!target.model().equals(g.model())) {
                throw new IllegalArgumentException("device map sends " + g.uuid() + " (" + g.model() + ") to " + to
                        + " (" + target.model() + "): the driver restores only onto the same model");
            }
            result.put(g.uuid(), to);
            used.add(to);
        }
        for (GpuInfo g : old.values()) {
            if (result.containsKey(g.uuid())) continue;
            if (presentByUuid.containsKey(g.uuid()) && !used.contains(g.uuid())) {
                result.put(g.uuid(), g.uuid());
                used.add(g.uuid());
            }
        }
        for (GpuInfo g : old.values()) {
            if (result.containsKey(g.uuid())) continue;
            GpuInfo target = freeSameModel(g, present, used).orElseThrow(() -> new IllegalArgumentException(
                    "GPU " + g.uuid() + " (" + g.model() + ", minor " + g.minor()
                            + ") is not here and no free GPU of that model is left to restore onto"));
            result.put(g.uuid(), target.uuid());
            used.add(target.uuid());
        }
        return new GpuMapping(result);
    }

    /**
     * The pairs for a task whose GPUs nobody recorded (an image of upstream's plugin): empty without a map (same
     * GPUs), else every pair of the map plus every other GPU of this host staying where it is, so that whichever GPUs
     * the task held are listed (the driver wants each one). Each target must be a usable GPU here.
     *
     * @throws IllegalArgumentException one line naming a target that is not here
     */
    public static List<GpuPair> explicitPairs(Map<GpuUuid, GpuUuid> explicit, List<GpuInfo> present) {
        if (explicit.isEmpty()) return List.of();
        Set<GpuUuid> here = new LinkedHashSet<>();
        for (GpuInfo g : present) here.add(g.uuid());
        List<GpuPair> pairs = new ArrayList<>();
        Set<GpuUuid> named = new LinkedHashSet<>();
        for (var e : explicit.entrySet()) {
            if (!here.contains(e.getValue())) {
                throw new IllegalArgumentException("device map sends " + e.getKey() + " to " + e.getValue()
                        + ", which is not a usable GPU here");
            }
            pairs.add(new GpuPair(e.getKey(), e.getValue()));
            named.add(e.getKey());
            named.add(e.getValue());
        }
        for (GpuUuid g : here) if (!named.contains(g)) pairs.add(new GpuPair(g, g));
        return List.copyOf(pairs);
    }

    private static Optional<GpuInfo> freeSameModel(GpuInfo g, List<GpuInfo> present, Set<GpuUuid> used) {
        List<GpuInfo> free = present.stream()
                .filter(p -> p.model().equals(g.model()) && !used.contains(p.uuid())).toList();
        return free.stream().filter(p -> p.minor() == g.minor()).findFirst()
                .or(() -> free.stream().min(java.util.Comparator.comparingInt(GpuInfo::minor)));
    }

    /** The whole plan, old → new, for the log. */
    public Map<GpuUuid, GpuUuid> asMap() {
        return java.util.Collections.unmodifiableMap(map);
    }

    /** Whether any GPU moves. */
    public boolean remaps() {
        return map.entrySet().stream().anyMatch(e -> !e.getKey().equals(e.getValue()));
    }

    /**
     * The pairs to pass when restoring a task whose state was on {@code taskGpus}: empty when none of them moves (a
     * plain restore), else one pair for every one of them (the driver wants every checkpointed GPU listed).
     */
    public List<GpuPair> pairsFor(Collection<GpuUuid> taskGpus) {
        return pairsFor(new TaskGpuRecord(taskGpus.stream().map(u -> new GpuInfo(u, -1, "", "")).toList(), List.of()), List.of());
    }

    /**
     * As {@link #pairsFor(Collection)} for the task's checkpointed GPUs, and when one of them moves, every other GPU
     * the task could see is listed too so that the pairs form a one-to-one map: the driver refuses a remapping
     * restore that leaves a visible GPU out. Such a GPU stays where it is when nothing else goes there, else it takes
     * a GPU of {@code host} (every GPU of this host, including ones the plan was told to treat as absent) that
     * nothing goes to yet, of its own model if there is one, lowest first; it is left out only when none is left.
     */
    public List<GpuPair> pairsFor(TaskGpuRecord task, List<GpuInfo> host) {
        List<GpuPair> pairs = new ArrayList<>();
        boolean moves = false;
        for (GpuUuid u : task.checkpointedUuids()) {
            GpuUuid to = map.get(u);
            if (to == null) throw new IllegalArgumentException("GPU " + u + " was not in the restore plan");
            pairs.add(new GpuPair(u, to));
            moves |= !u.equals(to);
        }
        if (!moves) return List.of();
        Set<GpuUuid> sources = new LinkedHashSet<>(task.checkpointedUuids());
        Set<GpuUuid> targets = new LinkedHashSet<>();
        for (GpuPair p : pairs) targets.add(p.newUuid());
        List<GpuInfo> byMinor = host.stream().sorted(java.util.Comparator.comparingInt(GpuInfo::minor)).toList();
        for (GpuInfo v : task.visible()) {
            if (!sources.add(v.uuid())) continue;
            boolean stays = !targets.contains(v.uuid()) && byMinor.stream().anyMatch(h -> h.uuid().equals(v.uuid()));
            Optional<GpuUuid> to = stays ? Optional.of(v.uuid())
                    : byMinor.stream().filter(h -> !targets.contains(h.uuid()) && h.model().equals(v.model())).map(GpuInfo::uuid).findFirst()
                    .or(() -> byMinor.stream().filter(h -> !targets.contains(h.uuid())).map(GpuInfo::uuid).findFirst());
            if (to.isEmpty()) continue;
            pairs.add(new GpuPair(v.uuid(), to.get()));
            targets.add(to.get());
        }
        return List.copyOf(pairs);
    }
}
