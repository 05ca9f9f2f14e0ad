package dev.criugpu.amdgpu.topology;

import java.util.EnumSet;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;

/** Which {@link MatchCheck}s are on for this restore. */
public final class MatchChecks {
    private final Set<MatchCheck> enabled;

    private MatchChecks(Set<MatchCheck> enabled) {
        this.enabled = EnumSet.noneOf(MatchCheck.class);
        this.enabled.addAll(enabled);
    }

    public static MatchChecks all() {
        return new MatchChecks(EnumSet.allOf(MatchCheck.class));
    }

    public static MatchChecks allExcept(MatchCheck... off) {
        EnumSet<MatchCheck> s = EnumSet.allOf(MatchCheck.class);
        for (MatchCheck c : off) s.remove(c);
        return new MatchChecks(s);
    }

    /**
     * Reads the switches from {@code env}: "0"/"NO" turn a check off, "1"/"YES" on (any case); anything else is
     * reported through {@code error} and leaves the check on.
     */
    public static MatchChecks fromEnvironment(Map<String, String> env, Consumer<String> error) {
        EnumSet<MatchCheck> s = EnumSet.allOf(MatchCheck.class);
        for (MatchCheck c : MatchCheck.values()) {
            String v = env.get(c.envVar);
            if (v == null) continue;
            Boolean b = parseBoolean(v);
            if (b == null) {
                error.accept(c.envVar + "=" + v + " is not 0, 1, NO or YES; keeping the check on");
            } else if (!b) {
                s.remove(c);
            }
        }
        return new MatchChecks(s);
    }

    /** "0"/"NO" → false, "1"/"YES" → true (case-insensitive), otherwise null. */
    public static Boolean parseBoolean(String v) {
        if (v.equals("0") || v.equalsIgnoreCase("NO")) return false;
        if (v.equals("1") || v.equalsIgnoreCase("YES")) return true;
        return null;
    }

    public boolean on(MatchCheck c) {
        return enabled.contains(c);
    }

    @Override
    public String toString() {
        return "checks" + enabled;
    }
}
