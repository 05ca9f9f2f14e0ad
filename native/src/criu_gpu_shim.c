/*
 * criu-java-gpu shim: the plugin criu dlopen()s. Built once per vendor (SHIM_PLUGIN_NAME, SHIM_HOOK_MASK,
 * SHIM_HW_PATH). It decides cheaply whether the plugin has anything to do, starts (or joins) an embedded JVM
 * only then, and forwards criu's hooks to upcall stubs the Java side writes into hook_table.
 * Policy lives in Java; this file only holds what must be decided before a JVM exists or in a forked child.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <jni.h>
#include <limits.h>
#include <link.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "criu_gpu_shim.h"

#ifndef SHIM_PLUGIN_NAME
#error "SHIM_PLUGIN_NAME must be defined"
#endif
#ifndef SHIM_HOOK_MASK
#error "SHIM_HOOK_MASK must be defined"
#endif
#ifndef SHIM_HW_PATH
#error "SHIM_HW_PATH must be defined"
#endif
#ifndef SHIM_HW_WHAT
#error "SHIM_HW_WHAT (the state the plugin saves, e.g. CUDA) must be defined"
#endif
#ifndef SHIM_HW_NAME
#error "SHIM_HW_NAME (the hardware, e.g. NVIDIA GPU) must be defined"
#endif

/* Facts from criu-plugin.h (not included: the shim builds without libcriu-dev). */
enum { STAGE_DUMP = 0, STAGE_PRE_DUMP = 1, STAGE_RESTORE = 2 };
enum {
	HOOK_DUMP_UNIX_SK = 0,
	HOOK_RESTORE_UNIX_SK = 1,
	HOOK_DUMP_EXT_FILE = 2,
	HOOK_RESTORE_EXT_FILE = 3,
	HOOK_DUMP_EXT_MOUNT = 4,
	HOOK_RESTORE_EXT_MOUNT = 5,
	HOOK_DUMP_EXT_LINK = 6,
	HOOK_HANDLE_DEVICE_VMA = 7,
	HOOK_UPDATE_VMA_MAP = 8,
	HOOK_RESUME_DEVICES_LATE = 9,
	HOOK_PAUSE_DEVICES = 10,
	HOOK_CHECKPOINT_DEVICES = 11,
	HOOK_POST_FORKING = 12,
	HOOK_RESTORE_INIT = 13,
	HOOK_DUMP_DEVICES_LATE = 14,
	SHIM_MAX_HOOKS = 15,
};
#define CRIU_PLUGIN_VERSION 0x200
#define CRIU_LOG_ERROR 1
#define CRIU_LOG_INFO 3
#define CRIU_LOG_DEBUG 4
/* criu 4.0 has 12 hooks; assume that much when the running criu's count cannot be read. */
#define FALLBACK_HOOK_COUNT 12

typedef struct {
	const char *name;
	int (*init)(int stage);
	void (*exit)(int stage, int ret);
	unsigned int version;
	unsigned int max_hooks;
	void *hooks[SHIM_MAX_HOOKS];
} shim_plugin_desc_t;

typedef void (*print_on_level_fn)(unsigned int level, const char *fmt, ...);
typedef bool (*check_and_remove_fn)(const char *name, size_t n);

static struct {
	bool enabled;       /* the gate said yes: Java may run */
	bool java_ready;    /* Bootstrap filled the hook table */
	pid_t criu_pid;     /* criu's main process; any other pid is a forked child */
	int criu_hook_count;
	struct criu_gpu_services services;
	char plugin_dir[PATH_MAX];
} g;

static void *java_table[CRIU_GPU_TABLE_SLOTS];

static int shim_init(int stage);
static void shim_exit(int stage, int ret);

/* ---------------------------------------------------------------- logging into criu's log */

static void shim_log(unsigned int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void shim_log(unsigned int level, const char *fmt, ...)
{
	char line[1024];
	const char *prefix = level == CRIU_LOG_ERROR ? "Error (" SHIM_PLUGIN_NAME "): " : SHIM_PLUGIN_NAME ": ";
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (g.services.print_on_level)
		((print_on_level_fn)g.services.print_on_level)(level, "%s%s\n", prefix, line);
	else if (level <= CRIU_LOG_INFO)
		fprintf(stderr, "%s%s\n", prefix, line);
}

/* ---------------------------------------------------------------- signals (DESIGN rule 4) */

static void block_criu_signals(sigset_t *old)
{
	static const int sigs[] = { SIGCHLD, SIGALRM, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGUSR1 };
	sigset_t set;

	sigemptyset(&set);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaddset(&set, sigs[i]);
	pthread_sigmask(SIG_BLOCK, &set, old);
}

static void restore_signals(const sigset_t *old)
{
	pthread_sigmask(SIG_SETMASK, old, NULL);
}

/* ---------------------------------------------------------------- load time (DESIGN rules 5, 6) */

/* hook trampolines, defined below */
static int t_dump_unix_sk(int fd, int id);
static int t_restore_unix_sk(int id);
static int t_dump_ext_file(int fd, int id);
static int t_restore_ext_file(int id);
static int t_dump_ext_mount(char *mountpoint, int id);
static int t_restore_ext_mount(int id, char *mountpoint, char *old_root, int *is_file);
static int t_dump_ext_link(int index, int type, char *kind);
static int t_handle_device_vma(int fd, const struct stat *st);
static int t_update_vma_map(const char *path, uint64_t addr, uint64_t old_pgoff, uint64_t *new_pgoff, int *plugin_fd);
static int t_resume_devices_late(int pid);
static int t_pause_devices(int pid);
static int t_checkpoint_devices(int pid);
static int t_post_forking(void);
static int t_restore_init(void);
static int t_dump_devices_late(int id);

static void *const trampolines[SHIM_MAX_HOOKS] = {
	[HOOK_DUMP_UNIX_SK] = (void *)t_dump_unix_sk,
	[HOOK_RESTORE_UNIX_SK] = (void *)t_restore_unix_sk,
	[HOOK_DUMP_EXT_FILE] = (void *)t_dump_ext_file,
	[HOOK_RESTORE_EXT_FILE] = (void *)t_restore_ext_file,
	[HOOK_DUMP_EXT_MOUNT] = (void *)t_dump_ext_mount,
	[HOOK_RESTORE_EXT_MOUNT] = (void *)t_restore_ext_mount,
	[HOOK_DUMP_EXT_LINK] = (void *)t_dump_ext_link,
	[HOOK_HANDLE_DEVICE_VMA] = (void *)t_handle_device_vma,
	[HOOK_UPDATE_VMA_MAP] = (void *)t_update_vma_map,
	[HOOK_RESUME_DEVICES_LATE] = (void *)t_resume_devices_late,
	[HOOK_PAUSE_DEVICES] = (void *)t_pause_devices,
	[HOOK_CHECKPOINT_DEVICES] = (void *)t_checkpoint_devices,
	[HOOK_POST_FORKING] = (void *)t_post_forking,
	[HOOK_RESTORE_INIT] = (void *)t_restore_init,
	[HOOK_DUMP_DEVICES_LATE] = (void *)t_dump_devices_late,
};

__attribute__((visibility("default"))) shim_plugin_desc_t CR_PLUGIN_DESC = {
	.name = SHIM_PLUGIN_NAME,
	.init = shim_init,
	.exit = shim_exit,
	.version = CRIU_PLUGIN_VERSION,
	.max_hooks = FALLBACK_HOOK_COUNT,
};

/* criu's cr_plugin_ctl holds one 16-byte list head plus one per hook: its size tells criu's hook count. */
static int running_criu_hook_count(void)
{
	const ElfW(Sym) *sym = NULL;
	Dl_info info;
	void *ctl = dlsym(RTLD_DEFAULT, "cr_plugin_ctl");

	if (!ctl || !dladdr1(ctl, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym || sym->st_size < 32)
		return 0;
	return (int)(sym->st_size / 16) - 1;
}

__attribute__((constructor)) static void shim_load(void)
{
	Dl_info self;
	int count = running_criu_hook_count();

	/* criu dlclose()s plugins at exit while JVM threads may still run code of ours: stay mapped. */
	if (dladdr((void *)&CR_PLUGIN_DESC, &self) && self.dli_fname) {
		dlopen(self.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
		/* criu may chdir later, and --lib may be relative: keep an absolute path */
		if (!realpath(self.dli_fname, g.plugin_dir))
			snprintf(g.plugin_dir, sizeof(g.plugin_dir), "%s", self.dli_fname);
		char *slash = strrchr(g.plugin_dir, '/');
		if (slash)
			*slash = '\0';
		else
			snprintf(g.plugin_dir, sizeof(g.plugin_dir), ".");
	}
	g.criu_hook_count = count;
	if (count <= 0)
		count = FALLBACK_HOOK_COUNT;
	if (count > SHIM_MAX_HOOKS)
		count = SHIM_MAX_HOOKS;
	CR_PLUGIN_DESC.max_hooks = (unsigned int)count;
	for (int i = 0; i < count; i++)
		if (SHIM_HOOK_MASK & (1u << i))
			CR_PLUGIN_DESC.hooks[i] = trampolines[i];
}

/* ---------------------------------------------------------------- JVM start (DESIGN rules 3, 5, 10) */

struct jvm_config {
	char java_home[PATH_MAX];
	char class_path[8192];
	char *options[64];
	int n_options;
};

static void free_config(struct jvm_config *c)
{
	for (int i = 0; i < c->n_options; i++)
		free(c->options[i]);
	c->n_options = 0;
}

/* Joins a path relative to the java/ dir; absolute paths stay as they are. */
static void resolve(char *out, size_t len, const char *java_dir, const char *path)
{
	if (path[0] == '/')
		snprintf(out, len, "%s", path);
	else
		snprintf(out, len, "%s/%s", java_dir, path);
}

/* Replaces every @JAVA_DIR@ in an option with the java/ dir. */
static char *expand(const char *opt, const char *java_dir)
{
	static const char key[] = "@JAVA_DIR@";
	size_t cap = strlen(opt) + 1 + 8 * strlen(java_dir);
	char *out = malloc(cap), *o = out;

	if (!out)
		return NULL;
	while (*opt) {
		if (!strncmp(opt, key, sizeof(key) - 1)) {
			o += sprintf(o, "%s", java_dir);
			opt += sizeof(key) - 1;
		} else {
			*o++ = *opt++;
		}
	}
	*o = '\0';
	return out;
}

/* java/criu-gpu.cfg: key=value lines (java.home, class.path entry per line, option per line). */
static int read_config(struct jvm_config *c, char *why, size_t why_len)
{
	char java_dir[PATH_MAX], cfg_path[PATH_MAX + 32], line[4096];
	FILE *f;

	memset(c, 0, sizeof(*c));
	snprintf(java_dir, sizeof(java_dir), "%s/java", g.plugin_dir);
	snprintf(cfg_path, sizeof(cfg_path), "%s/criu-gpu.cfg", java_dir);
	f = fopen(cfg_path, "re");
	if (!f) {
		snprintf(why, why_len, "cannot read %s: %s", cfg_path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		char *eq, *val;

		line[strcspn(line, "\r\n")] = '\0';
		if (line[0] == '#' || !(eq = strchr(line, '=')))
			continue;
		*eq = '\0';
		val = eq + 1;
		if (!strcmp(line, "java.home")) {
			resolve(c->java_home, sizeof(c->java_home), java_dir, val);
		} else if (!strcmp(line, "class.path")) {
			char entry[PATH_MAX];
			size_t used = strlen(c->class_path);

			resolve(entry, sizeof(entry), java_dir, val);
			snprintf(c->class_path + used, sizeof(c->class_path) - used, "%s%s", used ? ":" : "", entry);
		} else if (!strcmp(line, "option") && c->n_options < 60) {
			c->options[c->n_options] = expand(val, java_dir);
			if (c->options[c->n_options])
				c->n_options++;
		}
	}
	fclose(f);
	const char *override = getenv("CRIU_GPU_JAVA_HOME");
	if (override && *override)
		snprintf(c->java_home, sizeof(c->java_home), "%s", override);
	if (!c->java_home[0] || !c->class_path[0]) {
		snprintf(why, why_len, "%s names no java.home or no class.path", cfg_path);
		free_config(c);
		return -1;
	}
	return 0;
}

typedef jint (*create_vm_fn)(JavaVM **, void **, void *);
typedef jint (*created_vms_fn)(JavaVM **, jsize, jsize *);

static void *open_libjvm(const char *java_home, char *why, size_t why_len)
{
	char path[PATH_MAX + 32];
	void *h;

	snprintf(path, sizeof(path), "%s/lib/server/libjvm.so", java_home);
	h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
	if (!h)
		snprintf(why, why_len, "cannot load %s (java.home %s): %s", path, java_home, dlerror());
	return h;
}

/*
 * JVM threads get pids from criu's pid namespace. On restore before forking, park the JVM's threads at the top
 * of the pid range so they cannot take a pid criu is about to restore; Java then checks against the image.
 */
static long reserve_high_pids(void)
{
	long last = -1, max = 0;
	char buf[32];
	FILE *f = fopen("/proc/sys/kernel/pid_max", "re");

	if (!f)
		return -1;
	if (fscanf(f, "%ld", &max) != 1)
		max = 0;
	fclose(f);
	int fd = open("/proc/sys/kernel/ns_last_pid", O_RDWR | O_CLOEXEC);
	if (fd < 0 || max < 4096)
		goto out;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		goto out;
	buf[n] = '\0';
	last = strtol(buf, NULL, 10);
	n = snprintf(buf, sizeof(buf), "%ld", max - 1024);
	if (pwrite(fd, buf, n, 0) != n)
		last = -1;
out:
	if (fd >= 0)
		close(fd);
	return last;
}

static void release_high_pids(long last)
{
	char buf[32];
	int fd;

	if (last < 0 || (fd = open("/proc/sys/kernel/ns_last_pid", O_WRONLY | O_CLOEXEC)) < 0)
		return;
	int n = snprintf(buf, sizeof(buf), "%ld", last);
	if (write(fd, buf, n) != n)
		shim_log(CRIU_LOG_DEBUG, "could not put ns_last_pid back to %ld", last);
	close(fd);
}

static JNIEnv *create_or_join_jvm(struct jvm_config *c, char *why, size_t why_len)
{
	void *libjvm = open_libjvm(c->java_home, why, why_len);
	JavaVM *vm = NULL;
	JNIEnv *env = NULL;
	jsize n = 0;

	if (!libjvm)
		return NULL;
	created_vms_fn created = (created_vms_fn)dlsym(libjvm, "JNI_GetCreatedJavaVMs");
	create_vm_fn create = (create_vm_fn)dlsym(libjvm, "JNI_CreateJavaVM");
	if (!created || !create) {
		snprintf(why, why_len, "%s/lib/server/libjvm.so lacks the JNI invocation API", c->java_home);
		return NULL;
	}
	if (created(&vm, 1, &n) == JNI_OK && n > 0) {
		if ((*vm)->GetEnv(vm, (void **)&env, JNI_VERSION_21) != JNI_OK &&
		    (*vm)->AttachCurrentThread(vm, (void **)&env, NULL) != JNI_OK) {
			snprintf(why, why_len, "cannot attach to the running JVM");
			return NULL;
		}
		shim_log(CRIU_LOG_DEBUG, "joined the JVM another plugin started");
		return env;
	}

	char cp[sizeof(c->class_path) + 32];
	JavaVMOption opts[66];
	int k = 0;

	snprintf(cp, sizeof(cp), "-Djava.class.path=%s", c->class_path);
	opts[k++].optionString = cp;
	for (int i = 0; i < c->n_options; i++)
		opts[k++].optionString = c->options[i];
	JavaVMInitArgs args = { .version = JNI_VERSION_21, .nOptions = k, .options = opts, .ignoreUnrecognized = JNI_FALSE };
	jint rc = create(&vm, (void **)&env, &args);
	if (rc != JNI_OK) {
		snprintf(why, why_len, "JNI_CreateJavaVM failed (%d) with java.home %s", (int)rc, c->java_home);
		return NULL;
	}
	return env;
}

static int call_bootstrap(JNIEnv *env, char *why, size_t why_len)
{
	jclass cls = (*env)->FindClass(env, "dev/criugpu/api/Bootstrap");
	jmethodID start = cls ? (*env)->GetStaticMethodID(env, cls, "start", "(J)I") : NULL;

	if (!start) {
		(*env)->ExceptionDescribe(env);
		(*env)->ExceptionClear(env);
		snprintf(why, why_len, "dev.criugpu.api.Bootstrap.start(long) not found on the class path");
		return -ENOENT;
	}
	jint rc = (*env)->CallStaticIntMethod(env, cls, start, (jlong)(intptr_t)&g.services);
	if ((*env)->ExceptionCheck(env)) {
		(*env)->ExceptionDescribe(env);
		(*env)->ExceptionClear(env);
		snprintf(why, why_len, "Java bootstrap threw");
		return -EIO;
	}
	if (rc)
		snprintf(why, why_len, "Java bootstrap returned %d", (int)rc);
	return rc;
}

/* start_java's answer when the JVM runs but the plugin's init failed (it logged why): fail the command. */
#define JAVA_REFUSED (-ECANCELED)

/* Starts or joins the JVM and runs Bootstrap for this plugin. 0 on success, JAVA_REFUSED, or a negative errno. */
static int start_java(bool park_pids)
{
	char why[PATH_MAX + 256] = "";
	struct jvm_config cfg;
	sigset_t old;
	int rc;

	if (g.java_ready)
		return 0;
	if (!g.enabled || getpid() != g.criu_pid)
		return -ENOTSUP;
	if (read_config(&cfg, why, sizeof(why))) {
		shim_log(CRIU_LOG_ERROR, "cannot start the JVM: %s", why);
		return -ENOENT;
	}
	block_criu_signals(&old);
	long parked = park_pids ? reserve_high_pids() : -1;
	JNIEnv *env = create_or_join_jvm(&cfg, why, sizeof(why));
	release_high_pids(parked);
	rc = env ? call_bootstrap(env, why, sizeof(why)) : -EIO;
	restore_signals(&old);
	free_config(&cfg);
	if (rc) {
		if (!env)
			shim_log(CRIU_LOG_ERROR, "cannot start the JVM: %s", why);
		else
			shim_log(CRIU_LOG_ERROR, "the Java side refused this command: %s", why);
		return env ? JAVA_REFUSED : rc;
	}
	g.java_ready = true;
	return 0;
}

/* ---------------------------------------------------------------- init: the cheap native gate */

static void *criu_symbol(const char *name)
{
	return dlsym(RTLD_DEFAULT, name);
}

static bool hardware_present(void)
{
	struct stat st;

	return stat(SHIM_HW_PATH, &st) == 0;
}

static void disable(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void disable(const char *fmt, ...)
{
	char reason[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	g.enabled = false;
	/* criu chains hooks after init returns: leave it nothing to call. */
	for (int i = 0; i < SHIM_MAX_HOOKS; i++)
		CR_PLUGIN_DESC.hooks[i] = NULL;
	shim_log(CRIU_LOG_INFO, "disabled: %s", reason);
}

/* What inventory.img says about us (DESIGN rule 7); claims our name so criu does not miss it. */
static enum criu_gpu_claim claim_inventory(void)
{
	check_and_remove_fn check = (check_and_remove_fn)criu_symbol("check_and_remove_inventory_plugin");

	if (!check)
		return CRIU_GPU_CLAIM_LEGACY; /* criu < 4.1 records no plugins */
	if (check(SHIM_PLUGIN_NAME, strlen(SHIM_PLUGIN_NAME)))
		/* true also for an image without the plugins field; a name nobody uses tells which it is */
		return check("\x01", 1) ? CRIU_GPU_CLAIM_LEGACY : CRIU_GPU_CLAIM_LISTED;
	return CRIU_GPU_CLAIM_NOT_LISTED;
}

static int shim_init(int stage)
{
	const char *force = getenv("CRIU_GPU_PLUGIN_FORCE");
	bool forced = force && !strcmp(force, "1");
	bool hw = hardware_present();

	memset(java_table, 0, sizeof(java_table));
	g.enabled = false;
	g.java_ready = false;
	g.criu_pid = getpid();
	g.services = (struct criu_gpu_services){
		.size = sizeof(struct criu_gpu_services),
		.stage = (uint32_t)stage,
		.criu_hook_count = (uint32_t)(g.criu_hook_count > 0 ? g.criu_hook_count : 0),
		.flags = forced ? CRIU_GPU_FLAG_FORCED : 0,
		.inventory_claim = CRIU_GPU_CLAIM_NONE,
		.hook_mask = SHIM_HOOK_MASK,
		.plugin_name = SHIM_PLUGIN_NAME,
		.plugin_dir = g.plugin_dir,
		.hook_table = java_table,
		.print_on_level = criu_symbol("print_on_level"),
		.log_get_loglevel = criu_symbol("log_get_loglevel"),
		.criu_get_image_dir = criu_symbol("criu_get_image_dir"),
		.add_inventory_plugin = criu_symbol("add_inventory_plugin"),
		.set_compel_interrupt_only_mode = criu_symbol("set_compel_interrupt_only_mode"),
		.compel_wait_task = criu_symbol("compel_wait_task"),
	};

	if (stage == STAGE_PRE_DUMP) {
		disable("pre-dump saves no device state");
		return 0;
	}
	if (stage == STAGE_RESTORE) {
		enum criu_gpu_claim claim = claim_inventory();

		g.services.inventory_claim = claim;
		if (claim == CRIU_GPU_CLAIM_NOT_LISTED && !forced) {
			disable("the image holds no %s state", SHIM_HW_WHAT);
			return 0;
		}
		if (!hw && !forced) {
			if (claim == CRIU_GPU_CLAIM_LISTED) {
				shim_log(CRIU_LOG_ERROR, "image holds %s state; no %s here (%s absent)", SHIM_HW_WHAT,
					 SHIM_HW_NAME, SHIM_HW_PATH);
				return -ENODEV;
			}
			disable("no %s (%s absent)", SHIM_HW_NAME, SHIM_HW_PATH);
			return 0;
		}
	} else if (!hw && !forced) {
		disable("no %s (%s absent)", SHIM_HW_NAME, SHIM_HW_PATH);
		return 0;
	}

	g.enabled = true;
	shim_log(CRIU_LOG_INFO, "enabled%s", forced ? " (forced by CRIU_GPU_PLUGIN_FORCE=1)" : "");
	/*
	 * Java starts now, on restore too: before criu forks anything, so a restore the plugin cannot carry out
	 * (missing GPU, bad device map) is refused while the images and pids are untouched. Its threads are parked
	 * at the top of the pid range, and Java checks them against pstree.img (DESIGN rule 3).
	 */
	int rc = start_java(stage == STAGE_RESTORE);

	if (rc == JAVA_REFUSED)
		return rc;
	if (rc && stage == STAGE_RESTORE && g.services.inventory_claim == CRIU_GPU_CLAIM_LISTED)
		return rc; /* the image needs us and we cannot run */
	if (rc)
		disable("the JVM did not start");
	return 0;
}

static void shim_exit(int stage, int ret)
{
	void (*fn)(int, int) = (void (*)(int, int))java_table[CRIU_GPU_EXIT_SLOT];
	sigset_t old;

	if (!g.java_ready || !fn || getpid() != g.criu_pid)
		return;
	block_criu_signals(&old);
	fn(stage, ret);
	restore_signals(&old);
}

/* ---------------------------------------------------------------- hook trampolines */

/* The Java stub for a main-process hook; NULL when Java does not serve it (or in a forked child). */
static void *java_hook(int id)
{
	if (!g.java_ready || getpid() != g.criu_pid)
		return NULL;
	return java_table[id];
}

typedef int (*fn_v)(void);
typedef int (*fn_i)(int);
typedef int (*fn_ii)(int, int);
typedef int (*fn_si)(char *, int);
typedef int (*fn_iis)(int, int, char *);
typedef int (*fn_ist)(int, const struct stat *);

/* Calls the Java stub for hook HOOK_ID (of C type FN_TYPE) with criu's signals blocked; -ENOTSUP if none. */
#define FORWARD(HOOK_ID, FN_TYPE, ...)                          \
	do {                                                    \
		FN_TYPE fn_ = (FN_TYPE)java_hook(HOOK_ID);      \
		sigset_t old_;                                  \
		int ret_;                                       \
		if (!fn_)                                       \
			return -ENOTSUP;                        \
		block_criu_signals(&old_);                      \
		ret_ = fn_(__VA_ARGS__);                        \
		restore_signals(&old_);                         \
		return ret_;                                    \
	} while (0)

static int t_dump_unix_sk(int fd, int id) { FORWARD(HOOK_DUMP_UNIX_SK, fn_ii, fd, id); }
static int t_dump_ext_file(int fd, int id) { FORWARD(HOOK_DUMP_EXT_FILE, fn_ii, fd, id); }
static int t_dump_ext_mount(char *mp, int id) { FORWARD(HOOK_DUMP_EXT_MOUNT, fn_si, mp, id); }
static int t_dump_ext_link(int index, int type, char *kind) { FORWARD(HOOK_DUMP_EXT_LINK, fn_iis, index, type, kind); }
static int t_handle_device_vma(int fd, const struct stat *st) { FORWARD(HOOK_HANDLE_DEVICE_VMA, fn_ist, fd, st); }
static int t_resume_devices_late(int pid) { FORWARD(HOOK_RESUME_DEVICES_LATE, fn_i, pid); }
static int t_pause_devices(int pid) { FORWARD(HOOK_PAUSE_DEVICES, fn_i, pid); }
static int t_checkpoint_devices(int pid) { FORWARD(HOOK_CHECKPOINT_DEVICES, fn_i, pid); }
static int t_post_forking(void) { FORWARD(HOOK_POST_FORKING, fn_v); }
static int t_restore_init(void) { FORWARD(HOOK_RESTORE_INIT, fn_v); }
static int t_dump_devices_late(int id) { FORWARD(HOOK_DUMP_DEVICES_LATE, fn_i, id); }

/*
 * Hooks criu calls inside a forked child (DESIGN rule 1): never Java. They run the native functions Java put into
 * the services struct before criu forked; a hook without one leaves a trace and lets criu ask the next plugin.
 */
static int child_hook(const char *hook, long arg)
{
	if (g.enabled)
		shim_log(CRIU_LOG_DEBUG, "hook %s(%ld) not handled in pid %d", hook, arg, (int)getpid());
	return -ENOTSUP;
}

static void child_trace(const char *hook, long arg)
{
	shim_log(CRIU_LOG_DEBUG, "hook %s(%ld) handled natively in pid %d", hook, arg, (int)getpid());
}

static int t_restore_unix_sk(int id) { return child_hook("RESTORE_UNIX_SK", id); }
static int t_restore_ext_file(int id)
{
	if (!g.enabled || !g.services.child_restore_ext_file)
		return child_hook("RESTORE_EXT_FILE", id);
	child_trace("RESTORE_EXT_FILE", id);
	return g.services.child_restore_ext_file(g.services.child_ctx, id);
}
static int t_restore_ext_mount(int id, char *mountpoint, char *old_root, int *is_file)
{
	(void)mountpoint;
	(void)old_root;
	(void)is_file;
	return child_hook("RESTORE_EXT_MOUNT", id);
}
static int t_update_vma_map(const char *path, uint64_t addr, uint64_t old_pgoff, uint64_t *new_pgoff, int *plugin_fd)
{
	if (!g.enabled || !g.services.child_update_vma_map)
		return child_hook("UPDATE_VMA_MAP", (long)addr);
	child_trace("UPDATE_VMA_MAP", (long)addr);
	return g.services.child_update_vma_map(g.services.child_ctx, path, addr, old_pgoff, new_pgoff, plugin_fd);
}
