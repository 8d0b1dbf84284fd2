// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * VMs known by name: QEMU's guest name from a command line, identities read
 * from a fake /proc, a VM found by name, and IDENTITY blocks through the
 * writer and reader (before their thread's records; old files have none).
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "record/recording.h"
#include "record/vm_identity.h"
#include "fixture.h"
#include "test.h"
#include "tracefile/crc32.h"
#include "tracefile/trace_reader.h"
#include "tracefile/trace_writer.h"

static char root[] = "/tmp/ht-vmid-XXXXXX";

/* A fake /proc/PID with comm, cmdline (args joined by NULs) and one thread. */
static void fake_process(unsigned int pid, const char *comm, const char *const *args, unsigned int tid,
			 const char *thread)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "mkdir -p %s/%u/task/%u", root, pid, tid);
	if (system(path) != 0)
		printf("    setup failed: %s\n", path);
	snprintf(path, sizeof(path), "%s/%u/comm", root, pid);
	if ((f = fopen(path, "w"))) {
		fprintf(f, "%s\n", comm);
		fclose(f);
	}
	snprintf(path, sizeof(path), "%s/%u/task/%u/comm", root, pid, tid);
	if ((f = fopen(path, "w"))) {
		fprintf(f, "%s\n", thread);
		fclose(f);
	}
	snprintf(path, sizeof(path), "%s/%u/cmdline", root, pid);
	if ((f = fopen(path, "w"))) {
		for (const char *const *a = args; *a; a++)
			fwrite(*a, 1, strlen(*a) + 1, f);
		fclose(f);
	}
}

static bool guest_name(const char *const *args, char *out, size_t outlen)
{
	char buf[512];
	size_t n = 0;

	for (const char *const *a = args; *a; a++) {
		memcpy(buf + n, *a, strlen(*a) + 1);
		n += strlen(*a) + 1;
	}
	return ht_qemu_guest_name(buf, n, out, outlen);
}

static void qemu_guest_name_in_every_spelling(void)
{
	static const char *const plain[] = { "qemu-system-x86_64", "-m", "256", "-name", "web1", NULL };
	static const char *const opts[] = { "qemu", "-name", "web1,debug-threads=on", "-smp", "2", NULL };
	static const char *const guest[] = { "qemu", "--name", "process=q,guest=db,debug-threads=on", NULL };
	static const char *const comma[] = { "qemu", "-name", "a,,b,debug-threads=on", NULL };
	static const char *const none[] = { "qemu", "-m", "256", NULL };
	static const char *const last[] = { "qemu", "-name", NULL };
	static const char *const only_opts[] = { "qemu", "-name", "debug-threads=on", NULL };
	char n[64];

	CHECK(guest_name(plain, n, sizeof(n)) && strcmp(n, "web1") == 0, "got '%s'", n);
	CHECK(guest_name(opts, n, sizeof(n)) && strcmp(n, "web1") == 0, "got '%s'", n);
	CHECK(guest_name(guest, n, sizeof(n)) && strcmp(n, "db") == 0, "got '%s'", n);
	CHECK(guest_name(comma, n, sizeof(n)) && strcmp(n, "a,b") == 0, "got '%s'", n);
	CHECK(!guest_name(none, n, sizeof(n)), "found a name without -name");
	CHECK(!guest_name(last, n, sizeof(n)), "-name without a value");
	CHECK(!guest_name(only_opts, n, sizeof(n)), "found a name in options only");
}

static void identity_names_process_vm_and_thread(void)
{
	static const char *const args[] = { "qemu-system-x86_64", "-name", "web1,debug-threads=on", NULL };
	struct ht_identity id;

	fake_process(100, "qemu-system-x86", args, 103, "CPU 1/KVM");
	ht_identity_read(root, 100, 103, 12345, &id);
	CHECK(id.pid == 100 && id.tid == 103 && id.first_seen_ns == 12345, "%u %u", id.pid, id.tid);
	CHECK(strcmp(id.process_name, "qemu-system-x86") == 0, "process '%s'", id.process_name);
	CHECK(strcmp(id.thread_name, "CPU 1/KVM") == 0, "thread '%s'", id.thread_name);
	CHECK(strcmp(id.vm_name, "web1") == 0, "vm '%s'", id.vm_name);
	/* A process gone before it was read: the numbers, empty names. */
	ht_identity_read(root, 999, 999, 1, &id);
	CHECK(id.pid == 999 && !id.process_name[0] && !id.thread_name[0] && !id.vm_name[0], "names of a gone process");
}

/* A VM owner's bytes are stored as they are (escaped only where shown); a long name is cut between characters. */
static void names_keep_their_bytes_and_are_cut_between_characters(void)
{
	/* 21 characters of 3 bytes: 63 bytes fit the 64-byte vm_name only whole, 64 would not. */
	static const char *const args[] = { "qemu", "-name",
		"\x1b]0;x\x07\xff网网网网网网网网网网网网网网网网网网网网网", NULL };
	struct ht_identity id;

	fake_process(700, "q\x1b[2J\xc2\x9b", args, 701, "x\xe7\xbd\x91\xe7\xbd\x91\xe7\xbd\x91\xe7\xbd\x91\xe7\xbd\x91");
	ht_identity_read(root, 700, 701, 1, &id);
	ASSERT_STREQ(id.process_name, "q\x1b[2J\xc2\x9b", "id.process_name");
	/* "\x1b]0;x\x07\xff" is 7 bytes, then 18 whole characters (54 bytes) fit in 63. */
	CHECK(strlen(id.vm_name) == 61 && !strncmp(id.vm_name, "\x1b]0;x\x07\xff网", 10), "vm name '%s' (%zu bytes)",
	      id.vm_name, strlen(id.vm_name));
	/* 16-byte thread_name: 'x' and 4 characters (13 bytes); the fifth would need bytes 14-16. */
	ASSERT_STREQ(id.thread_name, "x网网网网", "id.thread_name");
}

/* Gives fake process pid a descriptor fd linking to target (readlink reads it back). */
static void fake_fd(__u32 pid, int fd, const char *target)
{
	char path[600];

	snprintf(path, sizeof(path), "%s/%u/fd", root, pid);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/%u/fd/%d", root, pid, fd);
	if (symlink(target, path))
		printf("    setup: symlink %s failed\n", path);
}

/*
 * A VM is a process with the guest name that holds a KVM VM descriptor:
 * another process with "-name web1" in its arguments (anyone can start one)
 * is not, and several VMs with one name are all found (a VM restarting).
 */
static void a_vm_is_found_by_guest_name_and_kvm_vm_descriptor(void)
{
	static const char *const web[] = { "qemu", "-name", "web1", NULL };
	static const char *const impostor[] = { "sleep", "1000", "-name", "web1", NULL };
	static const char *const db[] = { "qemu", "-name", "guest=db", NULL };
	__u32 pids[8];
	size_t unverified;

	fake_process(200, "qemu", web, 200, "qemu");
	fake_fd(200, 0, "/dev/null");
	fake_fd(200, 11, "/dev/kvm");
	fake_fd(200, 12, "anon_inode:kvm-vm");
	fake_fd(200, 13, "anon_inode:kvm-vcpu:0");
	fake_process(250, "sleep", impostor, 250, "sleep");
	fake_fd(250, 3, "/dev/kvm");
	fake_process(300, "qemu", db, 300, "qemu");
	fake_fd(300, 9, "anon_inode:kvm-vm");
	fake_process(310, "qemu", db, 310, "qemu");
	fake_fd(310, 9, "anon_inode:kvm-vm");
	/* Process 100 (the test above) is named web1 too, with no descriptors at all. */
	CHECK(ht_holds_kvm_vm(root, 200) == 1 && ht_holds_kvm_vm(root, 250) == 0 && ht_holds_kvm_vm(root, 100) == 0,
	      "kvm-vm descriptors");
	CHECK(ht_find_vms(root, "web1", pids, 8, &unverified) == 1 && pids[0] == 200 && unverified == 0,
	      "web1: only the process holding a VM");
	int n = ht_find_vms(root, "db", pids, 8, &unverified);
	CHECK(n == 2 && ((pids[0] == 300 && pids[1] == 310) || (pids[0] == 310 && pids[1] == 300)), "db: both, %d", n);
	CHECK(ht_find_vms(root, "nope", pids, 8, &unverified) == 0, "found nope");
	CHECK(ht_is_vm_named(root, 250, "web1") && !ht_is_vm_named(root, 300, "web1"), "names");
}

/*
 * record/top --vm match the whole guest name, however long: the 63 bytes a
 * trace file keeps are not enough to tell two VMs apart, and a longer NAME
 * must still find its VM. (The file keeps the cut name: identity above.)
 */
static void whole_guest_names_are_matched_not_their_first_63_bytes(void)
{
	char one[400], two[400], prefix[64], huge[400];
	__u32 pids[8];
	size_t unverified;

	memset(one, 'v', 70);
	strcpy(one + 70, "-one");
	memset(two, 'v', 70);
	strcpy(two + 70, "-two");
	memcpy(prefix, one, 63);
	prefix[63] = '\0';
	memset(huge, 'h', 300); /* longer than any buffer a name went through before */
	strcpy(huge + 300, ",,x");
	const char *const a1[] = { "qemu", "-name", one, NULL };
	const char *const a2[] = { "qemu", "-name", two, NULL };
	const char *const a3[] = { "qemu", "-name", huge, NULL };
	fake_process(800, "qemu", a1, 800, "qemu");
	fake_fd(800, 9, "anon_inode:kvm-vm");
	fake_process(810, "qemu", a2, 810, "qemu");
	fake_fd(810, 9, "anon_inode:kvm-vm");
	fake_process(820, "qemu", a3, 820, "qemu");
	fake_fd(820, 9, "anon_inode:kvm-vm");

	CHECK(ht_find_vms(root, one, pids, 8, &unverified) == 1 && pids[0] == 800, "the 74-byte name");
	CHECK(ht_find_vms(root, two, pids, 8, &unverified) == 1 && pids[0] == 810, "the other 74-byte name");
	CHECK(ht_find_vms(root, prefix, pids, 8, &unverified) == 0, "the first 63 bytes matched a longer name");
	CHECK(ht_is_vm_named(root, 800, one) && !ht_is_vm_named(root, 810, one) && !ht_is_vm_named(root, 800, prefix),
	      "named");
	huge[300] = ',';
	huge[301] = 'x';
	huge[302] = '\0'; /* ",," is a comma in QEMU's options */
	CHECK(ht_find_vms(root, huge, pids, 8, &unverified) == 1 && pids[0] == 820, "a 302-byte name");
}

/* Gives fake process pid a status file whose Uid: line is real, effective, saved, fs. */
static void fake_status(__u32 pid, const char *uids)
{
	char path[600];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%u/status", root, pid);
	if ((f = fopen(path, "w"))) {
		fprintf(f, "Name:\tqemu\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t%u\nUid:\t%s\nGid:\t0\t0\t0\t0\n", pid, uids);
		fclose(f);
	}
}

/* Who runs a VM process (--vm-user, and the warning when users differ): the real uid. */
static void the_user_of_a_process_is_its_real_uid(void)
{
	static const char *const args[] = { "qemu", "-name", "web1", NULL };
	uid_t uid = 1;

	fake_process(900, "qemu", args, 900, "qemu");
	fake_status(900, "1000\t0\t0\t0");
	CHECK(ht_process_uid(root, 900, &uid) == 0 && uid == 1000, "uid %u", (unsigned int)uid);
	fake_process(910, "qemu", args, 910, "qemu");
	fake_status(910, "4294967294\t4294967294\t4294967294\t4294967294");
	CHECK(ht_process_uid(root, 910, &uid) == 0 && uid == 4294967294u, "uid %u", (unsigned int)uid);
	fake_process(920, "qemu", args, 920, "qemu");
	fake_status(920, "x");
	CHECK(ht_process_uid(root, 920, &uid) == -EINVAL, "a malformed Uid: line");
	CHECK(ht_process_uid(root, 999, &uid) == -ENOENT, "a process that is gone");
}

/* The live view's names: a VM by its guest name, a vCPU thread by its own, read once each. */
static void live_names_of_vms_and_vcpu_threads(void)
{
	static const char *const args[] = { "qemu", "-name", "mail,debug-threads=on", NULL };
	struct ht_vm_names *n = calloc(1, sizeof(*n));
	char path[600];

	if (!ASSERT_MSG(n, "out of memory"))
		goto cleanup;
	n->proc = root;
	fake_process(500, "qemu-system-x86", args, 502, "CPU 1/KVM");
	if (!ASSERT_STREQ(ht_vm_names_lookup(n, 500), "mail", "ht_vm_names_lookup(n, 500)"))
		goto cleanup;
	if (!ASSERT_STREQ(ht_vm_names_thread(n, 500, 502), "CPU 1/KVM", "ht_vm_names_thread(n, 500, 502)"))
		goto cleanup;
	if (!ASSERT_STREQ(ht_vm_names_thread(n, 500, 599), "", "ht_vm_names_thread(n, 500, 599)"))
		goto cleanup;
	/* Cached: the thread's name stays what it was when first read. */
	snprintf(path, sizeof(path), "%s/500/task/502/comm", root);
	if (!ASSERT_MSG(ht_test_write_text(path, "renamed\n") == 0, "rename"))
		goto cleanup;
	if (!ASSERT_STREQ(ht_vm_names_thread(n, 500, 502), "CPU 1/KVM", "ht_vm_names_thread(n, 500, 502)"))
		goto cleanup;
cleanup:
	free(n);
}

static void thread_set_counts_each_thread_once(void)
{
	struct ht_thread_set *s = ht_thread_set_new();

	if (!ASSERT_MSG(s, "out of memory"))
		goto cleanup;
	for (unsigned int i = 0; i < 1000; i++)
		if (!ASSERT_MSG(ht_thread_set_add(s, 100 + i / 10, i) == 1, "thread %u new", i))
			goto cleanup;
	for (unsigned int i = 0; i < 1000; i++)
		if (!ASSERT_MSG(ht_thread_set_add(s, 100 + i / 10, i) == 0, "thread %u again", i))
			goto cleanup;
	if (!ASSERT_MSG(ht_thread_set_add(s, 0, 0) == 1 && ht_thread_set_add(s, 0, 0) == 0, "pid 0 tid 0"))
		goto cleanup;
cleanup:
	ht_thread_set_free(s);
}

/* The threads a test says are alive: tid 10 always, tid 11 while eleven_alive. */
static bool eleven_alive;

static bool tid_alive(__u32 tid)
{
	return tid == 10 || (tid == 11 && eleven_alive);
}

/*
 * A thread seen gone at two prunes in a row leaves the set: its id, back
 * as a new thread, is named again. One look is not enough (its records may
 * still be draining), and a thread alive again in between stays.
 */
static void thread_set_forgets_a_thread_gone_at_two_looks(void)
{
	struct ht_thread_set *s = ht_thread_set_new();

	if (!ASSERT_OK_PTR(s, "set") || !ASSERT_EQ(ht_thread_set_add(s, 1, 10), 1, "tid 10") ||
	    !ASSERT_EQ(ht_thread_set_add(s, 1, 11), 1, "tid 11"))
		goto cleanup;
	eleven_alive = false;
	if (!ASSERT_EQ(ht_thread_set_prune(s, tid_alive), 0, "none at the first look") ||
	    !ASSERT_EQ(ht_thread_set_add(s, 1, 11), 0, "tid 11 still named"))
		goto cleanup;
	eleven_alive = true;
	if (!ASSERT_EQ(ht_thread_set_prune(s, tid_alive), 0, "none: 11 alive again"))
		goto cleanup;
	eleven_alive = false;
	if (!ASSERT_EQ(ht_thread_set_prune(s, tid_alive), 0, "a first look again") ||
	    !ASSERT_EQ(ht_thread_set_prune(s, tid_alive), 1, "11 at its second") ||
	    !ASSERT_EQ(ht_thread_set_add(s, 1, 11), 1, "tid 11 named again") ||
	    !ASSERT_EQ(ht_thread_set_add(s, 1, 10), 0, "tid 10 kept"))
		goto cleanup;
cleanup:
	ht_thread_set_free(s);
}

static void *report_tid(void *out)
{
	*(pid_t *)out = gettid();
	return NULL;
}

/*
 * record's recording forgets the threads that ended, as the kernel says
 * (kill): a thread that ended and was joined goes at the second look, this
 * thread stays.
 */
static void a_recording_forgets_the_threads_that_ended(void)
{
	struct ht_recording rec = { .identities = ht_thread_set_new() };
	pid_t ended = 0;
	pthread_t th;

	if (!ASSERT_OK_PTR(rec.identities, "set") || !ASSERT_OK(pthread_create(&th, NULL, report_tid, &ended), "thread") ||
	    !ASSERT_OK(pthread_join(th, NULL), "join") ||
	    !ASSERT_EQ(ht_thread_set_add(rec.identities, (__u32)getpid(), (__u32)ended), 1, "the ended thread") ||
	    !ASSERT_EQ(ht_thread_set_add(rec.identities, (__u32)getpid(), (__u32)gettid()), 1, "this thread"))
		goto cleanup;
	if (!ASSERT_EQ(ht_recording_forget_ended_threads(&rec), 0, "first look") ||
	    !ASSERT_EQ(ht_recording_forget_ended_threads(&rec), 1, "the ended thread at the second") ||
	    !ASSERT_EQ(ht_thread_set_add(rec.identities, (__u32)getpid(), (__u32)gettid()), 0, "this thread kept"))
		goto cleanup;
cleanup:
	ht_thread_set_free(rec.identities);
}

static void identity_blocks_come_back_before_their_records(void)
{
	char path[600], err[256];
	struct ht_file_header h;
	struct ht_writer *w = NULL;
	struct ht_reader *r = NULL;
	struct ht_trailer t = { .records = 3 };
	unsigned int n = 0, named = 0;
	int ret;
	struct ht_identity id = { .first_seen_ns = 5, .pid = 7, .tid = 8 };
	struct ht_record rec = { .exit_ns = 5, .host_pid = 7, .host_tid = 8 };

	snprintf(path, sizeof(path), "%s/ids.htr", root);
	ht_header_init(&h);
	if (!ASSERT_MSG(ht_writer_open(path, true, &h, &w, err, sizeof(err)) == 0, "%s", err))
		goto cleanup;
	ht_writer_add(w, &rec); /* before the identity, in the same block */
	strcpy(id.vm_name, "web1");
	strcpy(id.thread_name, "CPU 0/KVM");
	strcpy(id.process_name, "qemu-system-x86");
	rec.host_tid = 8;
	if (!ASSERT_MSG(ht_writer_add_identity(w, &id) == 0, "identity"))
		goto cleanup;
	ht_writer_add(w, &rec);
	ht_writer_add(w, &rec);
	ret = ht_writer_close(w, &t);
	w = NULL; /* freed either way */
	if (!ASSERT_OK(ret, "close"))
		goto cleanup;

	if (!ASSERT_MSG(ht_reader_open(path, &r, err, sizeof(err)) == 0, "%s", err))
		goto cleanup;
	if (!ASSERT_MSG(ht_reader_header(r)->version == HT_FILE_VERSION, "version %u", ht_reader_header(r)->version))
		goto cleanup;
	while (ht_reader_next(r, &rec) == 1) {
		const struct ht_identity *got = ht_reader_identity(r, rec.host_pid, rec.host_tid);
		n++;
		if (got) {
			named++;
			if (!ASSERT_MSG(strcmp(got->vm_name, "web1") == 0 && strcmp(got->thread_name, "CPU 0/KVM") == 0, "names '%s' '%s'", got->vm_name, got->thread_name))
				goto cleanup;
		}
	}
	/* The IDENTITY block goes before the block holding the records: all are named when read. */
	if (!ASSERT_MSG(n == 3 && named == 3, "%u records, %u named", n, named))
		goto cleanup;
	if (!ASSERT_MSG(!ht_reader_status(r)->damaged && ht_reader_status(r)->has_trailer, "%s", ht_reader_status(r)->reason))
		goto cleanup;
	if (!ASSERT_MSG(ht_reader_vm_name(r, 7) && strcmp(ht_reader_vm_name(r, 7), "web1") == 0, "vm name of pid 7"))
		goto cleanup;
	ASSERT_MSG(ht_reader_vm_name(r, 8) == NULL, "pid 8 has no identity");
cleanup:
	ht_writer_abandon(w);
	ht_reader_close(r);
}

/* A version-1 file (written before IDENTITY blocks existed) reads the same, without names. */
/*
 * A thread id that came back as a new thread is named again: its records
 * read before the new identity carry the old names, those after it the new
 * ones, and the process's name is its latest. A recording through months of
 * VM churn names more threads than the 4096 a reader kept before: each is
 * found.
 */
static void a_thread_named_again_reads_by_its_latest_name_and_none_is_dropped(void)
{
	enum { MANY = 5000 };
	char path[600], err[256];
	struct ht_file_header h;
	struct ht_writer *w = NULL;
	struct ht_reader *r = NULL;
	struct ht_trailer t = { .records = 3 };
	struct ht_identity id = { .first_seen_ns = 5, .pid = 7, .tid = 8 };
	struct ht_record rec = { .exit_ns = 5, .host_pid = 7, .host_tid = 8 };
	const char *want[3] = { "web1", "web1", "web2" };
	unsigned int n = 0, wrong = 0;
	int ret = 0;

	snprintf(path, sizeof(path), "%s/again.htr", root);
	ht_header_init(&h);
	if (!ASSERT_MSG(ht_writer_open(path, true, &h, &w, err, sizeof(err)) == 0, "%s", err))
		goto cleanup;
	strcpy(id.vm_name, "web1");
	ret = ht_writer_add_identity(w, &id);
	ht_writer_add(w, &rec);
	ht_writer_add(w, &rec);
	ht_writer_flush(w);
	strcpy(id.vm_name, "web2");
	ret = ret ?: ht_writer_add_identity(w, &id);
	ht_writer_add(w, &rec);
	for (__u32 i = 0; i < MANY && !ret; i++) {
		struct ht_identity other = { .first_seen_ns = 6, .pid = 9, .tid = 100 + i };

		snprintf(other.vm_name, sizeof(other.vm_name), "vm%u", i);
		ret = ht_writer_add_identity(w, &other);
	}
	ret = ret ?: ht_writer_close(w, &t);
	w = NULL;
	if (!ASSERT_OK(ret, "write") || !ASSERT_MSG(ht_reader_open(path, &r, err, sizeof(err)) == 0, "%s", err))
		goto cleanup;
	while (n < 3 && ht_reader_next(r, &rec) == 1) {
		const struct ht_identity *got = ht_reader_identity(r, rec.host_pid, rec.host_tid);

		wrong += !got || strcmp(got->vm_name, want[n]) != 0;
		n++;
	}
	while (ht_reader_next(r, &rec) == 1)
		;
	if (!ASSERT_MSG(n == 3 && wrong == 0, "%u records, %u not named as their time's identity", n, wrong) ||
	    !ASSERT_MSG(!ht_reader_status(r)->damaged, "%s", ht_reader_status(r)->reason) ||
	    !ASSERT_MSG(ht_reader_vm_name(r, 7) && strcmp(ht_reader_vm_name(r, 7), "web2") == 0, "pid 7's latest name"))
		goto cleanup;
	ASSERT_MSG(ht_reader_identity(r, 9, 100 + MANY - 1) &&
			   strcmp(ht_reader_identity(r, 9, 100 + MANY - 1)->vm_name, "vm4999") == 0,
		   "the %d-th identity of the file", MANY + 2);
cleanup:
	ht_writer_abandon(w);
	ht_reader_close(r);
}

static void a_version_1_file_still_reads(void)
{
	char path[600], err[256];
	struct ht_file_header h;
	struct ht_writer *w = NULL;
	struct ht_reader *r = NULL;
	struct ht_trailer t = { .records = 2 };
	struct ht_record rec = { .exit_ns = 5, .host_pid = 7, .host_tid = 8 };
	FILE *f = NULL;
	unsigned int n = 0;
	int ret;

	snprintf(path, sizeof(path), "%s/v1.htr", root);
	ht_header_init(&h);
	if (!ASSERT_MSG(ht_writer_open(path, true, &h, &w, err, sizeof(err)) == 0, "%s", err))
		goto cleanup;
	ht_writer_add(w, &rec);
	ht_writer_add(w, &rec);
	ret = ht_writer_close(w, &t);
	w = NULL; /* freed either way */
	if (!ASSERT_OK(ret, "close"))
		goto cleanup;
	f = fopen(path, "r+b");
	if (!ASSERT_MSG(f && fread(&h, sizeof(h), 1, f) == 1, "read header"))
		goto cleanup;
	h.version = 1;
	h.header_crc32 = ht_crc32(0, &h, offsetof(struct ht_file_header, header_crc32));
	ret = fseek(f, 0, SEEK_SET) == 0 && fwrite(&h, sizeof(h), 1, f) == 1;
	ret = fclose(f) == 0 && ret;
	f = NULL;
	if (!ASSERT_TRUE(ret, "rewrite header"))
		goto cleanup;

	if (!ASSERT_MSG(ht_reader_open(path, &r, err, sizeof(err)) == 0, "%s", err))
		goto cleanup;
	while (ht_reader_next(r, &rec) == 1)
		n += ht_reader_identity(r, rec.host_pid, rec.host_tid) == NULL;
	ASSERT_MSG(n == 2 && ht_reader_status(r)->has_trailer && !ht_reader_status(r)->damaged, "%u unnamed records", n);
cleanup:
	if (f)
		fclose(f);
	ht_writer_abandon(w);
	ht_reader_close(r);
}

int main(void)
{
	char cmd[64];

	if (!mkdtemp(root)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(qemu_guest_name_in_every_spelling);
	RUN(identity_names_process_vm_and_thread);
	RUN(names_keep_their_bytes_and_are_cut_between_characters);
	RUN(a_vm_is_found_by_guest_name_and_kvm_vm_descriptor);
	RUN(whole_guest_names_are_matched_not_their_first_63_bytes);
	RUN(the_user_of_a_process_is_its_real_uid);
	RUN(live_names_of_vms_and_vcpu_threads);
	RUN(thread_set_counts_each_thread_once);
	RUN(thread_set_forgets_a_thread_gone_at_two_looks);
	RUN(a_recording_forgets_the_threads_that_ended);
	RUN(identity_blocks_come_back_before_their_records);
	RUN(a_thread_named_again_reads_by_its_latest_name_and_none_is_dropped);
	RUN(a_version_1_file_still_reads);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	if (system(cmd) != 0)
		printf("    could not remove %s\n", root);
	return ht_test_exit_status();
}
