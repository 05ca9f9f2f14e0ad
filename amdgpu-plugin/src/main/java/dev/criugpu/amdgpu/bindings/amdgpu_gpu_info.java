package dev.criugpu.amdgpu.bindings;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * {@code struct amdgpu_gpu_info} from {@code libdrm/amdgpu.h}, in the shape jextract generates. Result of {@code amdgpu_query_gpu_info}; the plugin reads {@code family_id}.
 * Checked field by field against the real header by {@code LayoutConformanceTest}.
 */
public final class amdgpu_gpu_info {
    private static final GroupLayout $LAYOUT = MemoryLayout.structLayout(
            JAVA_INT.withName("asic_id"),
            JAVA_INT.withName("chip_rev"),
            JAVA_INT.withName("chip_external_rev"),
            JAVA_INT.withName("family_id"),
            JAVA_LONG.withName("ids_flags"),
            JAVA_LONG.withName("max_engine_clk"),
            JAVA_LONG.withName("max_memory_clk"),
            JAVA_INT.withName("num_shader_engines"),
            JAVA_INT.withName("num_shader_arrays_per_engine"),
            JAVA_INT.withName("avail_quad_shader_pipes"),
            JAVA_INT.withName("max_quad_shader_pipes"),
            JAVA_INT.withName("cache_entries_per_quad_pipe"),
            JAVA_INT.withName("num_hw_gfx_contexts"),
            JAVA_INT.withName("rb_pipes"),
            JAVA_INT.withName("enabled_rb_pipes_mask"),
            JAVA_INT.withName("gpu_counter_freq"),
            MemoryLayout.sequenceLayout(4, JAVA_INT).withName("backend_disable"),
            JAVA_INT.withName("mc_arb_ramcfg"),
            JAVA_INT.withName("gb_addr_cfg"),
            MemoryLayout.sequenceLayout(32, JAVA_INT).withName("gb_tile_mode"),
            MemoryLayout.sequenceLayout(16, JAVA_INT).withName("gb_macro_tile_mode"),
            MemoryLayout.sequenceLayout(4, JAVA_INT).withName("pa_sc_raster_cfg"),
            MemoryLayout.sequenceLayout(4, JAVA_INT).withName("pa_sc_raster_cfg1"),
            JAVA_INT.withName("cu_active_number"),
            JAVA_INT.withName("cu_ao_mask"),
            MemoryLayout.sequenceLayout(4, MemoryLayout.sequenceLayout(4, JAVA_INT)).withName("cu_bitmap"),
            JAVA_INT.withName("vram_type"),
            JAVA_INT.withName("vram_bit_width"),
            JAVA_INT.withName("ce_ram_size"),
            JAVA_INT.withName("vce_harvest_config"),
            JAVA_INT.withName("pci_rev_id")
    ).withName("amdgpu_gpu_info");

    private amdgpu_gpu_info() {
    }

    public static GroupLayout layout() { return $LAYOUT; }

    public static long sizeof() { return $LAYOUT.byteSize(); }

    /** A zeroed struct. */
    public static MemorySegment allocate(SegmentAllocator allocator) { return allocator.allocate($LAYOUT); }

    /** A zeroed array of {@code count} structs. */
    public static MemorySegment allocateArray(long count, SegmentAllocator allocator) {
        return allocator.allocate(MemoryLayout.sequenceLayout(count, $LAYOUT));
    }

    /** Element {@code index} of an array of these structs. */
    public static MemorySegment asSlice(MemorySegment array, long index) {
        return array.asSlice(index * sizeof(), sizeof());
    }

    /** Views native memory at {@code address} as one struct. */
    public static MemorySegment reinterpret(MemorySegment address) { return address.reinterpret(sizeof()); }

    private static final long asic_id$OFFSET = 0;

    public static long asic_id$offset() { return asic_id$OFFSET; }

    public static int asic_id(MemorySegment struct) { return struct.get(JAVA_INT, asic_id$OFFSET); }

    public static void asic_id(MemorySegment struct, int value) { struct.set(JAVA_INT, asic_id$OFFSET, value); }

    private static final long chip_rev$OFFSET = 4;

    public static long chip_rev$offset() { return chip_rev$OFFSET; }

    public static int chip_rev(MemorySegment struct) { return struct.get(JAVA_INT, chip_rev$OFFSET); }

    public static void chip_rev(MemorySegment struct, int value) { struct.set(JAVA_INT, chip_rev$OFFSET, value); }

    private static final long chip_external_rev$OFFSET = 8;

    public static long chip_external_rev$offset() { return chip_external_rev$OFFSET; }

    public static int chip_external_rev(MemorySegment struct) { return struct.get(JAVA_INT, chip_external_rev$OFFSET); }

    public static void chip_external_rev(MemorySegment struct, int value) { struct.set(JAVA_INT, chip_external_rev$OFFSET, value); }

    private static final long family_id$OFFSET = 12;

    public static long family_id$offset() { return family_id$OFFSET; }

    public static int family_id(MemorySegment struct) { return struct.get(JAVA_INT, family_id$OFFSET); }

    public static void family_id(MemorySegment struct, int value) { struct.set(JAVA_INT, family_id$OFFSET, value); }

    private static final long ids_flags$OFFSET = 16;

    public static long ids_flags$offset() { return ids_flags$OFFSET; }

    public static long ids_flags(MemorySegment struct) { return struct.get(JAVA_LONG, ids_flags$OFFSET); }

    public static void ids_flags(MemorySegment struct, long value) { struct.set(JAVA_LONG, ids_flags$OFFSET, value); }

    private static final long max_engine_clk$OFFSET = 24;

    public static long max_engine_clk$offset() { return max_engine_clk$OFFSET; }

    public static long max_engine_clk(MemorySegment struct) { return struct.get(JAVA_LONG, max_engine_clk$OFFSET); }

    public static void max_engine_clk(MemorySegment struct, long value) { struct.set(JAVA_LONG, max_engine_clk$OFFSET, value); }

    private static final long max_memory_clk$OFFSET = 32;

    public static long max_memory_clk$offset() { return max_memory_clk$OFFSET; }

    public static long max_memory_clk(MemorySegment struct) { return struct.get(JAVA_LONG, max_memory_clk$OFFSET); }

    public static void max_memory_clk(MemorySegment struct, long value) { struct.set(JAVA_LONG, max_memory_clk$OFFSET, value); }

    private static final long num_shader_engines$OFFSET = 40;

    public static long num_shader_engines$offset() { return num_shader_engines$OFFSET; }

    public static int num_shader_engines(MemorySegment struct) { return struct.get(JAVA_INT, num_shader_engines$OFFSET); }

    public static void num_shader_engines(MemorySegment struct, int value) { struct.set(JAVA_INT, num_shader_engines$OFFSET, value); }

    private static final long num_shader_arrays_per_engine$OFFSET = 44;

    public static long num_shader_arrays_per_engine$offset() { return num_shader_arrays_per_engine$OFFSET; }

    public static int num_shader_arrays_per_engine(MemorySegment struct) { return struct.get(JAVA_INT, num_shader_arrays_per_engine$OFFSET); }

    public static void num_shader_arrays_per_engine(MemorySegment struct, int value) { struct.set(JAVA_INT, num_shader_arrays_per_engine$OFFSET, value); }

    private static final long avail_quad_shader_pipes$OFFSET = 48;

    public static long avail_quad_shader_pipes$offset() { return avail_quad_shader_pipes$OFFSET; }

    public static int avail_quad_shader_pipes(MemorySegment struct) { return struct.get(JAVA_INT, avail_quad_shader_pipes$OFFSET); }

    public static void avail_quad_shader_pipes(MemorySegment struct, int value) { struct.set(JAVA_INT, avail_quad_shader_pipes$OFFSET, value); }

    private static final long max_quad_shader_pipes$OFFSET = 52;

    public static long max_quad_shader_pipes$offset() { return max_quad_shader_pipes$OFFSET; }

    public static int max_quad_shader_pipes(MemorySegment struct) { return struct.get(JAVA_INT, max_quad_shader_pipes$OFFSET); }

    public static void max_quad_shader_pipes(MemorySegment struct, int value) { struct.set(JAVA_INT, max_quad_shader_pipes$OFFSET, value); }

    private static final long cache_entries_per_quad_pipe$OFFSET = 56;

    public static long cache_entries_per_quad_pipe$offset() { return cache_entries_per_quad_pipe$OFFSET; }

    public static int cache_entries_per_quad_pipe(MemorySegment struct) { return struct.get(JAVA_INT, cache_entries_per_quad_pipe$OFFSET); }

    public static void cache_entries_per_quad_pipe(MemorySegment struct, int value) { struct.set(JAVA_INT, cache_entries_per_quad_pipe$OFFSET, value); }

    private static final long num_hw_gfx_contexts$OFFSET = 60;

    public static long num_hw_gfx_contexts$offset() { return num_hw_gfx_contexts$OFFSET; }

    public static int num_hw_gfx_contexts(MemorySegment struct) { return struct.get(JAVA_INT, num_hw_gfx_contexts$OFFSET); }

    public static void num_hw_gfx_contexts(MemorySegment struct, int value) { struct.set(JAVA_INT, num_hw_gfx_contexts$OFFSET, value); }

    private static final long rb_pipes$OFFSET = 64;

    public static long rb_pipes$offset() { return rb_pipes$OFFSET; }

    public static int rb_pipes(MemorySegment struct) { return struct.get(JAVA_INT, rb_pipes$OFFSET); }

    public static void rb_pipes(MemorySegment struct, int value) { struct.set(JAVA_INT, rb_pipes$OFFSET, value); }

    private static final long enabled_rb_pipes_mask$OFFSET = 68;

    public static long enabled_rb_pipes_mask$offset() { return enabled_rb_pipes_mask$OFFSET; }

    public static int enabled_rb_pipes_mask(MemorySegment struct) { return struct.get(JAVA_INT, enabled_rb_pipes_mask$OFFSET); }

    public static void enabled_rb_pipes_mask(MemorySegment struct, int value) { struct.set(JAVA_INT, enabled_rb_pipes_mask$OFFSET, value); }

    private static final long gpu_counter_freq$OFFSET = 72;

    public static long gpu_counter_freq$offset() { return gpu_counter_freq$OFFSET; }

    public static int gpu_counter_freq(MemorySegment struct) { return struct.get(JAVA_INT, gpu_counter_freq$OFFSET); }

    public static void gpu_counter_freq(MemorySegment struct, int value) { struct.set(JAVA_INT, gpu_counter_freq$OFFSET, value); }

    private static final long backend_disable$OFFSET = 76;
    private static final long backend_disable$SIZE = 16;

    public static long backend_disable$offset() { return backend_disable$OFFSET; }

    /** The backend_disable array (4 of u32) as a slice of {@code struct}. */
    public static MemorySegment backend_disable(MemorySegment struct) { return struct.asSlice(backend_disable$OFFSET, backend_disable$SIZE); }

    private static final long mc_arb_ramcfg$OFFSET = 92;

    public static long mc_arb_ramcfg$offset() { return mc_arb_ramcfg$OFFSET; }

    public static int mc_arb_ramcfg(MemorySegment struct) { return struct.get(JAVA_INT, mc_arb_ramcfg$OFFSET); }

    public static void mc_arb_ramcfg(MemorySegment struct, int value) { struct.set(JAVA_INT, mc_arb_ramcfg$OFFSET, value); }

    private static final long gb_addr_cfg$OFFSET = 96;

    public static long gb_addr_cfg$offset() { return gb_addr_cfg$OFFSET; }

    public static int gb_addr_cfg(MemorySegment struct) { return struct.get(JAVA_INT, gb_addr_cfg$OFFSET); }

    public static void gb_addr_cfg(MemorySegment struct, int value) { struct.set(JAVA_INT, gb_addr_cfg$OFFSET, value); }

    private static final long gb_tile_mode$OFFSET = 100;
    private static final long gb_tile_mode$SIZE = 128;

    public static long gb_tile_mode$offset() { return gb_tile_mode$OFFSET; }

    /** The gb_tile_mode array (32 of u32) as a slice of {@code struct}. */
    public static MemorySegment gb_tile_mode(MemorySegment struct) { return struct.asSlice(gb_tile_mode$OFFSET, gb_tile_mode$SIZE); }

    private static final long gb_macro_tile_mode$OFFSET = 228;
    private static final long gb_macro_tile_mode$SIZE = 64;

    public static long gb_macro_tile_mode$offset() { return gb_macro_tile_mode$OFFSET; }

    /** The gb_macro_tile_mode array (16 of u32) as a slice of {@code struct}. */
    public static MemorySegment gb_macro_tile_mode(MemorySegment struct) { return struct.asSlice(gb_macro_tile_mode$OFFSET, gb_macro_tile_mode$SIZE); }

    private static final long pa_sc_raster_cfg$OFFSET = 292;
    private static final long pa_sc_raster_cfg$SIZE = 16;

    public static long pa_sc_raster_cfg$offset() { return pa_sc_raster_cfg$OFFSET; }

    /** The pa_sc_raster_cfg array (4 of u32) as a slice of {@code struct}. */
    public static MemorySegment pa_sc_raster_cfg(MemorySegment struct) { return struct.asSlice(pa_sc_raster_cfg$OFFSET, pa_sc_raster_cfg$SIZE); }

    private static final long pa_sc_raster_cfg1$OFFSET = 308;
    private static final long pa_sc_raster_cfg1$SIZE = 16;

    public static long pa_sc_raster_cfg1$offset() { return pa_sc_raster_cfg1$OFFSET; }

    /** The pa_sc_raster_cfg1 array (4 of u32) as a slice of {@code struct}. */
    public static MemorySegment pa_sc_raster_cfg1(MemorySegment struct) { return struct.asSlice(pa_sc_raster_cfg1$OFFSET, pa_sc_raster_cfg1$SIZE); }

    private static final long cu_active_number$OFFSET = 324;

    public static long cu_active_number$offset() { return cu_active_number$OFFSET; }

    public static int cu_active_number(MemorySegment struct) { return struct.get(JAVA_INT, cu_active_number$OFFSET); }

    public static void cu_active_number(MemorySegment struct, int value) { struct.set(JAVA_INT, cu_active_number$OFFSET, value); }

    private static final long cu_ao_mask$OFFSET = 328;

    public static long cu_ao_mask$offset() { return cu_ao_mask$OFFSET; }

    public static int cu_ao_mask(MemorySegment struct) { return struct.get(JAVA_INT, cu_ao_mask$OFFSET); }

    public static void cu_ao_mask(MemorySegment struct, int value) { struct.set(JAVA_INT, cu_ao_mask$OFFSET, value); }

    private static final long cu_bitmap$OFFSET = 332;
    private static final long cu_bitmap$SIZE = 64;

    public static long cu_bitmap$offset() { return cu_bitmap$OFFSET; }

    /** The cu_bitmap array (4x4 of u32) as a slice of {@code struct}. */
    public static MemorySegment cu_bitmap(MemorySegment struct) { return struct.asSlice(cu_bitmap$OFFSET, cu_bitmap$SIZE); }

    private static final long vram_type$OFFSET = 396;

    public static long vram_type$offset() { return vram_type$OFFSET; }

    public static int vram_type(MemorySegment struct) { return struct.get(JAVA_INT, vram_type$OFFSET); }

    public static void vram_type(MemorySegment struct, int value) { struct.set(JAVA_INT, vram_type$OFFSET, value); }

    private static final long vram_bit_width$OFFSET = 400;

    public static long vram_bit_width$offset() { return vram_bit_width$OFFSET; }

    public static int vram_bit_width(MemorySegment struct) { return struct.get(JAVA_INT, vram_bit_width$OFFSET); }

    public static void vram_bit_width(MemorySegment struct, int value) { struct.set(JAVA_INT, vram_bit_width$OFFSET, value); }

    private static final long ce_ram_size$OFFSET = 404;

    public static long ce_ram_size$offset() { return ce_ram_size$OFFSET; }

    public static int ce_ram_size(MemorySegment struct) { return struct.get(JAVA_INT, ce_ram_size$OFFSET); }

    public static void ce_ram_size(MemorySegment struct, int value) { struct.set(JAVA_INT, ce_ram_size$OFFSET, value); }

    private static final long vce_harvest_config$OFFSET = 408;

    public static long vce_harvest_config$offset() { return vce_harvest_config$OFFSET; }

    public static int vce_harvest_config(MemorySegment struct) { return struct.get(JAVA_INT, vce_harvest_config$OFFSET); }

    public static void vce_harvest_config(MemorySegment struct, int value) { struct.set(JAVA_INT, vce_harvest_config$OFFSET, value); }

    private static final long pci_rev_id$OFFSET = 412;

    public static long pci_rev_id$offset() { return pci_rev_id$OFFSET; }

    public static int pci_rev_id(MemorySegment struct) { return struct.get(JAVA_INT, pci_rev_id$OFFSET); }

    public static void pci_rev_id(MemorySegment struct, int value) { struct.set(JAVA_INT, pci_rev_id$OFFSET, value); }
}
