/*
 * The restore-plan executor criu's forked children run (criu-java-gpu).
 *
 * A GPU plugin's Java side prepares, in criu's main process before it forks, a plan: for each file id a short
 * program of steps (open, ioctl, checks, fd patching, sending fds to criu's main process over a socket criu's
 * fdstore keeps for the task) over byte buffers it filled in, and a table of device mappings whose offsets move. Every restored task is a fork of that process
 * and inherits the plan; the shim runs it here, in C, for RESTORE_EXT_FILE and UPDATE_VMA_MAP, without the JVM.
 * The executor knows no vendor: ioctl numbers, layouts and paths all come from the plan. Buffers are written in
 * place (each task has its own copy-on-write copy of the plan). Device calls go through a seam table: libc and
 * criu in production, a simulator in tests.
 */
#ifndef CRIUGPU_GPU_PLAN_H
#define CRIUGPU_GPU_PLAN_H

#include <stdint.h>

#define GPU_PLAN_VERSION 6
/* fds per sendmsg of a SEND_FDS step (each message carries one payload byte) */
#define GPU_PLAN_FDS_PER_MSG 64
/* a u32 fd field holding this was not filled in by the ioctl */
#define GPU_PLAN_NO_FD 0xffffffffu

enum gpu_plan_op {
	/* slot <- open(buf as path, NUL-terminated within len; arg as flags), unless the slot is open already;
	 * arg2 = 1 moves the fd above the task's image fds (criu's find_unused_fd_pid), so it never takes a number
	 * criu restores later */
	GPU_PLAN_OPEN = 1,
	/* ioctl(slot's fd, arg as request, buf), retried on EINTR/EAGAIN; the request's size must fit in len */
	GPU_PLAN_IOCTL = 2,
	/* the u32 at buf + arg2 must lie in [low 32 bits of arg, high 32 bits of arg], else -ENOTSUP */
	GPU_PLAN_REQUIRE = 3,
	/* the u32 at buf + arg2 <- slot's fd */
	GPU_PLAN_PUT_FD = 4,
	/* take socket number arg from criu's fdstore, send len bytes of buf, then the arg2 fds stored as u32 at
	 * fd_buf + fd_offsets[i] (each within fd_len) as SCM_RIGHTS; the fds are closed afterwards, sent or not */
	GPU_PLAN_SEND_FDS = 5,
	/* mapping rows [arg, arg + arg2) take effect for UPDATE_VMA_MAP */
	GPU_PLAN_ENABLE_VMAS = 6,
	/* the program's result: slot's fd, handed to criu (the slot is emptied) */
	GPU_PLAN_RETURN = 7,
	/* the program's result: a dup of slot's fd (the slot stays open for later steps and mappings) */
	GPU_PLAN_RETURN_DUP = 8,
	/* the u32 at buf + arg2 <- the task's pid (in its own pid namespace) */
	GPU_PLAN_PUT_PID = 9,
};

/*
 * Every step names its buffer's length: the executor checks each offset, count and ioctl size against it before it
 * touches memory (a plan's numbers come from images) and refuses the step with one line otherwise; a refused step
 * does nothing (a SEND_FDS step then closes no fd either).
 */
struct gpu_plan_step {
	uint32_t op;
	int32_t slot;
	uint64_t arg;
	uint64_t arg2;
	uint64_t len;    /* bytes of buf */
	uint64_t fd_len; /* bytes of fd_buf */
	void *buf;
	const void *fd_buf;
	const uint64_t *fd_offsets;
	const char *what; /* names the step in error lines */
};

/* What RESTORE_EXT_FILE(file_id) runs. */
struct gpu_plan_program {
	int32_t file_id;
	uint32_t num_steps;
	const struct gpu_plan_step *steps;
};

/* A device mapping whose offset the program's ioctl moved. */
struct gpu_plan_vma {
	uint64_t addr;
	uint64_t old_offset;
	const uint64_t *new_offset; /* where the ioctl left the new offset */
	int32_t slot;               /* criu maps through a dup of this slot's fd, unless the path says reopen */
	uint32_t pad;
};

/* A path pattern the plan answers UPDATE_VMA_MAP for ("//" in criu's path is collapsed first). */
struct gpu_plan_path {
	const char *pattern;
	uint32_t prefix; /* 1: pattern is a prefix; 0: the whole path */
	uint32_t reopen; /* 1: criu reopens the path itself (plugin_fd -1) */
	/* not NULL: every mapping of the path is mapped through a fresh open of this file (offset 0) in any task,
	 * with no program needed: a stand-in that keeps the address range reserved */
	const char *substitute;
};

struct gpu_plan {
	uint32_t version;
	uint32_t num_programs;
	uint32_t num_vmas;
	uint32_t num_paths;
	uint32_t num_slots;
	uint32_t pad;
	const char *name;         /* prefix of log lines, e.g. "amdgpu" */
	const struct gpu_plan_program *programs;
	const struct gpu_plan_vma *vmas;
	const struct gpu_plan_path *paths;
};

/* The calls the executor makes; every pointer must be set. */
struct gpu_plan_seam {
	int (*open)(const char *path, int flags, ...);
	int (*close)(int fd);
	int (*ioctl)(int fd, unsigned long request, ...);
	/* criu's find_unused_fd_pid: first fd above the task's highest image fd */
	int (*find_unused_fd)(int pid);
	/* criu's print_on_level */
	void (*log)(unsigned int level, const char *fmt, ...);
	/* criu's fdstore_get: a new fd for what the main process stored before forking */
	int (*fdstore_get)(int id);
};

/* The context the shim passes to the two entry points. */
struct gpu_plan_child {
	struct gpu_plan *plan;
	const struct gpu_plan_seam *seam;
};

/* RESTORE_EXT_FILE in a restored task: the program's fd, -ENOTSUP when no program has this id, or -errno. */
int gpu_plan_restore_ext_file(void *ctx, int id);

/*
 * UPDATE_VMA_MAP in a restored task: 1 when the mapping at (addr, old_offset) moved (new_offset and plugin_fd
 * set), 0 when the path is the plan's but the mapping did not move, -ENOTSUP for a path the plan does not claim.
 */
int gpu_plan_update_vma_map(void *ctx, const char *path, uint64_t addr, uint64_t old_offset, uint64_t *new_offset,
			    int *plugin_fd);

#endif
