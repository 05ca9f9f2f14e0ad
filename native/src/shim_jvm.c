/* The JVM in criu: its options (checked), its start or join with criu's signals held off, Bootstrap, the early helper. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <jni.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "helper_launch.h"
#include "shim.h"

#define JAVA_HOME_OPTION "-Dcriu.gpu.java.home="
#define NS_LAST_PID "/proc/sys/kernel/ns_last_pid"

/* What the JVM prints (warnings, -Xlog) comes here in pieces from any of its threads, not to criu's stderr; as
 * print_on_level is not thread-safe, whole lines wait here until criu's main thread flushes them. */
static pthread_mutex_t jvm_out_lock = PTHREAD_MUTEX_INITIALIZER;
static char jvm_out[4096];
static size_t jvm_out_len;
static bool jvm_starting; /* stderr is a memfd while JNI_CreateJavaVM runs: its warnings bypass the hook in part */

void flush_jvm_output(void)
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

void block_criu_signals(struct criu_signals *saved)
{
	sigset_t set;

	sigemptyset(&set);
	for (const int *s = (const int[]){ SIGCHLD, SIGALRM, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGUSR1, 0 }; *s; s++)
		sigaddset(&set, *s);
	sigaction(SIGCHLD, NULL, &saved->chld);
	pthread_sigmask(SIG_BLOCK, &set, &saved->mask);
}

/*
 * The JDK sets SIGCHLD to SIG_DFL the first time Java starts a process (cuda-checkpoint, nvidia-smi), and criu's
 * restore learns only through its SIGCHLD handler that a task stopped or died: without it, a restored container's
 * init that gets a signal under criu's ptrace (its zombie child dying) stays stopped, and criu waits for it forever
 * (measured: containerd's StartContainer never returned). So criu gets its handler back before each hook returns.
 */
void restore_criu_signals(const struct criu_signals *saved)
{
	sigaction(SIGCHLD, &saved->chld, NULL);
	pthread_sigmask(SIG_SETMASK, &saved->mask, NULL);
}

/*
 * criu's main thread gets an fs_struct (root, cwd, umask) of its own whenever Java has run on it: the JVM's threads,
 * and those a hook starts, share the one they were made with (pthreads clone with CLONE_FS), and the kernel refuses
 * setns() into a mount namespace to a thread whose fs_struct is shared (EINVAL). criu enters its tasks' mount
 * namespace to dump a container's mounts: measured with podman on the GPU host, "Can't setns 33/mnt: Invalid
 * argument" once the JVM ran in criu. unshare(CLONE_FS) gives only the calling thread a private copy (a no-op when it
 * holds the only reference); the JVM's threads keep the host's view, which is what they need.
 */
void own_fs(void)
{
	if (unshare(CLONE_FS))
		shim_log(LOG_WARN, "unshare(CLONE_FS) failed (%s): criu may not be able to enter mount namespaces", strerror(errno));
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

const char *launch_helper(void)
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

double ms_since(struct timespec *t)
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
 * pid parked below a window the probe found free of the image's ids (else near the top of the range), so none takes
 * a pid criu restores; Java checks them last.
 */
int start_java(bool park, const char *helper)
{
	char why[PATH_MAX * 2 + 256] = "";
	JNIEnv *env = NULL;
	struct criu_signals old;
	int rc = -ENOENT;

	if (read_options(why, sizeof(why)) == 0) {
		block_criu_signals(&old);
		long max = park ? proc_sys("/proc/sys/kernel/pid_max", -1) : -1;
		long at = g.svc->park_last_pid > 0 && g.svc->park_last_pid < max - 64 ? g.svc->park_last_pid : max - 1024;
		long parked = max >= 4096 ? proc_sys(NS_LAST_PID, at) : -1;
		if (parked >= 0)
			shim_log(LOG_DEBUG, "pids parked after %ld while the JVM starts (%s)", at,
				 at == g.svc->park_last_pid ? "the probe's window free of the image's ids" : "1024 below pid_max");
		grow_fd_table();
		struct timespec t;
		clock_gettime(CLOCK_MONOTONIC, &t);
		env = create_or_join_jvm(why, sizeof(why));
		rc = env ? bootstrap(env, helper, &t, why, sizeof(why)) : -EIO;
		if (env)
			own_fs();
		if (parked >= 0 && proc_sys(NS_LAST_PID, parked) < 0)
			shim_log(LOG_DEBUG, "could not put ns_last_pid back to %ld", parked);
		restore_criu_signals(&old);
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
