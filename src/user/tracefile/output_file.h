/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Creating an output file the way a tool run as root must: record's trace
 * file and convert's exports.
 *
 * The directory is resolved component by component, following a symbolic
 * link only if root or the caller owns it (under sudo, the user who ran
 * sudo is the caller): a link another user planted on the path (in /tmp, in
 * a directory of their own) could otherwise send the file into a directory
 * only root may write. This is fs.protected_symlinks' rule made stricter
 * (its sticky-directory condition dropped) and applied whatever the sysctl
 * says. openat2(RESOLVE_NO_SYMLINKS) would refuse root's own links too
 * (/var/run -> /run).
 *
 * The file is a new one, never an existing file opened for writing: it is
 * created unnamed in that directory (O_TMPFILE, or a private temporary name
 * where the file system lacks it) and only gets its name when published,
 * replacing an older file in one rename with force. Until then a failure or
 * a kill leaves nothing behind (O_TMPFILE: not even after SIGKILL) and the
 * old file intact.
 *
 * A directory output (a CTF trace: several files) is built in a private
 * temporary directory next to it (mode 0700) and renamed into place when
 * published: over nothing, or over an empty directory. A SIGKILL leaves that
 * directory behind; the next directory output created in the same directory
 * removes it, and only it: the name carries the owner's pid and the owner
 * holds a flock on it, so a running conversion's is never taken for stale.
 */
#ifndef HT_OUTPUT_FILE_H
#define HT_OUTPUT_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* What the messages name: "record" writes "a trace file" given with "-o". */
struct ht_output_spec {
	const char *cmd;  /* the command, e.g. "record" */
	const char *opt;  /* the option that names the output, e.g. "-o" */
	const char *what; /* e.g. "a trace file" */
	bool force;       /* replace an existing file */
};

struct ht_output {
	int dirfd;     /* the directory the output is (to be) named in */
	int fd;        /* the new file, open for writing; a directory output: the temporary directory */
	char *path;    /* as given, for messages */
	char *name;    /* the final name, in dirfd */
	char *tmpname; /* the private temporary name (a file without O_TMPFILE, a directory); else NULL */
	struct ht_output_spec spec;
	bool published;
	bool is_dir;
	bool over_empty_dir; /* a directory output replaces an empty directory */
	mode_t mode;         /* a directory output: its files' mode, applied when published */
};

/*
 * Opens (O_PATH) the directory PATH is to be named in, with the rule above,
 * and gives PATH's last component in *name (to free). Returns the directory's
 * descriptor, or -errno with a one-line reason in err naming PATH and
 * spec->opt (PATH ending in '/' names no file: -EISDIR).
 */
int ht_output_locate(const char *path, const struct ht_output_spec *spec, char **name, char *err, size_t errlen);

/*
 * Prepares PATH: resolves its directory, refuses a symbolic link, anything
 * but a regular file, and an existing file unless spec->force; creates the
 * new, unnamed file there (mode 0600). 0, or -errno with a reason in err; o
 * is then released.
 */
int ht_output_create(struct ht_output *o, const char *path, const struct ht_output_spec *spec, char *err,
		     size_t errlen);
/*
 * Prepares the directory output PATH: resolves its parent as above, refuses
 * a symbolic link and anything but a new or empty directory; creates the
 * private temporary directory next to it, whose descriptor is o->fd.
 */
int ht_output_create_dir(struct ht_output *o, const char *path, const struct ht_output_spec *spec, char *err,
			 size_t errlen);
/*
 * Sets the file's mode (exactly, whatever the umask) and, if uid != -1, its
 * owner. A directory output: mode for each file in it (applied when
 * published), the directory gets mode plus x where mode has r. 0 or -errno.
 */
int ht_output_set_access(struct ht_output *o, mode_t mode, uid_t uid, gid_t gid, char *err, size_t errlen);
/*
 * Gives the file its name (with force, replacing the old one in one rename),
 * a directory output its name (in one rename). 0 or -errno with err set.
 */
int ht_output_publish(struct ht_output *o, char *err, size_t errlen);
/* Takes the name away again if it still is this file's. */
void ht_output_unpublish(struct ht_output *o);
/* Closes everything; an unpublished output leaves nothing behind. Safe to call twice. */
void ht_output_release(struct ht_output *o);

/* Names a new file's kind for messages: "a directory", "a FIFO or pipe", ... */
const char *ht_file_kind(mode_t mode);

#endif
