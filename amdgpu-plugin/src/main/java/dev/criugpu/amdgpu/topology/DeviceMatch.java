package dev.criugpu.amdgpu.topology;

import java.util.Optional;

/** Compares a checkpointed GPU's properties with a local GPU's, under the checks that are switched on. */
public final class DeviceMatch {
    private DeviceMatch() {
    }

    /** Empty when the local GPU can stand in for the checkpointed one, else the first difference. */
    public static Optional<String> mismatch(KfdNode checkpointed, KfdNode local, MatchChecks checks) {
        for (NodeProperty p : NodeProperty.values()) {
            if (p.rule == NodeProperty.Rule.IGNORED || (p.check != null && !checks.on(p.check))) continue;
            long s = checkpointed.get(p);
            long d = local.get(p);
            boolean ok = p.rule == NodeProperty.Rule.EQUAL ? s == d : Long.compareUnsigned(s, d) <= 0;
            if (!ok) {
                String how = p.rule == NodeProperty.Rule.EQUAL ? " != " : " > ";
                String off = p.check == null ? "" : " (" + p.check.envVar + "=0 skips this)";
                return Optional.of(p.key + " " + fmt(p, s) + how + fmt(p, d) + off);
            }
        }
        return Optional.empty();
    }

    private static String fmt(NodeProperty p, long v) {
        return p == NodeProperty.DEVICE_ID || p == NodeProperty.VENDOR_ID || p == NodeProperty.CAPABILITY
                ? String.format("0x%x", v) : Long.toUnsignedString(v);
    }
}
