// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Output files: a safely resolved directory, a new unnamed file, published by link or rename. */
#include "tracefile/output_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>
#include "common/parse_number.h"
#include "common/util.h"

/* Symbolic links followed in one resolution, as the kernel's MAXSYMLINKS. */
#define MAX_LINKS 40

const char *ht_file_kind(mode_t mode)
{
	return S_ISDIR(mode) ? "a directory" : S_ISFIFO(mode) ? "a FIFO or pipe" : S_ISCHR(mode) ? "a character device" :
	       S_ISBLK(mode) ? "a block device" : S_ISSOCK(mode) ? "a socket" : S_ISLNK(mode) ? "a symbolic link" :
	       "not a regular file";
}

/* Whose links may be followed: root's and the caller's (under sudo, the user who ran sudo is the caller). */
static bool trusted_owner(uid_t uid)
{
	const char *sudo_uid = getenv("SUDO_UID");
	uint64_t v;

	if (uid == 0 || uid == geteuid())
		return true;
	return geteuid() == 0 && sudo_uid && ht_parse_u64(sudo_uid, 0, UINT32_MAX - 1, &v) && uid == (uid_t)v;
}

/* Appends the text s[0..n) to buf (of size cap, holding len bytes). False if it does not fit. */
static bool append(char *buf, size_t cap, size_t *len, const char *s, size_t n)
{
	if (*len + n + 1 > cap)
		return false;
	memcpy(buf + *len, s, n);
	*len += n;
	buf[*len] = '\0';
	return true;
}

/*
 * The next component of rest, from *pos, into comp (NUL-terminated): its
 * length, 0 at the end of rest, or -ENAMETOOLONG.
 */
static long next_component(const char *rest, size_t *pos, char comp[NAME_MAX + 1])
{
	size_t n;

	while (rest[*pos] == '/')
		(*pos)++;
	if (!rest[*pos])
		return 0;
	n = strcspn(rest + *pos, "/");
	if (n > NAME_MAX)
		return -ENAMETOOLONG;
	memcpy(comp, rest + *pos, n);
	comp[n] = '\0';
	*pos += n;
	return (long)n;
}

/* What is left to walk after a link (rest from *pos) goes after the link's target. 0 or -ENAMETOOLONG. */
static int splice_link(char rest[2 * PATH_MAX], size_t *pos, const char *target, size_t tlen)
{
	char after[2 * PATH_MAX];
	size_t len = 0;

	after[0] = '\0';
	if (!append(after, sizeof(after), &len, target, tlen) || !append(after, sizeof(after), &len, "/", 1) ||
	    !append(after, sizeof(after), &len, rest + *pos, strlen(rest + *pos)))
		return -ENAMETOOLONG;
	memcpy(rest, after, len + 1);
	*pos = 0;
	return 0;
}

/*
 * Opens the directory dir (a prefix of path, the output) by the rule of
 * output_file.h. One loop over the components, longer than most functions
 * here on purpose: the descriptor it holds, what is left to walk and what it
 * walked change together at every link, and the rule is reviewed in one place.
 */
static int open_dir(const char *dir, const char *path, const struct ht_output_spec *spec, char *err, size_t errlen)
{
	/* rest: what is left to walk, a link's target spliced in front; shown: what was walked, for messages. */
	char rest[2 * PATH_MAX], shown[2 * PATH_MAX], target[PATH_MAX];
	size_t shown_len = 0, pos = 0;
	int cur, links = 0, ret = 0;

	if (strlen(dir) >= PATH_MAX) {
		snprintf(err, errlen, "cannot create %s: the path is too long: choose a shorter one with %s", path, spec->opt);
		return -ENAMETOOLONG;
	}
	snprintf(rest, sizeof(rest), "%s", dir);
	shown[0] = '\0';
	cur = open(dir[0] == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dir[0] == '/')
		append(shown, sizeof(shown), &shown_len, "/", 1);
	while (cur >= 0) {
		struct stat st;
		char comp[NAME_MAX + 1];
		size_t n, shown_before = shown_len;
		long got = next_component(rest, &pos, comp);
		int fd;

		if (got == 0)
			return cur;
		if (got < 0) {
			ret = (int)got;
			break;
		}
		n = (size_t)got;
		if (!strcmp(comp, "."))
			continue;
		/* O_PATH | O_NOFOLLOW: a link is opened as itself, never followed by the kernel. */
		fd = openat(cur, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st)) {
			ret = -errno;
			if (fd >= 0)
				close(fd);
			append(shown, sizeof(shown), &shown_len, comp, n);
			break;
		}
		append(shown, sizeof(shown), &shown_len, comp, n);
		if (S_ISDIR(st.st_mode)) {
			close(cur);
			cur = fd;
			append(shown, sizeof(shown), &shown_len, "/", 1);
			continue;
		}
		if (!S_ISLNK(st.st_mode)) {
			close(fd);
			ret = -ENOTDIR;
			break;
		}
		if (!trusted_owner(st.st_uid)) {
			close(fd);
			close(cur);
			snprintf(err, errlen, "cannot create %s: refusing to follow %s, a symbolic link owned by uid %u (not root, not you): give the directory's real path with %s",
				 path, shown, (unsigned int)st.st_uid, spec->opt);
			return -EPERM;
		}
		if (++links > MAX_LINKS) {
			close(fd);
			ret = -ELOOP;
			break;
		}
		ssize_t tlen = readlinkat(fd, "", target, sizeof(target));
		close(fd);
		if (tlen < 0 || (size_t)tlen >= sizeof(target)) {
			ret = tlen < 0 ? -errno : -ENAMETOOLONG;
			break;
		}
		target[tlen] = '\0';
		/* Walk the target, then what was left after the link. */
		if ((ret = splice_link(rest, &pos, target, (size_t)tlen)))
			break;
		/* The link's own text leaves the shown path: the target's components follow it. */
		shown_len = shown_before;
		shown[shown_len] = '\0';
		if (target[0] == '/') {
			close(cur);
			cur = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
			shown_len = 0;
			append(shown, sizeof(shown), &shown_len, "/", 1);
		}
	}
	if (cur < 0)
		ret = -errno;
	else
		close(cur);
	snprintf(err, errlen, "cannot create %s: %s%s%s: choose a writable path with %s", path, shown,
		 shown_len ? ": " : "", strerror(-ret), spec->opt);
	return ret;
}

int ht_output_locate(const char *path, const struct ht_output_spec *spec, char **name, char *err, size_t errlen)
{
	const char *slash = strrchr(path, '/');
	char *dir = slash ? strndup(path, (size_t)(slash - path) + 1) : strdup(".");
	int fd;

	*name = strdup(slash ? slash + 1 : path);
	if (!dir || !*name) {
		free(dir);
		free(*name);
		*name = NULL;
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if (!(*name)[0]) {
		free(dir);
		free(*name);
		*name = NULL;
		snprintf(err, errlen, "%s names a directory: give a file path with %s", path, spec->opt);
		return -EISDIR;
	}
	fd = open_dir(dir, path, spec, err, errlen);
	free(dir);
	if (fd < 0) {
		free(*name);
		*name = NULL;
	}
	return fd;
}

/* A name nobody can guess, for the moment between creating and renaming. */
static void temp_name(char *buf, size_t len)
{
	unsigned long long r = 0;

	/* Non-blocking: right after boot (a test VM) the pool may not be ready, and a clock will do. */
	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
		r = ht_clock_ns(CLOCK_MONOTONIC) ^ ((unsigned long long)getpid() << 32);
	snprintf(buf, len, ".htr-%016llx.tmp", r);
}

/*
 * A directory output's temporary name: ".htr-PID-RANDOM.tmp". Its owner
 * holds an exclusive flock on it from just after mkdir until it is renamed
 * or removed; a SIGKILL drops the lock with the process, and the pid in the
 * name covers the moment between mkdir and flock. See remove_stale_dirs.
 */
static void temp_dir_name(char *buf, size_t len)
{
	char r[32];

	temp_name(r, sizeof(r)); /* ".htr-%016llx.tmp" */
	snprintf(buf, len, ".htr-%d-%s", (int)getpid(), r + 5);
}

static int remove_entry(struct ht_output *o, int dirfd, const char *name);
static int for_each_entry(struct ht_output *o, int dirfd, int (*fn)(struct ht_output *o, int dirfd, const char *name));

/*
 * Removes the temporary directories of directory outputs that a killed
 * convert (SIGKILL, a crash, a power cut) left in dirfd. One is stale, and
 * removed, only when all of these hold, so a running conversion's is never
 * touched: its name is exactly ".htr-PID-<16 hex>.tmp", it is a directory
 * (not a link) of the caller's effective uid, no process PID exists (the
 * owner may be between mkdir and flock), and its flock is free (no owner
 * holds it, whatever pid namespace the owner runs in). A temporary
 * directory of an older version (no pid in its name) is left alone.
 */
static void remove_stale_dirs(struct ht_output *o)
{
	int fd = openat(o->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	struct dirent *e;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((e = readdir(d))) {
		char hex[17], check[64];
		int pid, n = 0, sub;
		struct stat st;

		if (sscanf(e->d_name, ".htr-%d-%16[0-9a-f].tmp%n", &pid, hex, &n) != 2 || e->d_name[n] || pid <= 0 ||
		    strlen(hex) != 16)
			continue;
		snprintf(check, sizeof(check), ".htr-%d-%s.tmp", pid, hex);
		if (strcmp(check, e->d_name) || fstatat(o->dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISDIR(st.st_mode) || st.st_uid != geteuid() || kill(pid, 0) == 0 || errno != ESRCH)
			continue;
		sub = openat(o->dirfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0)
			continue;
		if (flock(sub, LOCK_EX | LOCK_NB) == 0) {
			for_each_entry(o, sub, remove_entry);
			unlinkat(o->dirfd, e->d_name, AT_REMOVEDIR);
		}
		close(sub);
	}
	closedir(d);
}

/* Gives the unnamed (O_TMPFILE) file the name NAME in dirfd; -EEXIST if NAME exists. */
static int link_unnamed(struct ht_output *o, const char *name)
{
	char proc[64];

	if (linkat(o->fd, "", o->dirfd, name, AT_EMPTY_PATH) == 0)
		return 0;
	if (errno != ENOENT && errno != EPERM)
		return -errno;
	/* AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH; /proc does the same without it. */
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", o->fd);
	if (linkat(AT_FDCWD, proc, o->dirfd, name, AT_SYMLINK_FOLLOW) == 0)
		return 0;
	return -errno;
}

/* Creates the new file in dirfd: unnamed if the file system can, else under a private name. */
static int create_file(struct ht_output *o)
{
	char tmp[64];

	o->fd = openat(o->dirfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
	if (o->fd >= 0)
		return 0;
	if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
		return -errno;
	for (int tries = 0; tries < 100; tries++) {
		temp_name(tmp, sizeof(tmp));
		o->fd = openat(o->dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (o->fd >= 0) {
			o->tmpname = strdup(tmp);
			if (o->tmpname)
				return 0;
			unlinkat(o->dirfd, tmp, 0);
			return -ENOMEM;
		}
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST;
}

/* What is at the final name now: only ever replaced by rename, never opened, so never written through. */
static int check_existing(struct ht_output *o, char *err, size_t errlen)
{
	const struct ht_output_spec *s = &o->spec;
	struct stat sb, target;

	if (fstatat(o->dirfd, o->name, &sb, AT_SYMLINK_NOFOLLOW)) {
		if (errno == ENOENT)
			return 0;
		snprintf(err, errlen, "cannot create %s: %s: choose a writable path with %s", o->path, strerror(errno), s->opt);
		return -errno;
	}
	if (S_ISLNK(sb.st_mode) && fstatat(o->dirfd, o->name, &target, 0) == 0 && !S_ISREG(target.st_mode)) {
		/* /dev/stdout and the like: say what is at the end of the link. */
		snprintf(err, errlen, "%s leads to %s: %s writes %s, not a stream; give a file path with %s", o->path,
			 ht_file_kind(target.st_mode), s->cmd, s->what, s->opt);
		return -EINVAL;
	}
	if (S_ISLNK(sb.st_mode)) {
		snprintf(err, errlen, "%s is a symbolic link: %s does not write through links; give the path of the file itself with %s",
			 o->path, s->cmd, s->opt);
		return -ELOOP;
	}
	if (!S_ISREG(sb.st_mode)) {
		snprintf(err, errlen, "%s is %s: %s writes %s, not a stream; give a file path with %s", o->path,
			 ht_file_kind(sb.st_mode), s->cmd, s->what, s->opt);
		return -EINVAL;
	}
	if (!s->force) {
		snprintf(err, errlen, "%s already exists: use --force to overwrite it, or %s to choose another file", o->path, s->opt);
		return -EEXIST;
	}
	return 0;
}

int ht_output_create(struct ht_output *o, const char *path, const struct ht_output_spec *spec, char *err,
		     size_t errlen)
{
	int ret;

	memset(o, 0, sizeof(*o));
	o->fd = -1;
	o->spec = *spec;
	o->dirfd = ht_output_locate(path, spec, &o->name, err, errlen);
	o->path = strdup(path);
	if (o->dirfd < 0) {
		ret = o->dirfd;
	} else if (!o->path) {
		snprintf(err, errlen, "out of memory");
		ret = -ENOMEM;
	} else {
		ret = check_existing(o, err, errlen);
	}
	if (!ret) {
		ret = create_file(o);
		if (ret)
			snprintf(err, errlen, "cannot create %s: %s: choose a writable path with %s", path, strerror(-ret),
				 spec->opt);
	}
	if (ret)
		ht_output_release(o);
	return ret;
}

/* What is at a directory output's name: nothing, or an empty directory (replaced when published). */
static int check_existing_dir(struct ht_output *o, char *err, size_t errlen)
{
	const struct ht_output_spec *s = &o->spec;
	struct stat sb;
	struct dirent *e;
	DIR *d;
	int fd;

	if (fstatat(o->dirfd, o->name, &sb, AT_SYMLINK_NOFOLLOW)) {
		if (errno == ENOENT)
			return 0;
		snprintf(err, errlen, "cannot create %s: %s: choose a writable path with %s", o->path, strerror(errno), s->opt);
		return -errno;
	}
	if (S_ISLNK(sb.st_mode)) {
		snprintf(err, errlen, "%s is a symbolic link: %s does not write through links; give the path of the directory itself with %s",
			 o->path, s->cmd, s->opt);
		return -ELOOP;
	}
	if (!S_ISDIR(sb.st_mode)) {
		snprintf(err, errlen, "%s is %s: give a new or empty directory with %s", o->path, ht_file_kind(sb.st_mode),
			 s->opt);
		return -ENOTDIR;
	}
	fd = openat(o->dirfd, o->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		if (fd >= 0)
			close(fd);
		snprintf(err, errlen, "%s exists and cannot be read: %s: give a new directory with %s", o->path, strerror(errno),
			 s->opt);
		return -errno;
	}
	while ((e = readdir(d))) {
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			closedir(d);
			snprintf(err, errlen, "%s is not empty: give a new or empty directory", o->path);
			return -ENOTEMPTY;
		}
	}
	closedir(d);
	o->over_empty_dir = true;
	return 0;
}

int ht_output_create_dir(struct ht_output *o, const char *path, const struct ht_output_spec *spec, char *err,
			 size_t errlen)
{
	char tmp[64];
	int ret;

	memset(o, 0, sizeof(*o));
	o->fd = -1;
	o->spec = *spec;
	o->is_dir = true;
	o->mode = 0600;
	o->dirfd = ht_output_locate(path, spec, &o->name, err, errlen);
	o->path = strdup(path);
	if (o->dirfd < 0) {
		ret = o->dirfd;
	} else if (!o->path) {
		snprintf(err, errlen, "out of memory");
		ret = -ENOMEM;
	} else {
		ret = check_existing_dir(o, err, errlen);
	}
	if (!ret)
		remove_stale_dirs(o);
	for (int tries = 0; !ret && tries < 100; tries++) {
		temp_dir_name(tmp, sizeof(tmp));
		if (mkdirat(o->dirfd, tmp, 0700) == 0) {
			o->tmpname = strdup(tmp);
			if (!o->tmpname) {
				unlinkat(o->dirfd, tmp, AT_REMOVEDIR);
				snprintf(err, errlen, "out of memory");
				ret = -ENOMEM;
			}
			break;
		}
		if (errno != EEXIST || tries == 99) {
			ret = -errno;
			snprintf(err, errlen, "cannot create directory %s: %s: choose a writable path with %s", path,
				 strerror(errno), spec->opt);
		}
	}
	if (!ret) {
		o->fd = openat(o->dirfd, o->tmpname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		/* Ours, and marked so until it is renamed or removed (remove_stale_dirs). */
		if (o->fd >= 0 && flock(o->fd, LOCK_EX | LOCK_NB)) {
			close(o->fd);
			o->fd = -1;
		}
		if (o->fd < 0) {
			ret = -errno;
			snprintf(err, errlen, "cannot create directory %s: %s: choose a writable path with %s", path,
				 strerror(errno), spec->opt);
		}
	}
	if (ret)
		ht_output_release(o);
	return ret;
}

/*
 * The entries of directory dirfd (a directory output's temporary directory,
 * or a directory in it): each gets fn applied. 0 or -errno.
 */
static int for_each_entry(struct ht_output *o, int dirfd, int (*fn)(struct ht_output *o, int dirfd, const char *name))
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC), ret = 0;
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	struct dirent *e;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && !ret)
			ret = fn(o, dirfd, e->d_name);
	closedir(d);
	return ret;
}

/* Read bits give their search bit: a directory the files' readers can enter. */
static mode_t dir_mode(mode_t mode)
{
	return mode | ((mode & 0444) >> 2);
}

/*
 * The file's mode, and its data on disk before the directory gets its name;
 * a directory in it (an output of several traces) gets the same for its
 * files, then its own mode.
 */
static int finish_entry(struct ht_output *o, int dirfd, const char *name)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC), ret = 0;
	struct stat st;

	if (fd < 0 || fstat(fd, &st))
		ret = -errno;
	else if (S_ISDIR(st.st_mode))
		ret = for_each_entry(o, fd, finish_entry);
	if (!ret && (fchmod(fd, S_ISDIR(st.st_mode) ? dir_mode(o->mode) : o->mode) || fsync(fd)))
		ret = -errno;
	if (fd >= 0)
		close(fd);
	return ret;
}

static int remove_entry(struct ht_output *o, int dirfd, const char *name)
{
	int fd;

	if (!unlinkat(dirfd, name, 0) || errno != EISDIR)
		return 0;
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0) {
		for_each_entry(o, fd, remove_entry);
		close(fd);
	}
	unlinkat(dirfd, name, AT_REMOVEDIR);
	return 0;
}

static int publish_dir(struct ht_output *o, char *err, size_t errlen)
{
	int ret = for_each_entry(o, o->fd, finish_entry);

	if (!ret && (fchmod(o->fd, dir_mode(o->mode)) || fsync(o->fd)))
		ret = -errno;
	if (ret) {
		snprintf(err, errlen, "cannot finish %s: %s", o->path, strerror(-ret));
		return ret;
	}
	/* Over an empty directory (rename refuses one that is no longer empty), else over nothing. */
	if (o->over_empty_dir)
		ret = renameat(o->dirfd, o->tmpname, o->dirfd, o->name) ? -errno : 0;
	else
		ret = renameat2(o->dirfd, o->tmpname, o->dirfd, o->name, RENAME_NOREPLACE) ? -errno : 0;
	if (ret == -ENOTEMPTY || (ret == -EEXIST && o->over_empty_dir))
		snprintf(err, errlen, "%s is not empty: give a new or empty directory", o->path);
	else if (ret == -EEXIST)
		snprintf(err, errlen, "%s already exists now: give a new or empty directory with %s", o->path, o->spec.opt);
	else if (ret)
		snprintf(err, errlen, "cannot create %s: %s: choose a writable path with %s", o->path, strerror(-ret),
			 o->spec.opt);
	if (ret)
		return ret;
	free(o->tmpname);
	o->tmpname = NULL;
	o->published = true;
	return 0;
}

int ht_output_set_access(struct ht_output *o, mode_t mode, uid_t uid, gid_t gid, char *err, size_t errlen)
{
	if (o->is_dir) {
		o->mode = mode;
		return 0;
	}
	/* fchown first: it may clear mode bits, and the mode asked for is the one to keep. */
	if (uid != (uid_t)-1 && fchown(o->fd, uid, gid)) {
		int ret = -errno;
		snprintf(err, errlen, "cannot give %s to user %u group %u: %s", o->path, (unsigned int)uid,
			 (unsigned int)gid, strerror(-ret));
		return ret;
	}
	if (fchmod(o->fd, mode)) {
		int ret = -errno;
		snprintf(err, errlen, "cannot set the mode of %s to %04o: %s", o->path, (unsigned int)mode, strerror(-ret));
		return ret;
	}
	return 0;
}

int ht_output_publish(struct ht_output *o, char *err, size_t errlen)
{
	char tmp[64];
	int ret = 0;

	if (o->published)
		return 0;
	if (o->is_dir)
		return publish_dir(o, err, errlen);
	if (o->tmpname) {
		if (o->spec.force)
			ret = renameat(o->dirfd, o->tmpname, o->dirfd, o->name) ? -errno : 0;
		else
			ret = renameat2(o->dirfd, o->tmpname, o->dirfd, o->name, RENAME_NOREPLACE) ? -errno : 0;
	} else if (!o->spec.force) {
		ret = link_unnamed(o, o->name);
	} else {
		/* A name of our own first, then one rename: PATH is the old file or the new one, never neither. */
		for (int tries = 0; tries < 100; tries++) {
			temp_name(tmp, sizeof(tmp));
			ret = link_unnamed(o, tmp);
			if (ret != -EEXIST)
				break;
		}
		if (!ret && renameat(o->dirfd, tmp, o->dirfd, o->name)) {
			ret = -errno;
			unlinkat(o->dirfd, tmp, 0);
		}
	}
	if (ret == -EEXIST)
		snprintf(err, errlen, "%s already exists: use --force to overwrite it, or %s to choose another file", o->path,
			 o->spec.opt);
	else if (ret)
		snprintf(err, errlen, "cannot create %s: %s: choose a writable path with %s", o->path, strerror(-ret),
			 o->spec.opt);
	if (ret)
		return ret;
	free(o->tmpname);
	o->tmpname = NULL;
	o->published = true;
	return 0;
}

void ht_output_unpublish(struct ht_output *o)
{
	struct stat ours, named;

	if (!o->published || o->is_dir)
		return;
	/* Only if the name is still ours: someone may have replaced it meanwhile. */
	if (fstat(o->fd, &ours) == 0 && fstatat(o->dirfd, o->name, &named, AT_SYMLINK_NOFOLLOW) == 0 &&
	    ours.st_dev == named.st_dev && ours.st_ino == named.st_ino)
		unlinkat(o->dirfd, o->name, 0);
	o->published = false;
}

void ht_output_release(struct ht_output *o)
{
	if (o->is_dir && o->tmpname && o->fd >= 0)
		for_each_entry(o, o->fd, remove_entry);
	if (o->tmpname && o->dirfd >= 0)
		unlinkat(o->dirfd, o->tmpname, o->is_dir ? AT_REMOVEDIR : 0);
	if (o->fd >= 0)
		close(o->fd);
	if (o->dirfd >= 0)
		close(o->dirfd);
	free(o->path);
	free(o->name);
	free(o->tmpname);
	memset(o, 0, sizeof(*o));
	o->fd = o->dirfd = -1;
}
