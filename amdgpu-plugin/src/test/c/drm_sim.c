/*
 * The libdrm_amdgpu entry points the SDMA BO copy uses, simulated inside libkfdsim.so (names prefixed
 * kfdsim_, signatures and struct layouts as in libdrm/amdgpu.h). A "device" is a simulated render fd
 * (kfdsim_open of /dev/dri/renderD<minor>, a memfd named kfdsim-render-<minor>). BOs are host memory: an imported
 * dma-buf is a shared mapping of the BO's memfd, a userptr BO is the caller's buffer, an allocated BO is heap
 * memory. GPU virtual addresses are handed out per device and mapped to BOs with bo_va_op. cs_submit *executes*
 * the IB: SDMA linear-copy packets move bytes between mapped VAs of BOs in the request's BO list; anything that
 * is not a copy or a NOP, or that touches an unmapped range, fails the submission with nothing copied.
 * A fault switch makes the n-th submission of one render minor fail outright or copy only part of its first
 * packet and never signal its fence (a hung engine). All state sits behind one mutex: dump threads run one per GPU.
 * As libdrm and the kernel do, a BO's size is whole pages and a VA mapping covers whole pages. Each submission that
 * copies goes into the simulator's trace (kfd_sim.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kfd_sim.h"

#define MAX_MAPS 64
#define MAX_LIST 8
#define MINORS 256
#define HANDLE_TYPE_DMA_BUF_FD 2
#define VA_OP_MAP 1
#define VA_OP_UNMAP 2
#define HW_IP_DMA 2
#define FAMILY_AI 141
#define PAGE 4096u

/* libdrm/amdgpu.h layouts (checked against the real header for the Java bindings by LayoutConformanceTest). */
struct amdgpu_bo_alloc_request { uint64_t alloc_size, phys_alignment; uint32_t preferred_heap; uint64_t flags; };
struct amdgpu_bo_import_result { void *buf_handle; uint64_t alloc_size; };
struct amdgpu_cs_ib_info { uint64_t flags, ib_mc_address; uint32_t size; };
struct amdgpu_cs_request {
	uint64_t flags;
	unsigned ip_type, ip_instance;
	uint32_t ring;
	void *resources;
	uint32_t number_of_dependencies;
	void *dependencies;
	uint32_t number_of_ibs;
	struct amdgpu_cs_ib_info *ibs;
	uint64_t seq_no;
	void *fence_info_handle;
	uint64_t fence_info_offset;
};
struct amdgpu_cs_fence { void *context; uint32_t ip_type, ip_instance, ring; uint64_t fence; };
struct gpu_info_head { uint32_t asic_id, chip_rev, chip_external_rev, family_id; };

enum bo_kind { BO_IMPORTED, BO_USERPTR, BO_ALLOCATED };

struct sim_dev;
struct sim_bo { struct sim_dev *dev; enum bo_kind kind; uint8_t *cpu; uint64_t size; };
struct sim_map { int used; uint64_t va, size; struct sim_bo *bo; };
struct sim_dev { int minor, fd; uint64_t next_va; struct sim_map maps[MAX_MAPS]; };
struct sim_va { struct sim_dev *dev; uint64_t va, size; };
struct sim_list { struct sim_dev *dev; uint32_t n; struct sim_bo *bos[MAX_LIST]; };
struct sim_ctx { struct sim_dev *dev; uint64_t seq, completed; };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int live;                 /* devices, BOs, VA ranges, lists and contexts not yet freed */
static unsigned submits[MINORS]; /* submissions per render minor since the last reset */
static int fault_minor = -1, fault_mode;
static unsigned fault_at;
static uint64_t copied_bytes;

enum { FAULT_NONE, FAULT_SUBMIT_FAILS, FAULT_FENCE_HANGS, FAULT_FENCE_WAITS };
/* FAULT_FENCE_WAITS: the fence wait of that submission blocks, as AMDGPU_TIMEOUT_INFINITE on a busy engine does,
 * until kfdsim_drm_release_fences() (or a reset); the copy is then complete. */
static pthread_cond_t fences_released = PTHREAD_COND_INITIALIZER;
static struct sim_ctx *held_ctx;
/* kfdsim_drm_release_fences() came: a FAULT_FENCE_WAITS submission made after it (its copy thread was late) no
 * longer waits, so a release never races the submission it is meant for. */
static bool fences_released_once;

static uint64_t page_align(uint64_t size) { return (size + PAGE - 1) & ~(uint64_t)(PAGE - 1); }

/* ---- test set-up API ---- */

void kfdsim_drm_reset(void)
{
	pthread_mutex_lock(&lock);
	memset(submits, 0, sizeof(submits));
	fault_minor = -1;
	fault_mode = FAULT_NONE;
	copied_bytes = 0;
	held_ctx = NULL;
	fences_released_once = false;
	pthread_cond_broadcast(&fences_released);
	pthread_mutex_unlock(&lock);
}

void kfdsim_drm_release_fences(void)
{
	pthread_mutex_lock(&lock);
	held_ctx = NULL;
	fences_released_once = true;
	pthread_cond_broadcast(&fences_released);
	pthread_mutex_unlock(&lock);
}

/* Submission number `nth` (0-based) on render minor `minor` fails: mode 1 = cs_submit errors (-EIO), mode 2 = the
 * first packet copies only half its bytes and the fence never signals. */
void kfdsim_drm_fault(int minor, unsigned nth, int mode)
{
	pthread_mutex_lock(&lock);
	fault_minor = minor;
	fault_at = nth;
	fault_mode = mode;
	fences_released_once = false;
	pthread_mutex_unlock(&lock);
}

int kfdsim_drm_live(void) { return live; }

uint64_t kfdsim_drm_copied_bytes(void) { return copied_bytes; }

unsigned kfdsim_drm_submits(int minor) { return minor >= 0 && minor < MINORS ? submits[minor] : 0; }

/* ---- helpers ---- */

static int render_minor(int fd)
{
	char link[64], target[128];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, target, sizeof(target) - 1);
	if (n < 0)
		return -EBADF;
	target[n] = 0;
	int minor;
	if (sscanf(target, "/memfd:kfdsim-render-%d", &minor) != 1 || minor < 0 || minor >= MINORS)
		return -EINVAL; /* not a (simulated) DRM device */
	return minor;
}

static void *new_obj(size_t size)
{
	void *p = calloc(1, size);
	if (p)
		live++;
	return p;
}

static void free_obj(void *p)
{
	free(p);
	live--;
}

/* The host address behind [va, va+len) if one mapping of a BO in `list` covers it, else NULL. */
static uint8_t *resolve(struct sim_dev *dev, struct sim_list *list, uint64_t va, uint64_t len)
{
	for (int i = 0; i < MAX_MAPS; i++) {
		struct sim_map *m = &dev->maps[i];
		if (!m->used || va < m->va || va + len > m->va + m->size || va + len < va)
			continue;
		for (uint32_t b = 0; b < list->n; b++)
			if (list->bos[b] == m->bo)
				return m->bo->cpu + (va - m->va);
		return NULL; /* mapped, but not part of this submission */
	}
	return NULL;
}

/* ---- libdrm_amdgpu entry points ---- */

int kfdsim_amdgpu_device_initialize(int fd, uint32_t *major, uint32_t *minor, void **device)
{
	int m = render_minor(fd);
	if (m < 0)
		return m;
	pthread_mutex_lock(&lock);
	struct sim_dev *d = new_obj(sizeof(*d));
	pthread_mutex_unlock(&lock);
	if (!d)
		return -ENOMEM;
	d->minor = m;
	d->fd = fd;
	d->next_va = 1ULL << 32;
	*major = 3;
	*minor = 57;
	*device = d;
	return 0;
}

int kfdsim_amdgpu_device_deinitialize(void *device)
{
	pthread_mutex_lock(&lock);
	free_obj(device);
	pthread_mutex_unlock(&lock);
	return 0;
}

/* libdrm returns its own dup of the device's fd; the simulated device keeps the caller's. */
int kfdsim_amdgpu_device_get_fd(void *device)
{
	return ((struct sim_dev *)device)->fd;
}

int kfdsim_amdgpu_query_gpu_info(void *device, struct gpu_info_head *info)
{
	(void)device;
	info->family_id = FAMILY_AI;
	return 0;
}

int kfdsim_amdgpu_bo_import(void *device, int type, uint32_t shared_handle, struct amdgpu_bo_import_result *out)
{
	if (type != HANDLE_TYPE_DMA_BUF_FD)
		return -EINVAL;
	struct stat st;
	if (fstat((int)shared_handle, &st))
		return -errno;
	void *p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, (int)shared_handle, 0);
	if (p == MAP_FAILED)
		return -errno;
	pthread_mutex_lock(&lock);
	struct sim_bo *bo = new_obj(sizeof(*bo));
	pthread_mutex_unlock(&lock);
	if (!bo) {
		munmap(p, (size_t)st.st_size);
		return -ENOMEM;
	}
	*bo = (struct sim_bo){ device, BO_IMPORTED, p, (uint64_t)st.st_size };
	out->buf_handle = bo;
	out->alloc_size = bo->size;
	return 0;
}

/* Like AMDGPU_GEM_USERPTR: the address and the size must be page aligned. */
int kfdsim_amdgpu_create_bo_from_user_mem(void *device, void *cpu, uint64_t size, void **handle)
{
	if (((uintptr_t)cpu | size) & (PAGE - 1) || size == 0)
		return -EINVAL;
	pthread_mutex_lock(&lock);
	struct sim_bo *bo = new_obj(sizeof(*bo));
	pthread_mutex_unlock(&lock);
	if (!bo)
		return -ENOMEM;
	*bo = (struct sim_bo){ device, BO_USERPTR, cpu, size };
	*handle = bo;
	return 0;
}

int kfdsim_amdgpu_bo_alloc(void *device, struct amdgpu_bo_alloc_request *req, void **handle)
{
	if (req->alloc_size == 0)
		return -EINVAL;
	uint64_t size = page_align(req->alloc_size); /* GEM objects are whole pages */
	void *p = calloc(1, size);
	if (!p)
		return -ENOMEM;
	pthread_mutex_lock(&lock);
	struct sim_bo *bo = new_obj(sizeof(*bo));
	pthread_mutex_unlock(&lock);
	if (!bo) {
		free(p);
		return -ENOMEM;
	}
	*bo = (struct sim_bo){ device, BO_ALLOCATED, p, size };
	*handle = bo;
	return 0;
}

int kfdsim_amdgpu_bo_free(void *handle)
{
	struct sim_bo *bo = handle;
	if (bo->kind == BO_IMPORTED)
		munmap(bo->cpu, bo->size);
	else if (bo->kind == BO_ALLOCATED)
		free(bo->cpu);
	pthread_mutex_lock(&lock);
	for (int i = 0; i < MAX_MAPS; i++) /* freeing a BO drops its GPU mappings */
		if (bo->dev->maps[i].used && bo->dev->maps[i].bo == bo)
			bo->dev->maps[i].used = 0;
	free_obj(bo);
	pthread_mutex_unlock(&lock);
	return 0;
}

int kfdsim_amdgpu_va_range_alloc(void *device, int type, uint64_t size, uint64_t align, uint64_t required,
				 uint64_t *va, void **handle, uint64_t flags)
{
	(void)type; (void)required; (void)flags;
	struct sim_dev *d = device;
	if (align == 0)
		align = PAGE;
	pthread_mutex_lock(&lock);
	struct sim_va *r = new_obj(sizeof(*r));
	if (r) {
		uint64_t base = (d->next_va + align - 1) & ~(align - 1);
		*r = (struct sim_va){ d, base, size };
		d->next_va = base + ((size + PAGE - 1) & ~(uint64_t)(PAGE - 1));
		*va = base;
		*handle = r;
	}
	pthread_mutex_unlock(&lock);
	return r ? 0 : -ENOMEM;
}

int kfdsim_amdgpu_va_range_free(void *handle)
{
	pthread_mutex_lock(&lock);
	free_obj(handle);
	pthread_mutex_unlock(&lock);
	return 0;
}

int kfdsim_amdgpu_bo_va_op(void *handle, uint64_t offset, uint64_t size, uint64_t addr, uint64_t flags, uint32_t ops)
{
	(void)flags;
	struct sim_bo *bo = handle;
	struct sim_dev *d = bo->dev;
	int r = -EINVAL;
	size = page_align(size); /* libdrm's amdgpu_bo_va_op maps whole pages */
	pthread_mutex_lock(&lock);
	if (ops == VA_OP_MAP && offset == 0 && size > 0 && size <= bo->size) {
		r = -ENOSPC;
		for (int i = 0; i < MAX_MAPS; i++) {
			if (!d->maps[i].used) {
				d->maps[i] = (struct sim_map){ 1, addr, size, bo };
				r = 0;
				break;
			}
		}
	} else if (ops == VA_OP_UNMAP) {
		r = -ENOENT;
		for (int i = 0; i < MAX_MAPS; i++) {
			if (d->maps[i].used && d->maps[i].va == addr && d->maps[i].bo == bo) {
				d->maps[i].used = 0;
				r = 0;
				break;
			}
		}
	}
	pthread_mutex_unlock(&lock);
	return r;
}

int kfdsim_amdgpu_bo_cpu_map(void *handle, void **cpu)
{
	*cpu = ((struct sim_bo *)handle)->cpu;
	return 0;
}

int kfdsim_amdgpu_bo_cpu_unmap(void *handle)
{
	(void)handle;
	return 0;
}

int kfdsim_amdgpu_bo_list_create(void *device, uint32_t n, void **resources, uint8_t *prios, void **result)
{
	(void)prios;
	if (n == 0 || n > MAX_LIST)
		return -EINVAL;
	pthread_mutex_lock(&lock);
	struct sim_list *l = new_obj(sizeof(*l));
	pthread_mutex_unlock(&lock);
	if (!l)
		return -ENOMEM;
	l->dev = device;
	l->n = n;
	memcpy(l->bos, resources, n * sizeof(void *));
	*result = l;
	return 0;
}

int kfdsim_amdgpu_bo_list_destroy(void *handle)
{
	pthread_mutex_lock(&lock);
	free_obj(handle);
	pthread_mutex_unlock(&lock);
	return 0;
}

int kfdsim_amdgpu_cs_ctx_create(void *device, void **context)
{
	pthread_mutex_lock(&lock);
	struct sim_ctx *c = new_obj(sizeof(*c));
	pthread_mutex_unlock(&lock);
	if (!c)
		return -ENOMEM;
	c->dev = device;
	*context = c;
	return 0;
}

int kfdsim_amdgpu_cs_ctx_free(void *context)
{
	pthread_mutex_lock(&lock);
	free_obj(context);
	pthread_mutex_unlock(&lock);
	return 0;
}

struct copy { uint8_t *src, *dst; uint64_t len; };

/* Decodes the IB into copies; -EINVAL for an unknown packet or a range outside the submission's mappings. */
static int decode(struct sim_dev *d, struct sim_list *list, const uint32_t *ib, uint32_t dwords, struct copy *out,
		  int max, int *count)
{
	int n = 0;
	for (uint32_t i = 0; i < dwords;) {
		if (ib[i] == 0) { /* NOP */
			i++;
			continue;
		}
		if (ib[i] != 1 || i + 7 > dwords || n == max) /* op COPY, sub-op LINEAR */
			return -EINVAL;
		uint64_t len = ib[i + 1];
		uint64_t src = ib[i + 3] | (uint64_t)ib[i + 4] << 32;
		uint64_t dst = ib[i + 5] | (uint64_t)ib[i + 6] << 32;
		out[n].src = resolve(d, list, src, len);
		out[n].dst = resolve(d, list, dst, len);
		if (len == 0 || !out[n].src || !out[n].dst)
			return -EINVAL;
		out[n++].len = len;
		i += 7;
	}
	*count = n;
	return 0;
}

int kfdsim_amdgpu_cs_submit(void *context, uint64_t flags, struct amdgpu_cs_request *req, uint32_t nreq)
{
	(void)flags;
	struct sim_ctx *c = context;
	struct sim_dev *d = c->dev;
	if (nreq != 1 || req->ip_type != HW_IP_DMA || req->ring != 0 || req->number_of_ibs != 1 || !req->resources)
		return -EINVAL;
	struct sim_list *list = req->resources;
	pthread_mutex_lock(&lock);
	unsigned nth = submits[d->minor]++;
	int fault = d->minor == fault_minor && nth == fault_at ? fault_mode : FAULT_NONE;
	const uint32_t *ib = (const uint32_t *)resolve(d, list, req->ibs[0].ib_mc_address, req->ibs[0].size * 4ULL);
	pthread_mutex_unlock(&lock);
	if (!ib)
		return -EINVAL;
	if (fault == FAULT_SUBMIT_FAILS)
		return -EIO;
	int max = (int)(req->ibs[0].size / 7) + 1, n = 0;
	struct copy *copies = calloc((size_t)max, sizeof(*copies));
	if (!copies)
		return -ENOMEM;
	pthread_mutex_lock(&lock);
	int r = decode(d, list, ib, req->ibs[0].size, copies, max, &n);
	pthread_mutex_unlock(&lock);
	if (r == 0) {
		uint64_t total = 0;
		for (int i = 0; i < n; i++) {
			uint64_t len = fault == FAULT_FENCE_HANGS ? copies[i].len / 2 : copies[i].len;
			memmove(copies[i].dst, copies[i].src, len);
			total += len;
			if (fault == FAULT_FENCE_HANGS)
				break;
		}
		pthread_mutex_lock(&lock);
		copied_bytes += total;
		req->seq_no = ++c->seq;
		if (fault == FAULT_FENCE_WAITS && !fences_released_once)
			held_ctx = c;
		else if (fault != FAULT_FENCE_HANGS)
			c->completed = c->seq;
		pthread_mutex_unlock(&lock);
		kfdsim_trace("sdma renderD%d packets=%d bytes=%llu", d->minor, n, (unsigned long long)total);
	}
	free(copies);
	return r;
}

int kfdsim_amdgpu_cs_query_fence_status(struct amdgpu_cs_fence *fence, uint64_t timeout_ns, uint64_t flags,
					uint32_t *expired)
{
	(void)timeout_ns; (void)flags;
	struct sim_ctx *c = fence->context;
	if (fence->ip_type != HW_IP_DMA || fence->ring != 0 || fence->fence == 0 || fence->fence > c->seq)
		return -EINVAL;
	pthread_mutex_lock(&lock);
	if (held_ctx == c) {
		while (held_ctx == c)
			pthread_cond_wait(&fences_released, &lock);
		c->completed = c->seq;
	}
	*expired = fence->fence <= c->completed;
	pthread_mutex_unlock(&lock);
	return 0;
}
