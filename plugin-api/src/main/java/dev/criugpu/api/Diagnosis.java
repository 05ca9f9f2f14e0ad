package dev.criugpu.api;

import java.util.List;

/**
 * Whether a plugin would be enabled on this host, the reason, and facts worth showing (driver version, backend).
 */
public record Diagnosis(String plugin, boolean enabled, String reason, List<String> details) {
    public Diagnosis {
        details = List.copyOf(details);
    }

    public static Diagnosis enabled(String plugin, String reason, List<String> details) {
        return new Diagnosis(plugin, true, reason, details);
    }

    public static Diagnosis disabled(String plugin, String reason, List<String> details) {
        return new Diagnosis(plugin, false, reason, details);
    }
}
