package dev.criugpu.amdgpu.topology;

/** The restore-time checks a user may switch off with an environment variable (all on by default). */
public enum MatchCheck {
    FW_VERSION("KFD_FW_VER_CHECK"),
    SDMA_FW_VERSION("KFD_SDMA_FW_VER_CHECK"),
    CACHES_COUNT("KFD_CACHES_COUNT_CHECK"),
    NUM_GWS("KFD_NUM_GWS_CHECK"),
    VRAM_SIZE("KFD_VRAM_SIZE_CHECK"),
    NUMA("KFD_NUMA_CHECK"),
    CAPABILITY("KFD_CAPABILITY_CHECK");

    public final String envVar;

    MatchCheck(String envVar) {
        this.envVar = envVar;
    }
}
