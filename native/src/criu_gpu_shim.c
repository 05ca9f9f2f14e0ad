/*
 * criu-java-gpu shim, the plugin criu dlopen()s, built once per vendor (SHIM_*): a cheap gate, then an embedded JVM
 * (started or joined) whose upcall stubs serve criu's hooks; in criu's forked children, the plan executor (native/plan).
 * Policy lives in Java: this file holds only what must be decided before a JVM exists or in a forked child.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <jni.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <linux/futex.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "criu_gpu_shim.h"
#include "gpu_plan.h"
#include "helper_launch.h"

/* Facts from criu-plugin.h (not included: the shim builds without libcriu-dev); SHIM_* come from the Makefile. */
enum { STAGE_DUMP = 0, STAGE_PRE_DUMP = 1, STAGE_RESTORE = 2, LOG_ERROR = 1, LOG_WARN = 2, LOG_INFO = 3, LOG_DEBUG = 4 };
enum { DUMP_EXT_FILE = 2, RESTORE_EXT_FILE = 3, HANDLE_DEVICE_VMA = 7, UPDATE_VMA_MAP = 8, RESUME_DEVICES_LATE = 9 };
enum { PAUSE_DEVICES = 10, CHECKPOINT_DEVICES = 11, POST_FORKING = 12, MAX_HOOKS = 15, FALLBACK_HOOK_COUNT = 12 /* criu 4.0 */ };
#define JAVA_HOME_OPTION "-Dcriu.gpu.java.home="
#define NS_LAST_PID "/proc/sys/kernel/ns_last_pid"

typedef struct {
	const char *name;
	int (*init)(int stage);
	void (*exit)(int stage, int ret);
	unsigned int version, max_hooks;
	void *hooks[MAX_HOOKS];
} shim_plugin_desc_t;

static struct {
	bool enabled, java_ready; /* the gate said yes; Bootstrap filled the hook table */
	bool java_deferred, listed; /* a restore's JVM starts at POST_FORKING; inventory.img lists this plugin */
	bool pinned, exit_handler; /* this library is never unloaded; exit_status_handler is registered */
	pid_t criu_pid;           /* criu's main process and thread; any other pid is a forked child */
	int criu_hook_count;
	struct criu_gpu_services *svc; /* private_services, or on a restore the head of the area shared with children */
	uint32_t *plan_state;          /* in that area: PLAN_*, for children waiting on criu's JVM */
	void *java_table[CRIU_GPU_TABLE_SLOTS];
	char plugin_dir[PATH_MAX];
} g;

static struct criu_gpu_services private_services;

__attribute__((format(printf, 2, 3))) static void shim_log(unsigned int level, const char *fmt, ...)
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

/* What the JVM prints (warnings, -Xlog) comes here in pieces from any of its threads, not to criu's stderr; as
 * print_on_level is not thread-safe, whole lines wait here until criu's main thread flushes them. */
static pthread_mutex_t jvm_out_lock = PTHREAD_MUTEX_INITIALIZER;
static char jvm_out[4096];
static size_t jvm_out_len;
static bool jvm_starting; /* stderr is a memfd while JNI_CreateJavaVM runs: its warnings bypass the hook in part */

static void flush_jvm_output(void)
{
	pthread_mutex_lock(&jvm_out_lock);
	char *line = jvm_out, *end = jvm_out + jvm_out_len, *nl;
	while ((nl = memchr(line, '\n', end - line)) || (line == jvm_out && jvm_out_len == sizeof(jvm_out) - 1)) {
		shim_log(LOG_WARN, "JVM: %.*s", (int)((nl ? nl : end) - line), line);
		line = nl ? nl + 1 : end;
	}
	memmove(jvm_out, line, jvm_out_len = end - line);
	pthread_mutex_unlock(&jvm_out_lock);
}

static jint jvm_vfprintf(FILE *stream, const char *fmt, va_list ap)
{
	(void)stream;
	if (jvm_starting)
		return vdprintf(2, fmt, ap);
	pthread_mutex_lock(&jvm_out_lock);
	size_t room = sizeof(jvm_out) - jvm_out_len; /* at least 1: the terminator */
	int n = vsnprintf(jvm_out + jvm_out_len, room, fmt, ap);
	jvm_out_len += n <= 0 ? 0 : (size_t)n < room ? (size_t)n : room - 1;
	pthread_mutex_unlock(&jvm_out_lock);
	return n;
}

static void block_criu_signals(sigset_t *old)
{
	sigset_t set;

	sigemptyset(&set);
	for (const int *s = (const int[]){ SIGCHLD, SIGALRM, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGUSR1, 0 }; *s; s++)
		sigaddset(&set, *s);
	pthread_sigmask(SIG_BLOCK, &set, old);
}

/*
 * criu's main thread gets an fs_struct (root, cwd, umask) of its own whenever Java has run on it: the JVM's threads,
 * and those a hook starts, share the one they were made with (pthreads clone with CLONE_FS), and the kernel refuses
 * setns() into a mount namespace to a thread whose fs_struct is shared (EINVAL). criu enters its tasks' mount
 * namespace to dump a container's mounts: measured with podman on the GPU host, "Can't setns 33/mnt: Invalid
 * argument" once the JVM ran in criu. unshare(CLONE_FS) gives only the calling thread a private copy (a no-op when it
 * holds the only reference); the JVM's threads keep the host's view, which is what they need.
 */
static void own_fs(void)
{
	if (unshare(CLONE_FS))
		shim_log(LOG_WARN, "unshare(CLONE_FS) failed (%s): criu may not be able to enter mount namespaces", strerror(errno));
}

/* Calls the Java stub for hook ID (of SELF's C type) with criu's signals blocked; -ENOTSUP when Java does not serve it. */
#define FORWARD(ID, SELF, ...)                                                                                 \
	{                                                                                                      \
		__typeof__(&SELF) fn_ = g.java_ready && getpid() == g.criu_pid ? (void *)g.java_table[ID] : NULL; \
		sigset_t old_;                                                                \
		if (!fn_)                                                                     \
			return -ENOTSUP;                                                      \
		block_criu_signals(&old_);                                                    \
		int ret_ = fn_(__VA_ARGS__);                                                  \
		own_fs();                                                                     \
		pthread_sigmask(SIG_SETMASK, &old_, NULL);                                    \
		return flush_jvm_output(), ret_;                                              \
	}

static int t_dump_ext_file(int fd, int id) FORWARD(DUMP_EXT_FILE, t_dump_ext_file, fd, id)
static int t_handle_device_vma(int fd, const struct stat *st) FORWARD(HANDLE_DEVICE_VMA, t_handle_device_vma, fd, st)
static int t_resume_devices_late(int pid) FORWARD(RESUME_DEVICES_LATE, t_resume_devices_late, pid)
static int t_pause_devices(int pid) FORWARD(PAUSE_DEVICES, t_pause_devices, pid)
static int t_checkpoint_devices(int pid) FORWARD(CHECKPOINT_DEVICES, t_checkpoint_devices, pid)

/*
 * Where a restore's plan stands, in the memory criu's children share with criu (DESIGN rule 1): criu's JVM writes the
 * plan at POST_FORKING, while the tasks criu forked go on by themselves (the root task moves the tree past the forking
 * stage without waiting for criu's main process), so a child that reaches a hook first waits here for the verdict.
 */
enum { PLAN_NOT_DEFERRED = 0, PLAN_PENDING = 1, PLAN_READY = 2, PLAN_FAILED = 3 };
#define PLAN_WAIT_SECONDS 300 /* a JVM start is well under a second; only a criu gone without a word takes this long */

static void set_plan_state(uint32_t state)
{
	if (!g.plan_state)
		return;
	__atomic_store_n(g.plan_state, state, __ATOMIC_RELEASE);
	syscall(SYS_futex, g.plan_state, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* In a child: true once the plan (or the lack of one) is final, false if criu's JVM failed or never answered. */
static bool plan_settled(void)
{
	uint32_t state;

	for (int waited = 0; g.plan_state && (state = __atomic_load_n(g.plan_state, __ATOMIC_ACQUIRE)) == PLAN_PENDING;) {
		struct timespec second = { .tv_sec = 1 };
		if (waited++ == PLAN_WAIT_SECONDS) {
			shim_log(LOG_ERROR, "pid %d: criu's JVM did not write the restore's plan within %d s", (int)getpid(),
				 PLAN_WAIT_SECONDS);
			return false;
		}
		syscall(SYS_futex, g.plan_state, FUTEX_WAIT, PLAN_PENDING, &second, NULL, 0);
	}
	return !g.plan_state || state != PLAN_FAILED;
}

/* Hooks criu calls inside a forked child (DESIGN rule 1): never Java, only the plan Java wrote for it. */
static int t_restore_ext_file(int id)
{
	if (!g.enabled)
		return -ENOTSUP;
	if (!plan_settled())
		return -EIO;
	return g.svc->child_plan ? gpu_plan_restore_ext_file(g.svc->child_plan, id) : -ENOTSUP;
}

static int t_update_vma_map(const char *path, uint64_t addr, uint64_t old_pgoff, uint64_t *new_pgoff, int *plugin_fd)
{
	if (!g.enabled)
		return -ENOTSUP;
	if (!plan_settled())
		return -EIO;
	return g.svc->child_plan ? gpu_plan_update_vma_map(g.svc->child_plan, path, addr, old_pgoff, new_pgoff, plugin_fd)
				 : -ENOTSUP;
}

static int shim_init(int stage);
static void shim_exit(int stage, int ret);
static int t_post_forking(void);

/* The hooks some plugin serves; criu gets those of this vendor's SHIM_HOOK_MASK. */
static void *const trampolines[MAX_HOOKS] = {
	[DUMP_EXT_FILE] = (void *)t_dump_ext_file,
	[RESTORE_EXT_FILE] = (void *)t_restore_ext_file,
	[HANDLE_DEVICE_VMA] = (void *)t_handle_device_vma,
	[UPDATE_VMA_MAP] = (void *)t_update_vma_map,
	[RESUME_DEVICES_LATE] = (void *)t_resume_devices_late,
	[PAUSE_DEVICES] = (void *)t_pause_devices,
	[CHECKPOINT_DEVICES] = (void *)t_checkpoint_devices,
};

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
	for (unsigned int i = 0; i < CR_PLUGIN_DESC.max_hooks; i++)
		if (SHIM_HOOK_MASK & (1u << i))
			CR_PLUGIN_DESC.hooks[i] = trampolines[i];
	if (CR_PLUGIN_DESC.max_hooks > POST_FORKING) /* the shim's own: where a restore's JVM starts (DESIGN rule 1) */
		CR_PLUGIN_DESC.hooks[POST_FORKING] = (void *)t_post_forking;
}

/* Why ST (a directory, symlink or file on the way to what the plugins load) is not trusted, or NULL: it must belong
 * to root or to criu's user, and no one else may write it; a root-owned sticky directory (/tmp) is fine, since only
 * root can replace what root put there. A symlink's own mode means nothing. */
static const char *untrusted(const struct stat *st)
{
	bool sticky = S_ISDIR(st->st_mode) && (st->st_mode & S_ISVTX) && st->st_uid == 0;

	return st->st_uid != 0 && st->st_uid != geteuid()      ? "owned by another user"
	       : S_ISLNK(st->st_mode)			       ? NULL
	       : (st->st_mode & S_IWOTH) && !sticky	       ? "writable by everyone"
	       : (st->st_mode & S_IWGRP) && !sticky	       ? "writable by its group"
								: NULL;
}

#define REFUSE(what, st, bad)                                                                                          \
	(snprintf(why, len, "refusing %s: %s is %s (owner uid %u, mode %04o); what the plugins load, and every "       \
		  "directory and symlink on the way to it, must be writable by root only", path, what, bad,             \
		  (unsigned)(st).st_uid, (unsigned)((st).st_mode & 07777)), -1)

/*
 * DESIGN rule 11 (dev.criugpu.api.sys.TrustedPaths has the same rules): walks the absolute PATH as given, one component
 * at a time, checking / and every directory, every symlink and (walked the same way) its target, and the regular file
 * at the end; then opens that file and checks the fd is the file walked. Returns the fd (O_CLOEXEC): load through
 * it, never through the path again. Once the walk passes, no one but root (or criu's user) can change anything on
 * the way, so a name checked here still means the same file when the JVM opens it itself later.
 */
static int open_trusted(const char *path, char *why, size_t len)
{
	char real[PATH_MAX] = "", todo[PATH_MAX], target[PATH_MAX];
	const char *bad;
	struct stat st, fst;
	int links = 0;

	if (path[0] != '/')
		return snprintf(why, len, "refusing %s: not an absolute path", path), -1;
	if (lstat("/", &st))
		return snprintf(why, len, "refusing %s: /: %s", path, strerror(errno)), -1;
	if ((bad = untrusted(&st)))
		return REFUSE("/", st, bad);
	snprintf(todo, sizeof(todo), "%s", path);
	for (char *rest = todo, *end;; rest = end) {
		while (*rest == '/')
			rest++;
		if (!*rest)
			break;
		size_t n = strcspn(rest, "/"), at = strlen(real);
		end = rest + n;
		if (n == 1 && rest[0] == '.')
			continue;
		if (n == 2 && !strncmp(rest, "..", 2)) {
			*(strrchr(real, '/') ?: real) = '\0';
			continue;
		}
		if (at + 1 + n >= sizeof(real))
			return snprintf(why, len, "refusing %s: the path is too long", path), -1;
		snprintf(real + at, sizeof(real) - at, "/%.*s", (int)n, rest);
		if (lstat(real, &st))
			return snprintf(why, len, "refusing %s: %s: %s", path, real, strerror(errno)), -1;
		if ((bad = untrusted(&st)))
			return REFUSE(real, st, bad);
		if (S_ISLNK(st.st_mode)) { /* go on with its target, then what followed the link */
			ssize_t k = readlink(real, target, sizeof(target) - 1);
			if (k < 0 || ++links > 40)
				return snprintf(why, len, "refusing %s: %s: %s", path, real, k < 0 ? strerror(errno)
							: "too many levels of symbolic links"), -1;
			real[target[0] == '/' ? 0 : at] = '\0';
			if ((size_t)k + strlen(end) >= sizeof(target))
				return snprintf(why, len, "refusing %s: the path is too long", path), -1;
			snprintf(target + k, sizeof(target) - k, "%s", end);
			snprintf(todo, sizeof(todo), "%s", target);
			end = todo;
		}
	}
	if (!S_ISREG(st.st_mode))
		return REFUSE(real[0] ? real : "/", st, "not a regular file");
	int fd = open(real, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &fst) || fst.st_dev != st.st_dev || fst.st_ino != st.st_ino || untrusted(&fst)) {
		snprintf(why, len, "refusing %s: %s %s", path, real, fd < 0 ? strerror(errno) : "changed while it was checked");
		return fd >= 0 ? close(fd), -1 : -1;
	}
	return fd;
}

/* Checks PATH (open_trusted) for a file the JVM opens itself. */
static int check_trusted(const char *path, char *why, size_t len)
{
	int fd = open_trusted(path, why, len);

	return fd < 0 ? -1 : (close(fd), 0);
}

static char opt_text[32768], java_home[PATH_MAX], aot_opt[64]; /* the JVM may keep pointers into its options */
static JavaVMOption opts[64];
static int n_opts, aot_fd = -1;
#define AOT_OPTION "-XX:AOTCache="

/* Checks every absolute path an option hands the JVM: class path entries, agents, properties. The JVM opens them
 * itself, by these names (the AOT cache records the class path, so /proc/self/fd names would void it). */
static int check_option_paths(const char *opt, char *why, size_t len)
{
	char words[PATH_MAX * 4], *save = NULL;

	snprintf(words, sizeof(words), "%s", opt);
	for (char *w = strtok_r(words, ":=", &save); w; w = strtok_r(NULL, ":=", &save))
		if (w[0] == '/' && check_trusted(w, why, len))
			return -1;
	return 0;
}

/* java/jvm.options: one JavaVMOption per line with absolute paths, written by make-aot.sh at install time; the
 * -Dcriu.gpu.java.home= line, the JDK to load, is the shim's own. CRIU_GPU_JAVA_HOME (absolute) overrides it. */
static int read_options(char *why, size_t len)
{
	const char *home = secure_getenv("CRIU_GPU_JAVA_HOME");
	char path[PATH_MAX + 32];

	snprintf(path, sizeof(path), "%s/java/criu-gpu.cfg", g.plugin_dir);
	if (access(path, F_OK) == 0 && check_trusted(path, why, len))
		return -1;
	snprintf(path, sizeof(path), "%s/java/jvm.options", g.plugin_dir);
	int fd = open_trusted(path, why, len);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, opt_text, sizeof(opt_text) - 1);
	close(fd);
	if (n < 0)
		return snprintf(why, len, "cannot read %s: %s", path, strerror(errno)), -1;
	opt_text[n] = '\0';
	opts[0] = (JavaVMOption){ .optionString = "vfprintf", .extraInfo = (void *)jvm_vfprintf };
	n_opts = 1;
	for (char *save = NULL, *line = strtok_r(opt_text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (!strncmp(line, JAVA_HOME_OPTION, strlen(JAVA_HOME_OPTION)))
			snprintf(java_home, sizeof(java_home), "%s", line + strlen(JAVA_HOME_OPTION));
		else if (line[0] == '#')
			continue;
		else if (n_opts == sizeof(opts) / sizeof(opts[0]))
			return snprintf(why, len, "%s holds more than %d options", path, n_opts - 1), -1;
		else if (!strncmp(line, AOT_OPTION, strlen(AOT_OPTION))) { /* the JVM maps the cache we checked */
			if (aot_fd >= 0)
				return snprintf(why, len, "%s names more than one AOT cache", path), -1;
			if ((aot_fd = open_trusted(line + strlen(AOT_OPTION), why, len)) < 0)
				return -1;
			snprintf(aot_opt, sizeof(aot_opt), AOT_OPTION "/proc/self/fd/%d", aot_fd);
			opts[n_opts++].optionString = aot_opt;
		} else if (check_option_paths(line, why, len))
			return -1;
		else
			opts[n_opts++].optionString = line;
	}
	if (home && *home)
		snprintf(java_home, sizeof(java_home), "%s", home);
	if (java_home[0] != '/')
		return snprintf(why, len, "the JDK '%s' named by %s is not an absolute path", java_home,
				home && *home ? "CRIU_GPU_JAVA_HOME" : path), -1;
	return 0;
}

/* The number in a /proc/sys file (-1 if unreadable); writes `set` there unless it is negative. */
static long proc_sys(const char *path, long set)
{
	char buf[32] = "";
	int fd = open(path, (set < 0 ? O_RDONLY : O_RDWR) | O_CLOEXEC);
	long was = fd >= 0 && read(fd, buf, sizeof(buf) - 1) > 0 ? strtol(buf, NULL, 10) : -1;

	if (was >= 0 && set >= 0 && pwrite(fd, buf, snprintf(buf, sizeof(buf), "%ld", set), 0) < 0)
		was = -1;
	close(fd);
	return was;
}

/*
 * The plugin's helper (the CUDA agent), started before the JVM: its own JVM and driver library then come up beside
 * criu's instead of after it, off the first lock's path (issue 23: the dump waited 50-85 ms for the agent on the H100).
 * java/<plugin>.helper, written by make-aot.sh, holds its argv, one word per line; @CRIU_PID@ stands for criu's pid.
 * Every word that is an absolute path must pass open_trusted. The launcher (native/launch) is the same one Java calls
 * later (services.launch_helper); whether the dump uses this helper is Java's to decide (HelperProcess adopts criu's
 * end, or closes it and the helper reads the end and ends). Returns "SOCKET_FD OUTPUT_FD PID STATLINE" for
 * Bootstrap.prepare, or NULL: then Java launches the helper through the same launcher, or says why it cannot.
 */
static char helper_handoff[1100], helper_text[8192];
static int helper_fds[2] = { -1, -1 }; /* criu's end of the socketpair, the memfd of what the helper prints */

/* Gives up the helper nobody adopted: it reads the end of its stream and ends. (Named for what it once removed.) */
static void remove_dir(const char *helper)
{
	(void)helper;
	for (int i = 0; i < 2; i++)
		if (helper_fds[i] >= 0)
			close(helper_fds[i]), helper_fds[i] = -1;
}

static const char *launch_helper(void)
{
	char path[PATH_MAX + 64], why[PATH_MAX * 2 + 256], criu_pid[16];
	char *argv[96];
	int argc = 0, fd;

	snprintf(path, sizeof(path), "%s/java/%s.helper", g.plugin_dir, SHIM_PLUGIN_NAME);
	/* the command names the install's JDK: with another one asked for, criu's JVM starts the helper with that one */
	if (access(path, F_OK) || secure_getenv("CRIU_GPU_JAVA_HOME"))
		return NULL;
	if ((fd = open_trusted(path, why, sizeof(why))) < 0) {
		shim_log(LOG_WARN, "no early helper: %s", why);
		return NULL;
	}
	ssize_t n = read(fd, helper_text, sizeof(helper_text) - 1);
	close(fd);
	if (n <= 0 || n == (ssize_t)sizeof(helper_text) - 1)
		return NULL;
	helper_text[n] = '\0';
	snprintf(criu_pid, sizeof(criu_pid), "%d", (int)getpid());
	for (char *save = NULL, *w = strtok_r(helper_text, "\n", &save); w; w = strtok_r(NULL, "\n", &save)) {
		char *word = !strcmp(w, "@CRIU_PID@") ? criu_pid : w;
		if (argc == (int)(sizeof(argv) / sizeof(argv[0])) - 1) {
			shim_log(LOG_WARN, "no early helper: %s has too many words", path);
			return NULL;
		}
		if (word == w && check_option_paths(word, why, sizeof(why))) {
			shim_log(LOG_WARN, "no early helper: %s", why);
			return NULL;
		}
		argv[argc++] = word;
	}
	argv[argc] = NULL;
	if (criu_gpu_launch_helper(argv, helper_handoff, sizeof(helper_handoff))) {
		shim_log(LOG_WARN, "no early helper: %s", helper_handoff);
		return NULL;
	}
	if (sscanf(helper_handoff, "%d %d", &helper_fds[0], &helper_fds[1]) != 2) {
		shim_log(LOG_WARN, "no early helper: the launcher said '%s'", helper_handoff);
		return NULL;
	}
	return helper_handoff;
}

/*
 * Grows criu's fd table to FD_TABLE_SLOTS (or RLIMIT_NOFILE) before the JVM adds threads that share it. The kernel
 * waits for an RCU grace period each time it grows the fd table of a process whose threads share it (expand_fdtable),
 * and a dump's fd table grows when criu takes a task's fds (PARASITE_CMD_DRAIN_FDS: up to 756 at a time): measured on
 * the H100, criu's first drain took 9-34 ms with our JVM in criu and under 0.1 ms without; here, a drain that grew the
 * table from 256 to 512 took 14-15 ms against 0.0-0.5 ms. Grown while criu is single-threaded it costs nothing, and
 * the kernel never shrinks it again. 2048 slots hold two full drains beside the JVM's own files (16 KiB).
 */
#define FD_TABLE_SLOTS 2048

static void grow_fd_table(void)
{
	struct rlimit lim;
	long slots = FD_TABLE_SLOTS;

	if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY && (long)lim.rlim_cur < slots)
		slots = (long)lim.rlim_cur;
	int any = open("/", O_PATH | O_CLOEXEC), high = any >= 0 ? fcntl(any, F_DUPFD_CLOEXEC, (int)slots - 1) : -1;
	if (high >= 0)
		close(high);
	if (any >= 0)
		close(any);
}

/* The environment variables JNI_CreateJavaVM takes options from: criu's environment is not ours to obey. */
static const char *const jvm_env[] = { "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS" };

static JNIEnv *create_or_join_jvm(char *why, size_t len)
{
	char libjvm[PATH_MAX + 32], *saved[2];
	JavaVM *vm = NULL;
	JNIEnv *env = NULL;
	jsize n = 0;

	snprintf(libjvm, sizeof(libjvm), "%s/lib/server/libjvm.so", java_home);
	int fd = open_trusted(libjvm, why, len);
	if (fd < 0)
		return NULL;
	/* Loaded through the fd checked. It stays open: the JVM finds its JDK by realpath() of the name it was loaded
	 * by, which /proc resolves through this fd. A second plugin's dlopen finds the loaded library by inode. */
	char by_fd[32];
	snprintf(by_fd, sizeof(by_fd), "/proc/self/fd/%d", fd);
	void *h = dlopen(by_fd, RTLD_NOW | RTLD_GLOBAL);
	jint (*created)(JavaVM **, jsize, jsize *) = h ? dlsym(h, "JNI_GetCreatedJavaVMs") : NULL;
	jint (*create)(JavaVM **, void **, void *) = h ? dlsym(h, "JNI_CreateJavaVM") : NULL;
	if (!created || !create)
		return snprintf(why, len, "%s: %s", libjvm, h ? "no JNI invocation API" : dlerror()), close(fd), NULL;
	if (created(&vm, 1, &n) == JNI_OK && n > 0) /* attaching criu's main thread again is a no-op */
		return close(fd), (*vm)->AttachCurrentThread(vm, (void **)&env, NULL)
					  ? snprintf(why, len, "cannot join the JVM"), NULL
					  : env;
	for (int i = 0; i < 2; i++)
		if ((saved[i] = getenv(jvm_env[i])) && (saved[i] = strdup(saved[i])))
			unsetenv(jvm_env[i]);
	JavaVMInitArgs args = { .version = JNI_VERSION_21, .nOptions = n_opts, .options = opts };
	int err = dup(2), out = err < 0 ? -1 : memfd_create("jvm-output", MFD_CLOEXEC);
	jvm_starting = out >= 0 && dup2(out, 2) == 2;
	jint rc = create(&vm, (void **)&env, &args);
	if (jvm_starting) { /* what it printed while it started, into the lines criu's main thread logs */
		dup2(err, 2);
		jvm_starting = false;
		pthread_mutex_lock(&jvm_out_lock);
		ssize_t k = pread(out, jvm_out + jvm_out_len, sizeof(jvm_out) - 1 - jvm_out_len, 0);
		jvm_out_len += k > 0 ? (size_t)k : 0;
		pthread_mutex_unlock(&jvm_out_lock);
	}
	close(err);
	close(out);
	for (int i = 0; i < 2; i++)
		if (saved[i] && !setenv(jvm_env[i], saved[i], 1))
			free(saved[i]);
	if (rc != JNI_OK)
		return snprintf(why, len, "JNI_CreateJavaVM failed (%d) with the JDK %s", (int)rc, java_home), NULL;
	return env;
}

/*
 * Bootstrap.prepare(name, stage, plugin dir, images dir or null, early helper's fds and identity or null), with plain
 * Java values:
 * the plugin starts its slow work before Java first touches native memory, which alone takes tens of milliseconds
 * (issue 23). The images dir is criu's fd as /proc/self/fd/N. Whatever goes wrong is init's to say.
 */
static void prepare(JNIEnv *env, jclass cls, const char *helper)
{
	jmethodID m = (*env)->GetStaticMethodID(env, cls, "prepare",
						"(Ljava/lang/String;ILjava/lang/String;Ljava/lang/String;Ljava/lang/String;)V");
	int (*image_dir)(void) = (int (*)(void))g.svc->criu_get_image_dir;
	int fd = image_dir ? image_dir() : -1;
	char images[64];
	jstring name = m ? (*env)->NewStringUTF(env, SHIM_PLUGIN_NAME) : NULL;
	jstring dir = name ? (*env)->NewStringUTF(env, g.plugin_dir) : NULL;
	jstring img = NULL, early = dir && helper ? (*env)->NewStringUTF(env, helper) : NULL;

	snprintf(images, sizeof(images), "/proc/self/fd/%d", fd);
	if (dir && fd >= 0)
		img = (*env)->NewStringUTF(env, images);
	if (dir)
		(*env)->CallStaticVoidMethod(env, cls, m, name, (jint)g.svc->stage, dir, img, early);
	if ((*env)->ExceptionCheck(env))
		(*env)->ExceptionClear(env);
	if (name)
		(*env)->DeleteLocalRef(env, name);
	if (dir)
		(*env)->DeleteLocalRef(env, dir);
	if (img)
		(*env)->DeleteLocalRef(env, img);
	if (early)
		(*env)->DeleteLocalRef(env, early);
}

static double ms_since(struct timespec *t)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	double ms = (now.tv_sec - t->tv_sec) * 1e3 + (now.tv_nsec - t->tv_nsec) / 1e6;
	*t = now;
	return ms;
}

/* Bootstrap.start: 0, or the negative errno of the plugin's init (it logged why) or of a broken class path. */
static int bootstrap(JNIEnv *env, const char *helper, struct timespec *t, char *why, size_t len)
{
	jclass cls = (*env)->FindClass(env, "dev/criugpu/api/Bootstrap");
	jmethodID start;
	double created = ms_since(t), prepared = 0;

	if (cls)
		prepare(env, cls, helper), prepared = ms_since(t);
	start = cls ? (*env)->GetStaticMethodID(env, cls, "start", "(J)I") : NULL;
	int rc = start ? (*env)->CallStaticIntMethod(env, cls, start, (jlong)(intptr_t)g.svc) : -ENOENT;
	/* where criu's wait for Java went (issue 23): the JVM, the plugin's prepare, its init */
	shim_log(LOG_DEBUG, "JVM ready in %.1f ms, Bootstrap.prepare %.1f ms, Bootstrap.start %.1f ms", created,
		 prepared, ms_since(t));

	if ((*env)->ExceptionCheck(env)) /* Bootstrap catches what it throws: this is a broken class path */
		(*env)->ExceptionClear(env), rc = start ? -EIO : -ENOENT;
	snprintf(why, len, start ? "Java bootstrap returned %d" : "no Bootstrap.start(long) on the class path (%d)", rc);
	return rc;
}

/*
 * Starts or joins the JVM and runs Bootstrap with the plugin's init: 0, -ECANCELED when the plugin's init refused
 * (it logged why), or another negative errno. On restore every thread Java will ever run starts meanwhile, the next
 * pid parked at the top of the range, so none takes a pid criu restores; Java checks them last.
 */
static int start_java(bool park, const char *helper)
{
	char why[PATH_MAX * 2 + 256] = "";
	JNIEnv *env = NULL;
	sigset_t old;
	int rc = -ENOENT;

	if (read_options(why, sizeof(why)) == 0) {
		block_criu_signals(&old);
		long max = park ? proc_sys("/proc/sys/kernel/pid_max", -1) : -1;
		long parked = max >= 4096 ? proc_sys(NS_LAST_PID, max - 1024) : -1;
		grow_fd_table();
		struct timespec t;
		clock_gettime(CLOCK_MONOTONIC, &t);
		env = create_or_join_jvm(why, sizeof(why));
		rc = env ? bootstrap(env, helper, &t, why, sizeof(why)) : -EIO;
		if (env)
			own_fs();
		if (parked >= 0 && proc_sys(NS_LAST_PID, parked) < 0)
			shim_log(LOG_DEBUG, "could not put ns_last_pid back to %ld", parked);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		flush_jvm_output();
	}
	if (aot_fd >= 0) /* the JVM mapped it, if it started */
		close(aot_fd), aot_fd = -1;
	if (helper && !env) /* nobody will bind its socket: it finds the directory gone and ends */
		remove_dir(helper);
	if (rc)
		shim_log(LOG_ERROR, "%s: %s", env ? "the Java side refused this command" : "cannot start the JVM", why);
	g.java_ready = rc == 0;
	return env && rc ? -ECANCELED : rc;
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
	if (check(SHIM_PLUGIN_NAME, strlen(SHIM_PLUGIN_NAME)))
		/* true also for an image without the plugins field; a name nobody uses tells which it is */
		return check("\x01", 1) ? CRIU_GPU_CLAIM_LEGACY : CRIU_GPU_CLAIM_LISTED;
	return CRIU_GPU_CLAIM_NOT_LISTED;
}

/*
 * DESIGN rule 1: criu creates a restore's first task with a raw clone (no fork handlers run), so a libc lock that any
 * other thread of criu holds at that instant (a malloc arena's, measured) stays locked in the task forever, and its
 * own fork() hangs. So no JVM runs in criu before that clone: criu's JVM starts at POST_FORKING, which criu 4.2+ calls
 * in its main process right after it. What must be decided before the fork (whether the restore can be carried out at
 * all) is decided by the probe: a copy of criu, forked while criu is still single-threaded, that runs the plugin's
 * restore init with a JVM of its own in check-only mode, says why in criu's log and exits. Its exit status is the
 * verdict; its pids are free again once it is reaped, before criu forks anything.
 */
enum { PROBE_REFUSED = 10, PROBE_NO_JVM = 11 };

static int probe_restore(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	pid_t child = fork();
	int status = 0;

	if (child < 0)
		return shim_log(LOG_ERROR, "cannot fork the restore probe: %s", strerror(errno)), -EIO;
	if (child == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != g.criu_pid) /* criu is already gone */
			_exit(PROBE_NO_JVM);
		private_services = *g.svc;
		private_services.flags |= CRIU_GPU_FLAG_RESTORE_CHECK;
		private_services.plan_region = NULL;
		private_services.plan_region_size = 0;
		g.svc = &private_services;
		g.criu_pid = getpid();
		int rc = start_java(true, NULL);
		_exit(rc == 0 ? 0 : rc == -ECANCELED ? PROBE_REFUSED : PROBE_NO_JVM);
	}
	while (waitpid(child, &status, 0) < 0)
		if (errno != EINTR)
			return shim_log(LOG_ERROR, "lost the restore probe (pid %d): %s", (int)child, strerror(errno)), -EIO;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return shim_log(LOG_INFO, "the restore probe (pid %d) found nothing against this restore in %.0f ms; "
				"criu's JVM starts after criu's first fork", (int)child, ms_since(&t)), 0;
	if (WIFEXITED(status) && WEXITSTATUS(status) == PROBE_REFUSED)
		return -ECANCELED; /* it logged why */
	if (!WIFEXITED(status) || WEXITSTATUS(status) != PROBE_NO_JVM)
		shim_log(LOG_ERROR, "the restore probe (pid %d) %s %d", (int)child,
			 WIFSIGNALED(status) ? "was killed by signal" : "exited with", WIFSIGNALED(status) ? WTERMSIG(status)
			 : WEXITSTATUS(status));
	return -EIO;
}

/* Head of the restore's shared area, the rest is the plan's (256 MiB of address space; only pages written cost). */
#define SHARED_AREA_BYTES (256ul << 20)
#define SHARED_HEAD_BYTES 4096ul

static struct criu_gpu_services *shared_services(void)
{
	void *area = mmap(NULL, SHARED_AREA_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return area == MAP_FAILED ? NULL : area;
}

/* The number of threads of this process (/proc/self/status), or -1. */
static long own_threads(void)
{
	char buf[4096];
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	char *line = n > 0 ? (buf[n] = '\0', strstr(buf, "\nThreads:")) : NULL;

	if (fd >= 0)
		close(fd);
	return line ? strtol(line + strlen("\nThreads:"), NULL, 10) : -1;
}

/* criu's main process, right after it cloned the restore's first task: criu's JVM starts now (probe_restore). */
static int t_post_forking(void)
{
	if (!g.enabled || !g.java_deferred || getpid() != g.criu_pid)
		return -ENOTSUP;
	g.java_deferred = false;
	long threads = own_threads();
	if (dlsym(RTLD_DEFAULT, "JNI_GetCreatedJavaVMs")) /* the other plugin's POST_FORKING started it just now */
		shim_log(LOG_INFO, "joins the JVM started after criu's first fork");
	else if (threads == 1)
		shim_log(LOG_INFO, "criu cloned the restore's first task single-threaded; its JVM starts now");
	else
		shim_log(LOG_WARN, "criu had %ld threads when it cloned the restore's first task: something besides this "
			 "plugin runs threads in criu (DESIGN rule 1)", threads);
	g.svc->plan_region = (char *)g.svc + SHARED_HEAD_BYTES;
	g.svc->plan_region_size = SHARED_AREA_BYTES - SHARED_HEAD_BYTES;
	int rc = start_java(true, NULL);
	set_plan_state(rc && (rc == -ECANCELED || g.listed) ? PLAN_FAILED : PLAN_READY);
	if (rc && (rc == -ECANCELED || g.listed))
		return rc; /* criu kills the tasks it forked and fails the restore */
	if (rc) /* criu chained the hooks at init: they stay, and answer -ENOTSUP */
		g.enabled = false, shim_log(LOG_INFO, "disabled: the JVM did not start");
	return -ENOTSUP; /* criu stops at the first plugin that answers anything else: the other one must start too */
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
		if ((rc = probe_restore()) == 0) {
			g.plan_state = (uint32_t *)((char *)shared + SHARED_HEAD_BYTES / 2);
			set_plan_state(PLAN_PENDING);
			return g.java_deferred = true, 0;
		}
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
	sigset_t old;

	if (!g.java_ready || !fn || getpid() != g.criu_pid)
		return;
	block_criu_signals(&old);
	fn(stage, ret);
	own_fs();
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	flush_jvm_output();
}
