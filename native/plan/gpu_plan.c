/*
 * The restore-plan executor (see gpu_plan.h). Runs inside a task criu forked: no JVM, no locks a parent thread
 * could hold, memory only from mmap. Its state (the slots' fds, the high-fd cursor, which mappings moved) belongs
 * to the task; each task has its own copy.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gpu_plan.h"

#define LOG_ERROR 1
#define LOG_DEBUG 4
#define IOCTL_RETRIES 200

static struct {
	const struct gpu_plan *plan;
	uint32_t num_slots, num_vmas; /* what slots and enabled were sized for */
	int *slots;       /* fd + 1 per slot; 0 = not open */
	uint8_t *enabled; /* per mapping row */
	size_t size;
	int fd_next;
} st;

/* Is the state this task's for `plan`? (Another plan may since have been built at the same address.) */
static int bound(const struct gpu_plan *plan)
{
	return st.plan == plan && st.num_slots == plan->num_slots && st.num_vmas == plan->num_vmas;
}

static int bind_state(const struct gpu_plan *plan)
{
	if (bound(plan))
		return 0;
	if (st.size)
		munmap(st.slots, st.size);
	st.size = (plan->num_slots + 1) * sizeof(int) + plan->num_vmas + 1;
	void *p = mmap(NULL, st.size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		st.size = 0;
		st.plan = NULL;
		return -ENOMEM;
	}
	st.slots = p;
	st.enabled = (uint8_t *)(st.slots + plan->num_slots + 1);
	st.plan = plan;
	st.num_slots = plan->num_slots;
	st.num_vmas = plan->num_vmas;
	st.fd_next = -1;
	return 0;
}

static int failed(const struct gpu_plan *plan, const struct gpu_plan_seam *seam, const struct gpu_plan_step *s, int err)
{
	if (err <= 0)
		err = EIO; /* a call that failed without saying why must still fail the step */
	seam->log(LOG_ERROR, "%s: %s failed: %s\n", plan->name, s->what, strerror(err));
	return -err;
}

/* One line naming the plan, the program's file id, the step and why its numbers do not fit; nothing was touched. */
__attribute__((format(printf, 5, 6))) static int refuse(const struct gpu_plan *plan, const struct gpu_plan_seam *seam,
							  int32_t file_id, const struct gpu_plan_step *s,
							  const char *fmt, ...)
{
	char why[192];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	seam->log(LOG_ERROR, "%s: file %d: %s: %s\n", plan->name, file_id, s->what, why);
	return -EINVAL;
}

/* Does [at, at + n) lie within [0, len)? (Overflow-safe: at and len come from the plan.) */
static int fits(uint64_t at, uint64_t n, uint64_t len)
{
	return at <= len && n <= len - at;
}

static int uses_slot(uint32_t op)
{
	return op == GPU_PLAN_OPEN || op == GPU_PLAN_IOCTL || op == GPU_PLAN_PUT_FD || op == GPU_PLAN_RETURN ||
	       op == GPU_PLAN_RETURN_DUP;
}

/*
 * Checks every number of step s against the memory it names before the step runs: offsets, counts and ioctl sizes
 * come from images and may be anything. 0, or -EINVAL after one line.
 */
static int check_step(const struct gpu_plan *plan, const struct gpu_plan_seam *seam, int32_t file_id,
		      const struct gpu_plan_step *s)
{
	const unsigned long long len = s->len, fd_len = s->fd_len, arg = s->arg, arg2 = s->arg2;
	if (s->op < GPU_PLAN_OPEN || s->op > GPU_PLAN_PUT_PID)
		return refuse(plan, seam, file_id, s, "unknown op %u", s->op);
	if ((!s->buf && len) || (!s->fd_buf && fd_len))
		return refuse(plan, seam, file_id, s, "a buffer of %llu bytes (fd buffer %llu) at NULL", len, fd_len);
	if (uses_slot(s->op) && (s->slot < 0 || (uint32_t)s->slot >= plan->num_slots))
		return refuse(plan, seam, file_id, s, "slot %d is not one of the plan's %u", s->slot, plan->num_slots);
	switch (s->op) {
	case GPU_PLAN_OPEN:
		if (!len || !memchr(s->buf, 0, s->len))
			return refuse(plan, seam, file_id, s, "the path does not end within its %llu bytes", len);
		return 0;
	case GPU_PLAN_IOCTL:
		if (arg > 0xffffffffull)
			return refuse(plan, seam, file_id, s, "0x%llx is not an ioctl request", arg);
		if (_IOC_SIZE(arg) > len)
			return refuse(plan, seam, file_id, s, "request 0x%llx copies %llu bytes, the buffer has %llu", arg,
				      (unsigned long long)_IOC_SIZE(arg), len);
		return 0;
	case GPU_PLAN_REQUIRE:
	case GPU_PLAN_PUT_FD:
	case GPU_PLAN_PUT_PID:
		if (!fits(arg2, sizeof(uint32_t), len))
			return refuse(plan, seam, file_id, s, "the u32 at offset %llu lies outside the %llu-byte buffer",
				      arg2, len);
		return 0;
	case GPU_PLAN_SEND_FDS:
		if (arg2 && !s->fd_offsets)
			return refuse(plan, seam, file_id, s, "%llu fds but no offsets", arg2);
		for (uint64_t i = 0; i < s->arg2; i++)
			if (!fits(s->fd_offsets[i], sizeof(uint32_t), fd_len))
				return refuse(plan, seam, file_id, s, "fd %llu at offset %llu lies outside the %llu-byte fd buffer",
					      (unsigned long long)i, (unsigned long long)s->fd_offsets[i], fd_len);
		return 0;
	case GPU_PLAN_ENABLE_VMAS:
		if (!fits(arg, arg2, plan->num_vmas))
			return refuse(plan, seam, file_id, s, "%llu mapping rows from row %llu are not all among the plan's %u",
				      arg2, arg, plan->num_vmas);
		return 0;
	default:
		return 0;
	}
}

static int slot_fd(const struct gpu_plan *plan, int32_t slot)
{
	if (slot < 0 || (uint32_t)slot >= plan->num_slots || !st.slots[slot])
		return -EBADF;
	return st.slots[slot] - 1;
}

/* Moves fd to the first free number at or above the task's image fds. */
static int move_high(const struct gpu_plan_seam *seam, int fd)
{
	if (st.fd_next < 0)
		st.fd_next = seam->find_unused_fd(getpid());
	if (st.fd_next < 0) {
		seam->close(fd);
		return st.fd_next;
	}
	int high = fcntl(fd, F_DUPFD_CLOEXEC, st.fd_next);
	int err = errno;
	seam->close(fd);
	if (high < 0)
		return -err;
	st.fd_next = high + 1;
	return high;
}

static int step_open(const struct gpu_plan *plan, const struct gpu_plan_seam *seam, const struct gpu_plan_step *s)
{
	if (st.slots[s->slot])
		return 0;
	int fd = seam->open((const char *)s->buf, (int)s->arg);
	if (fd < 0)
		return failed(plan, seam, s, errno);
	if (s->arg2) {
		fd = move_high(seam, fd);
		if (fd < 0)
			return failed(plan, seam, s, -fd);
	}
	st.slots[s->slot] = fd + 1;
	return 0;
}

static int step_ioctl(const struct gpu_plan *plan, const struct gpu_plan_seam *seam, const struct gpu_plan_step *s)
{
	int fd = slot_fd(plan, s->slot);
	if (fd < 0)
		return failed(plan, seam, s, -fd);
	for (int tries = 0;; tries++) {
		if (seam->ioctl(fd, (unsigned long)s->arg, s->buf) >= 0)
			return 0;
		if ((errno != EINTR && errno != EAGAIN) || tries >= IOCTL_RETRIES)
			return failed(plan, seam, s, errno);
	}
}

static int step_require(const struct gpu_plan *plan, const struct gpu_plan_seam *seam, const struct gpu_plan_step *s)
{
	uint32_t v;
	memcpy(&v, (const uint8_t *)s->buf + s->arg2, sizeof(v));
	uint32_t low = (uint32_t)s->arg, high = (uint32_t)(s->arg >> 32);
	if (v >= low && v <= high)
		return 0;
	seam->log(LOG_ERROR, "%s: %s (found %u)\n", plan->name, s->what, v);
	return -ENOTSUP;
}

static int step_put_fd(const struct gpu_plan *plan, const struct gpu_plan_seam *seam, const struct gpu_plan_step *s)
{
	int fd = slot_fd(plan, s->slot);
	if (fd < 0)
		return failed(plan, seam, s, -fd);
	uint32_t v = (uint32_t)fd;
	memcpy((uint8_t *)s->buf + s->arg2, &v, sizeof(v));
	return 0;
}

static int send_all(int sk, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	while (len) {
		ssize_t n = send(sk, p, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int send_chunk(int sk, const int *fds, size_t n)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * GPU_PLAN_FDS_PER_MSG)];
	} control;
	char byte = 0;
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr msg = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = control.buf,
		.msg_controllen = CMSG_SPACE(sizeof(int) * n),
	};
	memset(&control, 0, sizeof(control));
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int) * n);
	memcpy(CMSG_DATA(c), fds, sizeof(int) * n);
	for (;;) {
		ssize_t r = sendmsg(sk, &msg, MSG_NOSIGNAL);
		if (r == 1)
			return 0;
		if (r < 0 && errno == EINTR)
			continue;
		return r < 0 ? -errno : -EIO;
	}
}

static int step_put_pid(const struct gpu_plan_step *s)
{
	uint32_t v = (uint32_t)getpid();
	memcpy((uint8_t *)s->buf + s->arg2, &v, sizeof(v));
	return 0;
}

static int step_send_fds(const struct gpu_plan *plan, const struct gpu_plan_seam *seam, const struct gpu_plan_step *s)
{
	int fds[GPU_PLAN_FDS_PER_MSG];
	int ret = 0;
	errno = 0;
	int sk = seam->fdstore_get((int)s->arg);

	if (sk < 0)
		ret = errno ? -errno : -EBADF;
	if (!ret)
		ret = send_all(sk, s->buf, s->len);
	for (uint64_t i = 0; i < s->arg2;) {
		size_t n = 0;
		for (; n < GPU_PLAN_FDS_PER_MSG && i < s->arg2; i++) {
			uint32_t fd;
			memcpy(&fd, (const uint8_t *)s->fd_buf + s->fd_offsets[i], sizeof(fd));
			if (fd == GPU_PLAN_NO_FD) {
				if (!ret)
					ret = -EBADF;
				continue;
			}
			fds[n++] = (int)fd;
		}
		if (!ret && n)
			ret = send_chunk(sk, fds, n);
		for (size_t k = 0; k < n; k++)
			seam->close(fds[k]);
	}
	if (sk >= 0)
		close(sk);
	return ret ? failed(plan, seam, s, -ret) : 0;
}

static void step_enable_vmas(const struct gpu_plan_step *s)
{
	memset(st.enabled + s->arg, 1, s->arg2);
}

static int run(const struct gpu_plan *plan, const struct gpu_plan_seam *seam, const struct gpu_plan_program *p)
{
	for (uint32_t i = 0; i < p->num_steps; i++) {
		const struct gpu_plan_step *s = &p->steps[i];
		int fd, ret = check_step(plan, seam, p->file_id, s);
		if (ret)
			return ret;
		switch (s->op) {
		case GPU_PLAN_OPEN: ret = step_open(plan, seam, s); break;
		case GPU_PLAN_IOCTL: ret = step_ioctl(plan, seam, s); break;
		case GPU_PLAN_REQUIRE: ret = step_require(plan, seam, s); break;
		case GPU_PLAN_PUT_FD: ret = step_put_fd(plan, seam, s); break;
		case GPU_PLAN_SEND_FDS: ret = step_send_fds(plan, seam, s); break;
		case GPU_PLAN_ENABLE_VMAS: step_enable_vmas(s); break;
		case GPU_PLAN_PUT_PID: ret = step_put_pid(s); break;
		case GPU_PLAN_RETURN:
			fd = slot_fd(plan, s->slot);
			if (fd < 0)
				return failed(plan, seam, s, -fd);
			st.slots[s->slot] = 0;
			return fd;
		case GPU_PLAN_RETURN_DUP:
			fd = slot_fd(plan, s->slot);
			if (fd >= 0 && (fd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0)
				fd = -errno;
			return fd < 0 ? failed(plan, seam, s, -fd) : fd;
		}
		if (ret)
			return ret;
	}
	seam->log(LOG_ERROR, "%s: file %d: the program ended after its %u steps without handing an fd to criu\n", plan->name,
		  p->file_id, p->num_steps);
	return -EINVAL;
}

/* Closes the slots a failed program left open, so the task keeps no half-restored device fds. */
static void close_slots(const struct gpu_plan *plan, const struct gpu_plan_seam *seam, const int *before)
{
	for (uint32_t i = 0; i < plan->num_slots; i++) {
		if (st.slots[i] && !before[i]) {
			seam->close(st.slots[i] - 1);
			st.slots[i] = 0;
		}
	}
}

int gpu_plan_restore_ext_file(void *ctx, int id)
{
	const struct gpu_plan_child *c = ctx;
	const struct gpu_plan *plan = c->plan;
	if (!plan || plan->version != GPU_PLAN_VERSION)
		return -ENOTSUP;
	for (uint32_t i = 0; i < plan->num_programs; i++) {
		if (plan->programs[i].file_id != id)
			continue;
		int ret = bind_state(plan);
		if (ret)
			return ret;
		size_t before_size = (plan->num_slots + 1) * sizeof(int);
		int *before = mmap(NULL, before_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (before == MAP_FAILED)
			return -ENOMEM;
		memcpy(before, st.slots, plan->num_slots * sizeof(int));
		ret = run(plan, c->seam, &plan->programs[i]);
		if (ret < 0)
			close_slots(plan, c->seam, before);
		munmap(before, before_size);
		if (ret >= 0)
			c->seam->log(LOG_DEBUG, "%s: restored file %d as fd %d\n", plan->name, id, ret);
		return ret;
	}
	return -ENOTSUP;
}

/* Does `path` (with every run of '/' collapsed) match `p`? */
static int path_matches(const char *path, const struct gpu_plan_path *p)
{
	char buf[256];
	size_t n = 0;
	for (const char *q = path; *q && n + 1 < sizeof(buf); q++) {
		if (*q == '/' && n > 0 && buf[n - 1] == '/')
			continue;
		buf[n++] = *q;
	}
	buf[n] = '\0';
	size_t len = strlen(p->pattern);
	return p->prefix ? strncmp(buf, p->pattern, len) == 0 : strcmp(buf, p->pattern) == 0;
}

int gpu_plan_update_vma_map(void *ctx, const char *path, uint64_t addr, uint64_t old_offset, uint64_t *new_offset,
			    int *plugin_fd)
{
	const struct gpu_plan_child *c = ctx;
	const struct gpu_plan *plan = c->plan;
	if (!plan || plan->version != GPU_PLAN_VERSION)
		return -ENOTSUP;
	const struct gpu_plan_path *claimed = NULL;
	for (uint32_t i = 0; i < plan->num_paths && !claimed; i++)
		if (path_matches(path, &plan->paths[i]))
			claimed = &plan->paths[i];
	if (!claimed)
		return -ENOTSUP;
	if (claimed->substitute) {
		int fd = c->seam->open(claimed->substitute, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		*new_offset = 0;
		*plugin_fd = fd;
		return 1;
	}
	if (!bound(plan))
		return 0; /* nothing restored in this task */
	for (uint32_t i = 0; i < plan->num_vmas; i++) {
		const struct gpu_plan_vma *v = &plan->vmas[i];
		if (!st.enabled[i] || v->addr != addr || v->old_offset != old_offset)
			continue;
		*new_offset = *v->new_offset;
		if (claimed->reopen) {
			*plugin_fd = -1;
			return 1;
		}
		int fd = slot_fd(plan, v->slot);
		if (fd >= 0 && (fd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0)
			fd = -errno;
		if (fd < 0)
			return fd;
		*plugin_fd = fd;
		return 1;
	}
	return 0;
}
