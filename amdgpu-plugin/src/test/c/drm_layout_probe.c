/* Layout probe for libdrm/amdgpu.h and amdgpu_drm.h (see layout_probe.h). Built only where libdrm-dev is. */
#include <stdint.h>
#include <amdgpu.h>
#include <amdgpu_drm.h>
#include "layout_probe.h"

int main(void)
{
	S(amdgpu_bo_alloc_request);
	F(amdgpu_bo_alloc_request, alloc_size);
	F(amdgpu_bo_alloc_request, phys_alignment);
	F(amdgpu_bo_alloc_request, preferred_heap);
	F(amdgpu_bo_alloc_request, flags);

	S(amdgpu_bo_import_result);
	F(amdgpu_bo_import_result, buf_handle);
	F(amdgpu_bo_import_result, alloc_size);

	S(amdgpu_cs_ib_info);
	F(amdgpu_cs_ib_info, flags);
	F(amdgpu_cs_ib_info, ib_mc_address);
	F(amdgpu_cs_ib_info, size);

	S(amdgpu_cs_fence_info);
	F(amdgpu_cs_fence_info, handle);
	F(amdgpu_cs_fence_info, offset);

	S(amdgpu_cs_fence);
	F(amdgpu_cs_fence, context);
	F(amdgpu_cs_fence, ip_type);
	F(amdgpu_cs_fence, ip_instance);
	F(amdgpu_cs_fence, ring);
	F(amdgpu_cs_fence, fence);

	S(amdgpu_cs_request);
	F(amdgpu_cs_request, flags);
	F(amdgpu_cs_request, ip_type);
	F(amdgpu_cs_request, ip_instance);
	F(amdgpu_cs_request, ring);
	F(amdgpu_cs_request, resources);
	F(amdgpu_cs_request, number_of_dependencies);
	F(amdgpu_cs_request, dependencies);
	F(amdgpu_cs_request, number_of_ibs);
	F(amdgpu_cs_request, ibs);
	F(amdgpu_cs_request, seq_no);
	F(amdgpu_cs_request, fence_info);

	S(amdgpu_gpu_info);
	F(amdgpu_gpu_info, asic_id);
	F(amdgpu_gpu_info, chip_rev);
	F(amdgpu_gpu_info, chip_external_rev);
	F(amdgpu_gpu_info, family_id);
	F(amdgpu_gpu_info, ids_flags);
	F(amdgpu_gpu_info, max_engine_clk);
	F(amdgpu_gpu_info, max_memory_clk);
	F(amdgpu_gpu_info, num_shader_engines);
	F(amdgpu_gpu_info, num_shader_arrays_per_engine);
	F(amdgpu_gpu_info, avail_quad_shader_pipes);
	F(amdgpu_gpu_info, max_quad_shader_pipes);
	F(amdgpu_gpu_info, cache_entries_per_quad_pipe);
	F(amdgpu_gpu_info, num_hw_gfx_contexts);
	F(amdgpu_gpu_info, rb_pipes);
	F(amdgpu_gpu_info, enabled_rb_pipes_mask);
	F(amdgpu_gpu_info, gpu_counter_freq);
	F(amdgpu_gpu_info, backend_disable);
	F(amdgpu_gpu_info, mc_arb_ramcfg);
	F(amdgpu_gpu_info, gb_addr_cfg);
	F(amdgpu_gpu_info, gb_tile_mode);
	F(amdgpu_gpu_info, gb_macro_tile_mode);
	F(amdgpu_gpu_info, pa_sc_raster_cfg);
	F(amdgpu_gpu_info, pa_sc_raster_cfg1);
	F(amdgpu_gpu_info, cu_active_number);
	F(amdgpu_gpu_info, cu_ao_mask);
	F(amdgpu_gpu_info, cu_bitmap);
	F(amdgpu_gpu_info, vram_type);
	F(amdgpu_gpu_info, vram_bit_width);
	F(amdgpu_gpu_info, ce_ram_size);
	F(amdgpu_gpu_info, vce_harvest_config);
	F(amdgpu_gpu_info, pci_rev_id);

	C64(AMDGPU_TIMEOUT_INFINITE);
	C32(amdgpu_gpu_va_range_general);
	C32(amdgpu_bo_handle_type_dma_buf_fd);
	C32(AMDGPU_VA_OP_MAP);
	C32(AMDGPU_VA_OP_UNMAP);
	C32(AMDGPU_HW_IP_DMA);
	C32(AMDGPU_GEM_DOMAIN_GTT);
	C32(AMDGPU_FAMILY_AI);
	return 0;
}
