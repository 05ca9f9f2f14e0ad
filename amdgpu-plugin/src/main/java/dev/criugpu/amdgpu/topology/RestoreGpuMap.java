package dev.criugpu.amdgpu.topology;

import java.util.Map;
import java.util.Optional;
import java.util.function.Consumer;

/** Decides the restore GPU map: the {@code KFD_GPU_MAP} override when set, else {@link GpuMatcher}. */
public final class RestoreGpuMap {
    private RestoreGpuMap() {
    }

    public static GpuMapping decide(Topology checkpointed, Topology local, Map<String, String> env, Consumer<String> error) {
        MatchChecks checks = MatchChecks.fromEnvironment(env, error);
        Optional<GpuMapOverride> override = GpuMapOverride.fromEnvironment(env);
        return override.isPresent()
                ? override.get().apply(checkpointed, local, checks)
                : GpuMatcher.match(checkpointed, local, checks);
    }
}
