/*
 * The shim's parts, one job each: shim_main.c (criu's plugin descriptor, its hooks, init and exit), shim_jvm.c (the JVM
 * in criu: its options, start and Bootstrap, the early helper), shim_trust.c (what root may load), shim_restore.c (the
 * restore probe, the area shared with criu's children and their plan). Internal to the plugin: nothing here is exported.
 */
#ifndef SHIM_H
#define SHIM_H

#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include "criu_gpu_shim.h"

/* Facts from criu-plugin.h (not included: the shim builds without libcriu-dev); SHIM_* come from the Makefile. */
enum { STAGE_DUMP = 0, STAGE_PRE_DUMP = 1, STAGE_RESTORE = 2, LOG_ERROR = 1, LOG_WARN = 2, LOG_INFO = 3, LOG_DEBUG = 4 };

/*
 * The hooks the shim hands criu: SHIM_HOOKS(X), X(criu's id, name, C parameters, arguments, kind), written by the
 * build from the project's one list of them, dev.criugpu.api.Hook. JAVA: served by the Java stub in criu's main
 * process (shim_main.c makes the trampoline); CHILD: called in criu's forked children, served from the plan Java wrote
 * (shim_restore.c, DESIGN rule 1); SHIM: the shim's own (shim_restore.c). criu gets the JAVA and CHILD hooks of this
 * vendor's SHIM_HOOK_MASK, and the SHIM ones where it has them.
 */
#include "shim_hooks.h"

#define SHIM_HOOK_ID(ID, NAME, PARAMS, ARGS, KIND) NAME = ID,
enum { SHIM_HOOKS(SHIM_HOOK_ID) MAX_HOOKS = SHIM_HOOK_SLOTS, FALLBACK_HOOK_COUNT = 12 /* criu 4.0 */ };
/* Java's table (dev.criugpu.api.Hook.TABLE_SLOTS): one slot per hook id, then exit */
#define CRIU_GPU_TABLE_SLOTS (SHIM_HOOK_SLOTS + 1)
#define CRIU_GPU_EXIT_SLOT SHIM_HOOK_SLOTS
#define SHIM_HOOK_DECLARE(ID, NAME, PARAMS, ARGS, KIND) SHIM_DECLARE_##KIND(NAME, PARAMS)
#define SHIM_DECLARE_JAVA(NAME, PARAMS)
#define SHIM_DECLARE_CHILD(NAME, PARAMS) int t_##NAME PARAMS;
#define SHIM_DECLARE_SHIM(NAME, PARAMS) int t_##NAME PARAMS;
SHIM_HOOKS(SHIM_HOOK_DECLARE)

struct shim_state {
	bool enabled, java_ready; /* the gate said yes; Bootstrap filled the hook table */
	bool java_deferred, listed; /* a restore's JVM starts at POST_FORKING; inventory.img lists this plugin */
	bool pinned, exit_handler; /* this library is never unloaded; exit_status_handler is registered */
	pid_t criu_pid;           /* criu's main process and thread; any other pid is a forked child */
	int criu_hook_count;
	struct criu_gpu_services *svc; /* private_services, or on a restore the head of the area shared with children */
	uint32_t *plan_state;          /* in that area: PLAN_*, for children waiting on criu's JVM */
	void *java_table[CRIU_GPU_TABLE_SLOTS];
	char plugin_dir[PATH_MAX];
};
extern struct shim_state g;
extern struct criu_gpu_services private_services;

__attribute__((format(printf, 2, 3))) void shim_log(unsigned int level, const char *fmt, ...);

/* shim_jvm.c: criu's signals blocked on its thread while Java runs there; its SIGCHLD handler kept */
struct criu_signals {
	sigset_t mask;
	struct sigaction chld;
};
void block_criu_signals(struct criu_signals *saved);
void restore_criu_signals(const struct criu_signals *saved);
void own_fs(void);
void flush_jvm_output(void);
double ms_since(struct timespec *t);
const char *launch_helper(void);
int start_java(bool park, const char *helper);

/* shim_trust.c */
int open_trusted(const char *path, char *why, size_t len);
int check_trusted(const char *path, char *why, size_t len);

/* shim_restore.c */
struct criu_gpu_services *shared_services(void);
int probe_restore(void);
void defer_java(struct criu_gpu_services *shared);

#endif
