/*
 * criu-java-gpu shim: what it hands the Java side at bootstrap.
 * Mirrored by dev.criugpu.api.bindings.criu_gpu_services; the layout conformance test checks both agree.
 */
#ifndef CRIU_GPU_SHIM_H
#define CRIU_GPU_SHIM_H

#include <stdint.h>

#define CRIU_GPU_FLAG_FORCED 1u
/* This init runs in the restore probe: a copy of criu forked before any JVM exists in criu, which only decides
 * whether the restore can be carried out and then exits (DESIGN rule 1). */
#define CRIU_GPU_FLAG_RESTORE_CHECK 2u
/* The shim turns criu's exit status 0 into exit_status (below) when criu's main returns: a dump's exit hook may set it. */
#define CRIU_GPU_FLAG_EXIT_STATUS 4u

/* Values of inventory_claim: the order of dev.criugpu.api.InventoryClaim. */
enum criu_gpu_claim {
	CRIU_GPU_CLAIM_LEGACY = 0,
	CRIU_GPU_CLAIM_LISTED = 1,
	CRIU_GPU_CLAIM_NOT_LISTED = 2,
	CRIU_GPU_CLAIM_NONE = 3,
};

struct criu_gpu_services {
	uint32_t size;
	uint32_t stage;
	uint32_t criu_hook_count;
	uint32_t flags;
	int32_t inventory_claim;
	uint32_t hook_mask;
	const char *plugin_name;
	const char *plugin_dir;
	void **hook_table;
	void *print_on_level;
	void *log_get_loglevel;
	void *criu_get_image_dir;
	void *add_inventory_plugin;
	void *set_compel_interrupt_only_mode;
	void *compel_wait_task;
	/*
	 * Set by the Java side in criu's main process before criu forks: the plan (struct gpu_plan_child of
	 * native/plan/gpu_plan.h) the shim's executor runs for RESTORE_EXT_FILE and UPDATE_VMA_MAP in forked children.
	 */
	void *child_plan;
	/*
	 * Memory shared with criu's forked children (MAP_SHARED, mapped before criu forks; this struct lives in it too):
	 * on a restore the plan is written after criu forked its first task, and the children still read it. NULL
	 * where there is none (dump, the probe).
	 */
	void *plan_region;
	uint64_t plan_region_size;
	/*
	 * Set by the Java side in criu's main process (a dump's exit hook): the status criu's process ends with once criu
	 * has finished everything after the plugins' exit (the tree left stopped or resumed, its own cleanup), in place
	 * of a 0 that criu would return; 0 leaves criu's own status alone. A failing criu keeps its status.
	 */
	int32_t exit_status;
	/*
	 * criu_gpu_launch_helper (native/launch/helper_launch.h): the launcher the shim starts the early helper with, for
	 * the helpers the Java side starts later (one launcher for both).
	 */
	void *launch_helper;
	/*
	 * Set by the Java side in the restore probe (from pstree.img): the value the shim writes to ns_last_pid while the
	 * restore's JVM starts, so that its threads take pids below a window none of the image's ids lie in (DESIGN rule
	 * 3). The probe hands it to criu's process; 0 where there is none: the shim parks 1024 below pid_max.
	 */
	int64_t park_last_pid;
};

#endif
