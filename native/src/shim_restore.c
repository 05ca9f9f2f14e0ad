/* A restore: the probe that decides before criu forks, the area shared with criu's children, their plan, POST_FORKING. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child_group.h"
#include "gpu_plan.h"
#include "shim.h"

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
int t_RESTORE_EXT_FILE(int id)
{
	if (!g.enabled)
		return -ENOTSUP;
	if (!plan_settled())
		return -EIO;
	return g.svc->child_plan ? gpu_plan_restore_ext_file(g.svc->child_plan, id) : -ENOTSUP;
}

int t_UPDATE_VMA_MAP(const char *path, uint64_t addr, uint64_t old_pgoff, uint64_t *new_pgoff, int *plugin_fd)
{
	if (!g.enabled)
		return -ENOTSUP;
	if (!plan_settled())
		return -EIO;
	return g.svc->child_plan ? gpu_plan_update_vma_map(g.svc->child_plan, path, addr, old_pgoff, new_pgoff, plugin_fd)
				 : -ENOTSUP;
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

/* How long criu waits for the verdict (CRIU_GPU_PROBE_TIMEOUT_S): a JVM start and a restore init take well under a
 * second; a driver or NVML call that hangs must not hold criu, which cannot be told to stop while it waits here. */
static long probe_timeout_ms(void)
{
	const char *v = secure_getenv("CRIU_GPU_PROBE_TIMEOUT_S");
	long s = v ? strtol(v, NULL, 10) : 0;

	return (s > 0 && s <= 86400 ? s : 60) * 1000;
}

/* How long a killed probe may take to die: one asleep in a driver call, uninterruptibly, dies only when the call
 * returns, and criu must not wait for that. */
#define PROBE_REAP_MS 10000

int probe_restore(void)
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
		setsid(); /* a process group of its own: a time-out kills whatever it started with it */
		struct criu_gpu_services *criu_side = g.svc; /* the shared area: criu's process reads what is left here */
		private_services = *g.svc;
		private_services.flags |= CRIU_GPU_FLAG_RESTORE_CHECK;
		private_services.plan_region = NULL;
		private_services.plan_region_size = 0;
		g.svc = &private_services;
		g.criu_pid = getpid();
		int rc = start_java(true, NULL);
		if (rc == 0)
			criu_side->park_last_pid = private_services.park_last_pid;
		_exit(rc == 0 ? 0 : rc == -ECANCELED ? PROBE_REFUSED : PROBE_NO_JVM);
	}
	long limit = probe_timeout_ms();
	switch (await_child_group(child, limit, PROBE_REAP_MS, &status)) {
	case CHILD_EXITED:
		break;
	case CHILD_KILLED:
		return shim_log(LOG_ERROR, "the restore probe (pid %d) gave no verdict within %ld s "
				"(CRIU_GPU_PROBE_TIMEOUT_S): killed it", (int)child, limit / 1000), -EIO;
	case CHILD_INTERRUPTED:
		return shim_log(LOG_ERROR, "criu received a signal to stop while the restore probe (pid %d) ran: killed it",
				(int)child), -EIO;
	case CHILD_STUCK:
		return shim_log(LOG_ERROR, "the restore probe (pid %d) gave no verdict in time and did not die within %d s "
				"of SIGKILL (asleep in the kernel, in a driver call?); criu goes on without reaping it, and its pid "
				"stays taken until it dies", (int)child, PROBE_REAP_MS / 1000), -EIO;
	case CHILD_LOST:
		return shim_log(LOG_ERROR, "lost the restore probe (pid %d): %s", (int)child, strerror(errno)), -EIO;
	}
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

/* A restore's area shared with criu's forked children (256 MiB of address space; only pages written cost): this head,
 * then from SHARED_HEAD_BYTES on the plan. */
#define SHARED_AREA_BYTES (256ul << 20)
#define SHARED_HEAD_BYTES 4096ul

struct shared_head {
	struct criu_gpu_services services; /* g.svc on a restore: what Bootstrap reads */
	uint32_t plan_state;               /* PLAN_*: children wait on it */
};
_Static_assert(sizeof(struct shared_head) <= SHARED_HEAD_BYTES, "the shared head outgrew its page");

struct criu_gpu_services *shared_services(void)
{
	struct shared_head *head = mmap(NULL, SHARED_AREA_BYTES, PROT_READ | PROT_WRITE,
					MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return head == MAP_FAILED ? NULL : &head->services;
}

/* The probe found nothing against the restore: criu's JVM starts at POST_FORKING, and children wait for its plan. */
void defer_java(struct criu_gpu_services *shared)
{
	g.plan_state = &((struct shared_head *)shared)->plan_state;
	set_plan_state(PLAN_PENDING);
	g.java_deferred = true;
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
int t_POST_FORKING(void)
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
