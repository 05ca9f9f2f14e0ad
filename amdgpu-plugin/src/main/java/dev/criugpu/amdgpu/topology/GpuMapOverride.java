package dev.criugpu.amdgpu.topology;

import dev.criugpu.api.CriuException;
import dev.criugpu.api.Errno;

import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * An explicit GPU map from {@code KFD_GPU_MAP=oldid=newid,...} (ids decimal or 0x-hex; old = checkpointed gpu id,
 * new = local gpu id). Upstream has no such option. It must name every checkpointed GPU, each local GPU at most
 * once, and each pair must still pass the device property checks; hive and link rules are not applied.
 */
public final class GpuMapOverride {
    public static final String ENV = "KFD_GPU_MAP";

    private final Map<Integer, Integer> pairs;

    private GpuMapOverride(Map<Integer, Integer> pairs) {
        this.pairs = pairs;
    }

    public static Optional<GpuMapOverride> fromEnvironment(Map<String, String> env) {
        String v = env.get(ENV);
        return v == null || v.isBlank() ? Optional.empty() : Optional.of(parse(v));
    }

    public static GpuMapOverride parse(String value) {
        Map<Integer, Integer> pairs = new LinkedHashMap<>();
        for (String item : value.split(",")) {
            String t = item.trim();
            String[] kv = t.split("=", -1);
            if (kv.length != 2) throw bad("'" + t + "' is not oldid=newid");
            int from = parseId(kv[0].trim(), t);
            int to = parseId(kv[1].trim(), t);
            if (pairs.put(from, to) != null) throw bad(String.format("GPU 0x%04x is mapped twice", from));
        }
        return new GpuMapOverride(pairs);
    }

    private static int parseId(String s, String item) {
        try {
            long v = s.startsWith("0x") || s.startsWith("0X") ? Long.parseLong(s.substring(2), 16) : Long.parseLong(s);
            if (v <= 0 || v > 0xFFFFFFFFL) throw new NumberFormatException();
            return (int) v;
        } catch (NumberFormatException e) {
            throw bad("'" + item + "': '" + s + "' is not a gpu id");
        }
    }

    private static CriuException bad(String why) {
        return new CriuException(Errno.EINVAL, ENV + ": " + why);
    }

    public Map<Integer, Integer> pairs() {
        return pairs;
    }

    /** Checks the override against both topologies and turns it into a mapping. */
    public GpuMapping apply(Topology checkpointed, Topology local, MatchChecks checks) {
        for (KfdNode s : checkpointed.gpus()) {
            if (!pairs.containsKey(s.gpuId())) {
                throw bad(String.format("checkpointed GPU 0x%04x (%s) is not mapped", s.gpuId(), s.describe()));
            }
        }
        Set<Integer> used = new HashSet<>();
        for (var e : pairs.entrySet()) {
            KfdNode s = checkpointed.gpu(e.getKey()).orElseThrow(
                    () -> bad(String.format("the checkpoint has no GPU 0x%04x", e.getKey())));
            KfdNode d = local.gpu(e.getValue()).orElseThrow(
                    () -> bad(String.format("this host has no GPU 0x%04x", e.getValue())));
            if (!used.add(e.getValue())) throw bad(String.format("local GPU 0x%04x is used twice", e.getValue()));
            Optional<String> why = DeviceMatch.mismatch(s, d, checks);
            if (why.isPresent()) {
                throw bad(String.format("GPU 0x%04x cannot stand in for 0x%04x: %s", e.getValue(), e.getKey(), why.get()));
            }
        }
        return new GpuMapping(pairs, Map.of());
    }
}
