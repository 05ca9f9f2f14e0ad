package dev.criugpu.amdgpu.topology;

/**
 * The KFD topology node properties the plugin reads, saves in its image and compares at restore. {@link #key}
 * is the name in {@code nodes/N/properties} and in the image's {@code kfd_device_entry} ({@code VRAM_*} come from
 * {@code nodes/N/mem_banks} instead). {@link #rule} says how a checkpointed node's value must relate to a local
 * node's value for the two GPUs to match.
 */
public enum NodeProperty {
    CPU_CORES_COUNT("cpu_cores_count", Rule.IGNORED, null),
    SIMD_COUNT("simd_count", Rule.EQUAL, null),
    MEM_BANKS_COUNT("mem_banks_count", Rule.EQUAL, null),
    CACHES_COUNT("caches_count", Rule.AT_MOST, MatchCheck.CACHES_COUNT),
    IO_LINKS_COUNT("io_links_count", Rule.EQUAL, null),
    MAX_WAVES_PER_SIMD("max_waves_per_simd", Rule.EQUAL, null),
    LDS_SIZE_IN_KB("lds_size_in_kb", Rule.EQUAL, null),
    NUM_GWS("num_gws", Rule.AT_MOST, MatchCheck.NUM_GWS),
    WAVE_FRONT_SIZE("wave_front_size", Rule.EQUAL, null),
    ARRAY_COUNT("array_count", Rule.EQUAL, null),
    SIMD_ARRAYS_PER_ENGINE("simd_arrays_per_engine", Rule.EQUAL, null),
    CU_PER_SIMD_ARRAY("cu_per_simd_array", Rule.EQUAL, null),
    SIMD_PER_CU("simd_per_cu", Rule.EQUAL, null),
    MAX_SLOTS_SCRATCH_CU("max_slots_scratch_cu", Rule.EQUAL, null),
    VENDOR_ID("vendor_id", Rule.EQUAL, null),
    DEVICE_ID("device_id", Rule.EQUAL, null),
    DOMAIN("domain", Rule.IGNORED, null),
    DRM_RENDER_MINOR("drm_render_minor", Rule.IGNORED, null),
    HIVE_ID("hive_id", Rule.IGNORED, null),
    NUM_SDMA_ENGINES("num_sdma_engines", Rule.EQUAL, null),
    NUM_SDMA_XGMI_ENGINES("num_sdma_xgmi_engines", Rule.EQUAL, null),
    NUM_SDMA_QUEUES_PER_ENGINE("num_sdma_queues_per_engine", Rule.EQUAL, null),
    NUM_CP_QUEUES("num_cp_queues", Rule.EQUAL, null),
    FW_VERSION("fw_version", Rule.AT_MOST, MatchCheck.FW_VERSION),
    CAPABILITY("capability", Rule.EQUAL, MatchCheck.CAPABILITY),
    SDMA_FW_VERSION("sdma_fw_version", Rule.AT_MOST, MatchCheck.SDMA_FW_VERSION),
    VRAM_PUBLIC("vram_public", Rule.EQUAL, null),
    VRAM_SIZE("vram_size", Rule.AT_MOST, MatchCheck.VRAM_SIZE);

    /** How a checkpointed value relates to a local one. */
    public enum Rule {
        /** Not compared. */
        IGNORED,
        /** Must be equal. */
        EQUAL,
        /** Checkpointed value ≤ local value. */
        AT_MOST
    }

    public final String key;
    public final Rule rule;
    /** The switch that turns this comparison off, or null when it is always made. */
    public final MatchCheck check;

    NodeProperty(String key, Rule rule, MatchCheck check) {
        this.key = key;
        this.rule = rule;
        this.check = check;
    }

    /** Read from {@code nodes/N/properties} (the VRAM ones come from mem_banks). */
    public boolean inPropertiesFile() {
        return this != VRAM_PUBLIC && this != VRAM_SIZE;
    }

    public static NodeProperty byKey(String key) {
        for (NodeProperty p : values()) {
            if (p.key.equals(key)) return p;
        }
        return null;
    }
}
