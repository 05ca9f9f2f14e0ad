/*
 * criu-java-gpu shim, the plugin criu dlopen()s, built once per vendor (SHIM_*): a cheap gate, then an embedded JVM
 * (started or joined) whose upcall stubs serve criu's hooks; in criu's forked children, the plan executor (native/plan).
 * Policy lives in Java: the shim holds only what must be decided before a JVM exists or in a forked child. This part:
 * criu's plugin descriptor, the hooks it hands criu (shim.h's SHIM_HOOKS), init and exit.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helper_launch.h"
#include "shim.h"

typedef struct {
	const char *name;
	int (*init)(int stage);
	void (*exit)(int stage, int ret);
	unsigned int version, max_hooks;
	void *hooks[MAX_HOOKS];
} shim_plugin_desc_t;

struct shim_state g;
struct criu_gpu_services private_services;

__attribute__((format(printf, 2, 3))) void shim_log(unsigned int level, const char *fmt, ...)
{
	void (*print)(unsigned int, const char *, ...) = g.svc ? g.svc->print_on_level : NULL;
	const char *prefix = level == LOG_ERROR ? "Error (" SHIM_PLUGIN_NAME "): " : SHIM_PLUGIN_NAME ": ";
	char line[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (print) /* criu 4.0 and newer export it */
		print(level, "%s%s\n", prefix, line);
}

/* The trampoline of a JAVA hook: calls its Java stub with criu's signals blocked; -ENOTSUP when Java does not serve it. */
#define SHIM_DEFINE_JAVA(NAME, PARAMS, ARGS)                                                                           \
	static int t_##NAME PARAMS                                                                                     \
	{                                                                                                              \
		int(*fn_) PARAMS = g.java_ready && getpid() == g.criu_pid ? (void *)g.java_table[NAME] : NULL;         \
		struct criu_signals old_;                                                                              \
		if (!fn_)                                                                                              \
			return -ENOTSUP;                                                                               \
		block_criu_signals(&old_);                                                                             \
		int ret_ = fn_ ARGS;                                                                                   \
		own_fs();                                                                                              \
		restore_criu_signals(&old_);                                                                           \
		return flush_jvm_output(), ret_;                                                                       \
	}
#define SHIM_DEFINE_CHILD(NAME, PARAMS, ARGS)
#define SHIM_DEFINE_SHIM(NAME, PARAMS, ARGS)
#define SHIM_HOOK_DEFINE(ID, NAME, PARAMS, ARGS, KIND) SHIM_DEFINE_##KIND(NAME, PARAMS, ARGS)
SHIM_HOOKS(SHIM_HOOK_DEFINE)

/* Every hook the shim has; criu gets those of this vendor's SHIM_HOOK_MASK, and the shim's own where it has them. */
#define SHIM_HOOK_ENTRY(ID, NAME, PARAMS, ARGS, KIND) [NAME] = (void *)t_##NAME,
static void *const trampolines[MAX_HOOKS] = { SHIM_HOOKS(SHIM_HOOK_ENTRY) };
#define SHIM_OWN_JAVA(ID) 0u
#define SHIM_OWN_CHILD(ID) 0u
#define SHIM_OWN_SHIM(ID) (1u << (ID))
#define SHIM_HOOK_OWN(ID, NAME, PARAMS, ARGS, KIND) | SHIM_OWN_##KIND(ID)
#define SHIM_OWN_HOOKS (0u SHIM_HOOKS(SHIM_HOOK_OWN))

static int shim_init(int stage);
static void shim_exit(int stage, int ret);

__attribute__((visibility("default"))) shim_plugin_desc_t CR_PLUGIN_DESC = {
	.name = SHIM_PLUGIN_NAME,
	.init = shim_init,
	.exit = shim_exit,
	.version = 0x200, /* the newest criu accepts */
	.max_hooks = FALLBACK_HOOK_COUNT,
};

__attribute__((constructor)) static void shim_load(void)
{
	const ElfW(Sym) *ctl = NULL;
	Dl_info self, info;
	void *ctl_addr = dlsym(RTLD_DEFAULT, "cr_plugin_ctl");

	/* criu's cr_plugin_ctl holds one 16-byte list head plus one per hook: its size tells criu's hook count */
	if (ctl_addr && dladdr1(ctl_addr, &info, (void **)&ctl, RTLD_DL_SYMENT) && ctl && ctl->st_size >= 32)
		g.criu_hook_count = (int)(ctl->st_size / 16) - 1;
	/* JVM threads may run our code after criu dlclose()s plugins: stay mapped. The plugin dir is kept as criu named
	 * it (made absolute), unresolved: the trust checks walk its symlinks as given. */
	if (dladdr((void *)&CR_PLUGIN_DESC, &self) && self.dli_fname) {
		char cwd[PATH_MAX] = "";
		g.pinned = dlopen(self.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE) != NULL;
		if (self.dli_fname[0] == '/' || getcwd(cwd, sizeof(cwd)))
			snprintf(g.plugin_dir, sizeof(g.plugin_dir), "%s%s%s", cwd, cwd[0] ? "/" : "", self.dli_fname);
		*(strrchr(g.plugin_dir, '/') ?: g.plugin_dir) = '\0';
	}
	int count = g.criu_hook_count > 0 ? g.criu_hook_count : FALLBACK_HOOK_COUNT;
	CR_PLUGIN_DESC.max_hooks = count > MAX_HOOKS ? MAX_HOOKS : count;
	for (unsigned int i = 0; i < CR_PLUGIN_DESC.max_hooks; i++) /* the shim's own: POST_FORKING (DESIGN rule 1) */
		if ((SHIM_HOOK_MASK | SHIM_OWN_HOOKS) & (1u << i))
			CR_PLUGIN_DESC.hooks[i] = trampolines[i];
}

/* Logs why and leaves criu, which chains hooks after init returns, nothing to call. */
#define DISABLE(...) (g.enabled = false, memset(CR_PLUGIN_DESC.hooks, 0, sizeof(CR_PLUGIN_DESC.hooks)), \
		      shim_log(LOG_INFO, "disabled: " __VA_ARGS__), 0)

/* What inventory.img says about us (DESIGN rule 7); claims our name so criu does not miss it. */
static enum criu_gpu_claim claim_inventory(void)
{
	bool (*check)(const char *, size_t) = dlsym(RTLD_DEFAULT, "check_and_remove_inventory_plugin");

	if (!check)
		return CRIU_GPU_CLAIM_LEGACY; /* criu < 4.1 records no plugins */
	if (!check(SHIM_PLUGIN_NAME, strlen(SHIM_PLUGIN_NAME)))
		return CRIU_GPU_CLAIM_NOT_LISTED;
	/* true also for an image without the plugins field; a name nobody uses tells which it is */
	if (check("\x01", 1))
		return CRIU_GPU_CLAIM_LEGACY;
#ifdef SHIM_FORMAT_CLAIM
	/* a dump in this plugin's own image format names it too, so that criu refuses its restore without us */
	check(SHIM_FORMAT_CLAIM, strlen(SHIM_FORMAT_CLAIM));
#endif
	return CRIU_GPU_CLAIM_LISTED;
}

/*
 * criu ignores what a plugin's exit hook returns, and calls it before it leaves the tree stopped (-s) or resumes it and
 * before the rest of its cleanup, so a plugin that must fail a dump that criu completed (a task criu leaves alive that
 * could not be returned: DESIGN rule 12) cannot end criu there. It sets exit_status instead, and this handler, run by
 * exit() once criu's main has returned (a dump ends that way, the command line's and `criu swrk`'s alike), turns
 * criu's 0 into that status. criu registers no handler of its own; stdio is flushed here as exit() would.
 */
static void exit_status_handler(int status, void *arg)
{
	(void)arg;
	if (status != 0 || !g.svc || getpid() != g.criu_pid || g.svc->exit_status == 0)
		return;
	fflush(NULL);
	_exit(g.svc->exit_status);
}

static int shim_init(int stage)
{
	const char *force = secure_getenv("CRIU_GPU_PLUGIN_FORCE");
	bool forced = force && !strcmp(force, "1"), hw = access(SHIM_HW_PATH, F_OK) == 0;
	struct criu_gpu_services *shared = NULL;

	memset(g.java_table, 0, sizeof(g.java_table));
	g.enabled = g.java_ready = g.java_deferred = false;
	g.plan_state = NULL;
	g.criu_pid = getpid();
	g.svc = &private_services;
	*g.svc = (struct criu_gpu_services){
		.size = sizeof(struct criu_gpu_services),
		.stage = (uint32_t)stage,
		.criu_hook_count = (uint32_t)(g.criu_hook_count > 0 ? g.criu_hook_count : 0),
		.flags = forced ? CRIU_GPU_FLAG_FORCED : 0,
		.inventory_claim = stage == STAGE_RESTORE ? claim_inventory() : CRIU_GPU_CLAIM_NONE,
		.hook_mask = SHIM_HOOK_MASK,
		.plugin_name = SHIM_PLUGIN_NAME,
		.plugin_dir = g.plugin_dir,
		.hook_table = g.java_table,
		.print_on_level = dlsym(RTLD_DEFAULT, "print_on_level"),
		.log_get_loglevel = dlsym(RTLD_DEFAULT, "log_get_loglevel"),
		.criu_get_image_dir = dlsym(RTLD_DEFAULT, "criu_get_image_dir"),
		.add_inventory_plugin = dlsym(RTLD_DEFAULT, "add_inventory_plugin"),
		.set_compel_interrupt_only_mode = dlsym(RTLD_DEFAULT, "set_compel_interrupt_only_mode"),
		.compel_wait_task = dlsym(RTLD_DEFAULT, "compel_wait_task"),
		.launch_helper = (void *)criu_gpu_launch_helper,
	};
	bool listed = g.listed = g.svc->inventory_claim == CRIU_GPU_CLAIM_LISTED;

	if (stage == STAGE_PRE_DUMP)
		return DISABLE("pre-dump saves no device state");
	if (g.svc->inventory_claim == CRIU_GPU_CLAIM_NOT_LISTED && !forced)
		return DISABLE("the image holds no %s state", SHIM_HW_WHAT);
	if (!hw && !forced && !listed)
		return DISABLE("no %s (%s absent)", SHIM_HW_NAME, SHIM_HW_PATH);
	if (!hw && !forced) {
		shim_log(LOG_ERROR, "image holds %s state; no %s here (%s absent)", SHIM_HW_WHAT, SHIM_HW_NAME, SHIM_HW_PATH);
		return -ENODEV;
	}
	g.enabled = true;
	shim_log(LOG_INFO, "enabled%s", forced ? " (forced by CRIU_GPU_PLUGIN_FORCE=1)" : "");
	/* once per process, and only while this code stays mapped after criu dlclose()s its plugins */
	if (stage == STAGE_DUMP && g.pinned && !g.exit_handler)
		g.exit_handler = on_exit(exit_status_handler, NULL) == 0;
	if (stage == STAGE_DUMP && g.exit_handler)
		g.svc->flags |= CRIU_GPU_FLAG_EXIT_STATUS;
	if (stage == STAGE_RESTORE && (shared = shared_services())) /* only a restore that needs us maps it */
		g.svc = memcpy(shared, &private_services, sizeof(private_services));
	int rc;
	if (stage == STAGE_RESTORE && shared && CR_PLUGIN_DESC.hooks[POST_FORKING]) {
		/* a restore the plugin cannot carry out (missing GPU, bad device map) is refused now, before criu forks
		 * anything, with images and pids untouched (DESIGN rule 3); criu's JVM starts after the fork (rule 1) */
		if ((rc = probe_restore()) == 0)
			return defer_java(shared), 0;
	} else {
		if (stage == STAGE_RESTORE)
			shim_log(LOG_WARN, "%s: the JVM starts before criu forks the restored tasks, whose own forks (namespaces, "
				 "helpers) can then hang on a lock a JVM thread held (criu 4.2 or newer has POST_FORKING)",
				 shared ? "this criu has no POST_FORKING hook" : "no shared memory for the plan");
		rc = start_java(stage == STAGE_RESTORE, stage == STAGE_DUMP ? launch_helper() : NULL);
	}
	if (rc == -ECANCELED || (rc && listed))
		return rc; /* the Java side refused, or the image needs us and we cannot run */
	return rc ? DISABLE("the JVM did not start") : 0;
}

static void shim_exit(int stage, int ret)
{
	void (*fn)(int, int) = (void (*)(int, int))g.java_table[CRIU_GPU_EXIT_SLOT];
	struct criu_signals old;

	if (!g.java_ready || !fn || getpid() != g.criu_pid)
		return;
	block_criu_signals(&old);
	fn(stage, ret);
	own_fs();
	restore_criu_signals(&old);
	flush_jvm_output();
}
