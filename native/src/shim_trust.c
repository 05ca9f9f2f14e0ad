/* What root may load: the plugin dir's files and the JDK, walked and checked before anything is opened (rule 11). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "shim.h"

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
int open_trusted(const char *path, char *why, size_t len)
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
int check_trusted(const char *path, char *why, size_t len)
{
	int fd = open_trusted(path, why, len);

	return fd < 0 ? -1 : (close(fd), 0);
}
