/*
 * Fork-safe restore executor (see amdgpu_restore.h). Runs inside a task criu forked: no JVM, no locks that a
 * parent thread could hold, memory only from mmap. State is per process (each restored task has its own copy).
 *
 * BO contents are not copied here: the dma-buf fds RESTORE returns go to criu's main process over the plan's
 * refill socket (see amdgpu_restore.h), which fills them with SDMA while this task goes on restoring.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/kfd_ioctl.h>

#include "amdgpu_restore.h"

#define LOG_ERROR 1
#define LOG_DEBUG 4
#define MAX_MINOR 256
#define MIN_KFD_MINOR 8

struct vma_update {
	uint64_t addr;
	uint64_t old_offset;
	uint64_t new_offset;
	uint32_t minor; /* render node of the BO's GPU */
	uint32_t pad;
};

struct vma_chunk {
	struct vma_chunk *next;
	size_t count;
	size_t map_size;
	struct vma_update entries[];
};

static int render_fds[MAX_MINOR]; /* fd + 1; 0 = not open in this task */
static int fd_next = -1;
static struct vma_chunk *vmas;

static void *alloc_pages(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static const struct amdgpu_plan_kfd *kfd_entry(const struct amdgpu_plan *plan, int id)
{
	for (uint32_t i = 0; i < plan->num_kfd; i++)
		if (plan->kfd[i].file_id == id)
			return &plan->kfd[i];
	return NULL;
}

static const struct amdgpu_plan_render *render_entry(const struct amdgpu_plan *plan, int id)
{
	for (uint32_t i = 0; i < plan->num_render; i++)
		if (plan->render[i].file_id == id)
			return &plan->render[i];
	return NULL;
}

/* Moves fd to the first free number at or above fd_next, so it never takes a number an image fd needs. */
static int move_high(const struct amdgpu_seam *seam, int fd)
{
	if (fd_next < 0)
		fd_next = seam->find_unused_fd(getpid());
	if (fd_next < 0)
		return fd_next;
	int high = fcntl(fd, F_DUPFD_CLOEXEC, fd_next);
	int err = errno;
	seam->close(fd);
	if (high < 0)
		return -err;
	fd_next = high + 1;
	return high;
}

/* The render fd this task keeps for a GPU, opened on first use. */
static int render_fd(const struct amdgpu_seam *seam, uint32_t minor)
{
	if (minor >= MAX_MINOR)
		return -EINVAL;
	if (render_fds[minor])
		return render_fds[minor] - 1;
	char path[64];
	snprintf(path, sizeof(path), "/dev/dri/renderD%u", minor);
	int fd = seam->open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		int err = errno;
		seam->log(LOG_ERROR, "amdgpu: cannot open %s: %s\n", path, strerror(err));
		return -err;
	}
	fd = move_high(seam, fd);
	if (fd < 0)
		return fd;
	render_fds[minor] = fd + 1;
	return fd;
}

static uint32_t minor_of_gpu(const struct amdgpu_plan_kfd *k, uint32_t user_gpu_id)
{
	for (uint32_t i = 0; i < k->num_gpus; i++)
		if (k->gpus[i].user_gpu_id == user_gpu_id)
			return k->gpus[i].render_minor;
	return MAX_MINOR;
}

static int check_version(const struct amdgpu_seam *seam, int kfd)
{
	struct kfd_ioctl_get_version_args v = { 0 };
	if (seam->ioctl(kfd, AMDKFD_IOC_GET_VERSION, &v) < 0)
		return -errno;
	if (v.major_version != 1 || v.minor_version < MIN_KFD_MINOR) {
		seam->log(LOG_ERROR, "amdgpu: KFD ioctl API %u.%u lacks CRIU support (need 1.%d)\n", v.major_version,
			  v.minor_version, MIN_KFD_MINOR);
		return -ENOTSUP;
	}
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

static int send_fds(int sk, const int *fds, uint32_t n)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * AMDGPU_REFILL_FDS_PER_MSG)];
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

/* Sends the refill request of KFD file `file_id`: n BO indices and their dma-buf fds. */
static int send_refill(const struct amdgpu_plan *plan, int32_t file_id, const uint32_t *index, const int *fds,
		       uint32_t n)
{
	int sk = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (sk < 0)
		return -errno;
	int ret = 0;
	if (connect(sk, (const struct sockaddr *)plan->refill_addr, plan->refill_addr_len) < 0) {
		ret = -errno;
		goto out;
	}
	struct amdgpu_refill_head head = { .magic = AMDGPU_REFILL_MAGIC, .file_id = file_id, .num_fds = n };
	ret = send_all(sk, &head, sizeof(head));
	if (!ret)
		ret = send_all(sk, index, sizeof(*index) * n);
	for (uint32_t sent = 0; !ret && sent < n; sent += AMDGPU_REFILL_FDS_PER_MSG) {
		uint32_t chunk = n - sent < AMDGPU_REFILL_FDS_PER_MSG ? n - sent : AMDGPU_REFILL_FDS_PER_MSG;
		ret = send_fds(sk, fds + sent, chunk);
	}
out:
	close(sk);
	return ret;
}

static int criu_restore(const struct amdgpu_plan *plan, const struct amdgpu_seam *seam, int kfd,
			const struct amdgpu_plan_kfd *k)
{
	size_t nbos = k->num_bos ? k->num_bos : 1;
	size_t dev_size = (k->num_gpus ? k->num_gpus : 1) * sizeof(struct kfd_criu_device_bucket);
	size_t bo_size = nbos * sizeof(struct kfd_criu_bo_bucket);
	size_t chunk_size = sizeof(struct vma_chunk) + nbos * sizeof(struct vma_update);
	size_t refill_size = nbos * (sizeof(uint32_t) + sizeof(int));
	struct kfd_criu_device_bucket *devs = alloc_pages(dev_size);
	struct kfd_criu_bo_bucket *bos = alloc_pages(bo_size);
	struct vma_chunk *chunk = alloc_pages(chunk_size);
	uint32_t *refill_index = alloc_pages(refill_size);
	int *refill_fds = refill_index ? (int *)(refill_index + nbos) : NULL;
	int ret = 0;

	if (!devs || !bos || !chunk || !refill_index) {
		ret = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < k->num_gpus; i++) {
		int drm = render_fd(seam, k->gpus[i].render_minor);
		if (drm < 0) {
			ret = drm;
			goto out;
		}
		devs[i].user_gpu_id = k->gpus[i].user_gpu_id;
		devs[i].actual_gpu_id = k->gpus[i].actual_gpu_id;
		devs[i].drm_fd = (uint32_t)drm;
	}
	for (uint32_t i = 0; i < k->num_bos; i++) {
		bos[i].addr = k->bos[i].addr;
		bos[i].size = k->bos[i].size;
		bos[i].offset = k->bos[i].offset;
		bos[i].gpu_id = k->bos[i].gpu_id;
		bos[i].alloc_flags = k->bos[i].alloc_flags;
		bos[i].dmabuf_fd = KFD_INVALID_FD;
	}
	struct kfd_ioctl_criu_args args = {
		.devices = (uintptr_t)devs,
		.bos = (uintptr_t)bos,
		.priv_data = (uintptr_t)k->priv,
		.priv_data_size = k->priv_size,
		.num_devices = k->num_gpus,
		.num_bos = k->num_bos,
		.num_objects = k->num_objects,
		.op = KFD_CRIU_OP_RESTORE,
	};
	int r;
	int tries = 0;
	do {
		r = seam->ioctl(kfd, AMDKFD_IOC_CRIU_OP, &args);
	} while (r < 0 && (errno == EINTR || errno == EAGAIN) && ++tries < 200);
	if (r < 0) {
		ret = -errno;
		seam->log(LOG_ERROR, "amdgpu: KFD RESTORE of file %d failed: %s\n", k->file_id, strerror(errno));
		goto out;
	}
	const uint32_t mapped = KFD_IOC_ALLOC_MEM_FLAGS_VRAM | KFD_IOC_ALLOC_MEM_FLAGS_GTT |
				KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP | KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL;
	uint32_t nfds = 0;
	for (uint32_t i = 0; i < k->num_bos; i++) {
		if (bos[i].dmabuf_fd == KFD_INVALID_FD)
			continue;
		refill_index[nfds] = i;
		refill_fds[nfds++] = (int)bos[i].dmabuf_fd;
	}
	if (plan->refill_addr_len) {
		ret = send_refill(plan, k->file_id, refill_index, refill_fds, nfds);
		if (ret)
			seam->log(LOG_ERROR, "amdgpu: KFD file %d: cannot hand %u dma-buf fds to criu for the BO contents: %s\n",
				  k->file_id, nfds, strerror(-ret));
	}
	for (uint32_t i = 0; i < nfds; i++)
		seam->close(refill_fds[i]);
	if (ret)
		goto out;
	chunk->map_size = chunk_size;
	for (uint32_t i = 0; i < k->num_bos; i++) {
		if (!(bos[i].alloc_flags & mapped))
			continue;
		struct vma_update *u = &chunk->entries[chunk->count++];
		u->addr = bos[i].addr;
		u->old_offset = bos[i].offset;
		u->new_offset = bos[i].restored_offset;
		u->minor = minor_of_gpu(k, bos[i].gpu_id);
	}
	chunk->next = vmas;
	vmas = chunk;
	chunk = NULL;
out:
	if (devs)
		munmap(devs, dev_size);
	if (bos)
		munmap(bos, bo_size);
	if (chunk)
		munmap(chunk, chunk_size);
	if (refill_index)
		munmap(refill_index, refill_size);
	return ret;
}

static int restore_kfd(const struct amdgpu_plan *plan, const struct amdgpu_seam *seam, const struct amdgpu_plan_kfd *k)
{
	int kfd = seam->open("/dev/kfd", O_RDWR | O_CLOEXEC);
	if (kfd < 0) {
		int err = errno;
		seam->log(LOG_ERROR, "amdgpu: cannot open /dev/kfd: %s\n", strerror(err));
		return -err;
	}
	if (fd_next < 0)
		fd_next = seam->find_unused_fd(k->vpid);
	int ret = check_version(seam, kfd);
	if (!ret)
		ret = criu_restore(plan, seam, kfd, k);
	if (ret) {
		seam->close(kfd);
		return ret;
	}
	seam->log(LOG_DEBUG, "amdgpu: restored KFD file %d (%u GPUs, %u BOs)\n", k->file_id, k->num_gpus, k->num_bos);
	return kfd;
}

int amdgpu_restore_file(const struct amdgpu_plan *plan, const struct amdgpu_seam *seam, int id)
{
	if (!plan || plan->version != AMDGPU_PLAN_VERSION)
		return -ENOTSUP;
	const struct amdgpu_plan_kfd *k = kfd_entry(plan, id);
	if (k)
		return restore_kfd(plan, seam, k);
	const struct amdgpu_plan_render *r = render_entry(plan, id);
	if (!r)
		return -ENOTSUP;
	int fd = render_fd(seam, r->render_minor);
	if (fd < 0)
		return fd;
	int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	return copy < 0 ? -errno : copy;
}

/* Copies path into buf with every run of '/' collapsed to one. */
static void collapse_slashes(const char *path, char *buf, size_t size)
{
	size_t n = 0;
	for (const char *p = path; *p && n + 1 < size; p++) {
		if (*p == '/' && n > 0 && buf[n - 1] == '/')
			continue;
		buf[n++] = *p;
	}
	buf[n] = '\0';
}

int amdgpu_update_vma(const struct amdgpu_plan *plan, const struct amdgpu_seam *seam, const char *path,
		      uint64_t addr, uint64_t old_offset, uint64_t *new_offset, int *plugin_fd)
{
	if (!plan || plan->version != AMDGPU_PLAN_VERSION)
		return -ENOTSUP;
	char p[256];
	collapse_slashes(path, p, sizeof(p));
	int is_render = strncmp(p, "/dev/dri/renderD", 16) == 0;
	int is_kfd = strcmp(p, "/dev/kfd") == 0;
	if (!is_render && !is_kfd)
		return -ENOTSUP;
	for (struct vma_chunk *c = vmas; c; c = c->next) {
		for (size_t i = 0; i < c->count; i++) {
			struct vma_update *u = &c->entries[i];
			if (u->addr != addr || u->old_offset != old_offset)
				continue;
			*new_offset = u->new_offset;
			if (is_kfd) {
				*plugin_fd = -1;
				return 1;
			}
			int fd = render_fd(seam, u->minor);
			if (fd < 0)
				return fd;
			*plugin_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
			return *plugin_fd < 0 ? -errno : 1;
		}
	}
	return 0;
}

int amdgpu_child_restore_ext_file(void *ctx, int id)
{
	const struct amdgpu_child *c = ctx;
	return amdgpu_restore_file(c->plan, c->seam, id);
}

int amdgpu_child_update_vma_map(void *ctx, const char *path, uint64_t addr, uint64_t old_pgoff, uint64_t *new_pgoff,
				int *plugin_fd)
{
	const struct amdgpu_child *c = ctx;
	return amdgpu_update_vma(c->plan, c->seam, path, addr, old_pgoff, new_pgoff, plugin_fd);
}
