#!/usr/bin/env bash
# The trace file `record` writes as root: never through a symbolic link, never
# into a directory reached through a link that someone other than root or the
# caller owns (convert's outputs neither), never into a file it did not create, replaced in one rename with --force, private
# by default, refused if it is not a regular file, and absent when nothing was
# recorded. And what a crash (kill -9) or a full disk costs: records come from
# tests/tools/inject_records, which feeds the recorder's own ring buffer.
source "$(dirname "$0")/../lib.sh"

INJECT=$OUTPUT/tests/tools/inject_records
if [ "$(id -u)" -ne 0 ]; then
	skip output_file "record loads BPF programs and needs root"
	suite_exit
fi
if [ ! -x "$INJECT" ]; then
	fail output_file "$INJECT is missing: run 'make tests-build'"
	suite_exit
fi

work=$(mktemp -d)
mounts=()
frozen=""
cleanup() {
	[ -n "$frozen" ] && fsfreeze -u "$frozen"
	for p in $(jobs -p); do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	for m in "${mounts[@]}"; do umount "$m" 2>/dev/null; done
	rm -rf "$work"
}
trap cleanup EXIT
chmod 755 "$work"
cd "$work" || exit 1
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
# A tmpfs of SIZE at DIR, unmounted when the suite ends.
mount_tmpfs() { mkdir -p "$2" && mount -t tmpfs -o "size=$1" tmpfs "$2" && mounts+=("$work/$2"); }
# `report` reads FILE whole, with its trailer and no warning.
complete() { local err; err=$("$HT" report "$1" 2>&1 >/dev/null) && [ -z "$err" ]; }

# --- symbolic links are never followed ------------------------------------------
echo secret >victim && chmod 600 victim
ln -s victim link.htr
expect_run force_refuses_a_symlink 1 "link.htr is a symbolic link: record does not write through links" -- \
	"$HT" record -q --force -o link.htr -d 0.1
[ "$(cat victim)" = secret ] && [ "$(stat -c %a victim)" = 600 ] && [ -L link.htr ] \
	&& pass force_leaves_a_links_target_untouched || fail force_leaves_a_links_target_untouched "$(ls -l victim link.htr)"
ln -s no-such-target dangling.htr
expect_run force_refuses_a_dangling_symlink 1 "dangling.htr is a symbolic link" -- "$HT" record -q --force -o dangling.htr -d 0.1
[ ! -e no-such-target ] && pass a_dangling_links_target_is_not_created || fail a_dangling_links_target_is_not_created "created"
# A directory like /tmp: sticky, everyone may create files in it.
mkdir -m 1777 shared
as_nobody ln -s "$work/victim" shared/planted.htr
expect_run refuses_a_link_another_user_planted 1 "planted.htr is a symbolic link" -- \
	"$HT" record -q --force -o shared/planted.htr -d 0.1
[ "$(cat victim)" = secret ] && pass a_planted_links_target_is_untouched || fail a_planted_links_target_is_untouched "$(cat victim)"

# --- a link to a directory is followed only if root or the caller owns it -------
# A root-only directory, and links to it planted by another user: in the
# sticky shared directory (fs.protected_symlinks would stop this one, where
# it is set) and in a directory of that user's own (it would not).
mkdir -m 700 rootonly && echo secret >rootonly/passwd && chmod 600 rootonly/passwd
mkdir -m 755 userdir && chown 65534:65534 userdir
as_nobody ln -s "$work/rootonly" shared/evil
as_nobody ln -s "$work/rootonly" userdir/evil
expect_run refuses_a_directory_link_another_user_planted 1 \
	"refusing to follow shared/evil, a symbolic link owned by uid 65534 \(not root, not you\): give the directory's real path with -o" -- \
	"$HT" record -q --force -o shared/evil/passwd -d 0.1
expect_run refuses_a_directory_link_in_another_users_directory 1 "refusing to follow .*/userdir/evil, a symbolic link owned by uid 65534" -- \
	"$HT" record -q --force -o "$work/userdir/evil/passwd" -d 0.1
# The same link reached through a root-owned one: every link on the way counts.
ln -s shared rootlink-to-shared
expect_run refuses_a_foreign_link_behind_a_root_link 1 "refusing to follow .*evil, a symbolic link owned by uid 65534" -- \
	"$HT" record -q --force -o rootlink-to-shared/evil/passwd -d 0.1
[ "$(cat rootonly/passwd)" = secret ] && [ "$(ls -A rootonly)" = passwd ] \
	&& pass a_root_only_directory_is_untouched || fail a_root_only_directory_is_untouched "$(ls -la rootonly)"
# Links root owns (such as /var/run -> /run) are followed, relative or absolute, as are . and ..
mkdir -p sub/deeper
ln -s sub rootlink
ln -s "$work/sub/deeper" rootlink-abs
ok=""
for o in rootlink/a.htr rootlink-abs/b.htr sub/deeper/../c.htr ./sub/./d.htr rootlink-abs/../e.htr "$work/rootlink/f.htr"; do
	"$HT" record -q -o "$o" -d 0.1 >/dev/null 2>&1 || ok+=" $o: exit $?;"
done
for f in sub/a.htr sub/deeper/b.htr sub/c.htr sub/d.htr sub/e.htr sub/f.htr; do
	complete "$f" || ok+=" $f missing or incomplete;"
done
[ -z "$ok" ] && pass root_owned_links_relative_paths_and_dotdot_are_followed \
	|| fail root_owned_links_relative_paths_and_dotdot_are_followed "$ok"
# Under sudo, the user who ran sudo is the caller: their own links are theirs to use.
SUDO_UID=65534 SUDO_GID=65534 "$HT" record -q -o userdir/evil/by-sudo-user.htr -d 0.1 >/dev/null 2>&1
complete rootonly/by-sudo-user.htr && pass under_sudo_the_callers_own_link_is_followed \
	|| fail under_sudo_the_callers_own_link_is_followed "$(ls -la rootonly)"
rm -f rootonly/by-sudo-user.htr
# convert's outputs go through the same resolver.
expect_run convert_chrome_refuses_a_directory_link_another_user_planted 1 "refusing to follow shared/evil, a symbolic link owned by uid 65534.*--chrome" -- \
	"$HT" convert --force --chrome shared/evil/passwd sub/a.htr
expect_run convert_ctf_refuses_a_directory_link_another_user_planted 1 "refusing to follow shared/evil, a symbolic link owned by uid 65534.*--ctf" -- \
	"$HT" convert --ctf shared/evil/ctf sub/a.htr
[ "$(cat rootonly/passwd)" = secret ] && [ "$(ls -A rootonly)" = passwd ] \
	&& pass convert_leaves_a_root_only_directory_untouched || fail convert_leaves_a_root_only_directory_untouched "$(ls -la rootonly)"
"$HT" convert --chrome rootlink/a.json sub/a.htr >/dev/null 2>&1 && "$HT" convert --ctf rootlink/../sub/a-ctf sub/a.htr >/dev/null 2>&1 \
	&& [ -s sub/a.json ] && [ -s sub/a-ctf/metadata ] && pass convert_follows_root_owned_links \
	|| fail convert_follows_root_owned_links "$(ls -la sub)"

# --- --force replaces with a new file, never writes into the old one -------------
echo old >old.htr
ln old.htr old-other-name
old_inode=$(stat -c %i old.htr)
out=$("$HT" record -q --force -o old.htr -d 0.2 2>&1); status=$?
if [ $status -eq 0 ] && complete old.htr && [ "$(stat -c %i old.htr)" != "$old_inode" ] && [ "$(cat old-other-name)" = old ]; then
	pass force_replaces_the_file_and_never_writes_into_the_old_one
else
	fail force_replaces_the_file_and_never_writes_into_the_old_one "status $status, old inode $old_inode now $(stat -c %i old.htr), old content '$(head -c 20 old-other-name)': $out"
fi
# Another user's file in the shared directory, created first and writable by all.
as_nobody bash -c "echo theirs >'$work/shared/theirs.htr' && chmod 666 '$work/shared/theirs.htr'"
ln shared/theirs.htr their-inode
out=$("$HT" record -q --force -o shared/theirs.htr -d 0.2 2>&1); status=$?
if [ $status -eq 0 ] && [ "$(cat their-inode)" = theirs ] && [ "$(stat -c '%u %a' shared/theirs.htr)" = "0 600" ] && complete shared/theirs.htr; then
	pass force_never_writes_into_another_users_file
else
	fail force_never_writes_into_another_users_file "status $status, their file '$(head -c 20 their-inode)', now $(stat -c '%u %a' shared/theirs.htr): $out"
fi

# --- mode and owner --------------------------------------------------------------
"$HT" record -q -o private.htr -d 0.1 >/dev/null 2>&1
[ "$(stat -c %a private.htr)" = 600 ] && pass file_is_0600_by_default || fail file_is_0600_by_default "$(stat -c %a private.htr)"
(umask 077 && "$HT" record -q --mode 0644 -o readable.htr -d 0.1 >/dev/null 2>&1)
[ "$(stat -c %a readable.htr)" = 644 ] && pass mode_option_sets_the_mode || fail mode_option_sets_the_mode "$(stat -c %a readable.htr)"
SUDO_UID=65534 SUDO_GID=65534 "$HT" record -q -o sudo.htr -d 0.1 >/dev/null 2>&1
[ "$(stat -c %u:%g:%a sudo.htr)" = 65534:65534:600 ] && pass under_sudo_the_file_belongs_to_the_sudo_user \
	|| fail under_sudo_the_file_belongs_to_the_sudo_user "$(stat -c %u:%g:%a sudo.htr)"
expect_run mode_must_be_octal 2 "invalid --mode '0999'" -- "$HT" record --mode 0999
# A mode that lets every user alter the trace, or marks data as a program, is refused.
expect_run mode_refuses_world_writable 2 "invalid --mode '0666': refused bits 0002 \(writable by every user: anyone could alter the file\); use a mode such as 0600 or 0640" -- \
	timeout 10 "$HT" record -q --mode 0666 -o w666.htr -d 0.1
expect_run mode_refuses_executable_bits 2 "invalid --mode '0777': refused bits 0002 \(writable by every user.*\) and 0111 \(executable: the file is data, not a program\)" -- \
	timeout 10 "$HT" record -q --mode 0777 -o w777.htr -d 0.1
expect_run mode_refuses_an_owner_executable_bit 2 "invalid --mode '700': refused bits 0100 \(executable" -- \
	timeout 10 "$HT" record -q --mode 700 -o w700.htr -d 0.1
expect_run mode_needs_a_file 2 "--no-file writes no trace file" -- "$HT" record --no-file --mode 0644

# --- not a regular file: refused up front, nothing blocks ------------------------
mkfifo fifo.htr
expect_run report_refuses_a_fifo_without_blocking 1 "fifo.htr is a FIFO, not a trace file" -- timeout 10 "$HT" report fifo.htr
expect_run record_refuses_a_fifo_without_blocking 1 "fifo.htr is a FIFO or pipe: record writes a trace file, not a stream" -- \
	timeout 10 "$HT" record -q --force -o fifo.htr -d 0.1
[ -p fifo.htr ] && pass the_fifo_stays_a_fifo || fail the_fifo_stays_a_fifo "$(ls -l fifo.htr)"
expect_run report_refuses_a_directory 1 "shared is a directory, not a trace file" -- "$HT" report shared
expect_run record_refuses_dev_null 1 "/dev/null is a character device: record writes a trace file, not a stream; give a file path" -- \
	"$HT" record -q --force -o /dev/null -d 0.1
expect_run record_refuses_standard_output 2 "-o -: the trace cannot go to standard output" -- "$HT" record -o -
expect_run record_refuses_a_pipe 1 "/dev/stdout leads to a FIFO or pipe: record writes a trace file, not a stream" -- \
	bash -c "set -o pipefail; '$HT' record -q -o /dev/stdout -d 0.1 | cat"

# --- nothing recorded, no file ---------------------------------------------------
mount_tmpfs 64k full
dd if=/dev/zero of=full/filler bs=4k 2>/dev/null
expect_run full_disk_at_start_is_one_line 1 "cannot write full/t.htr: No space left on device: free space or choose another path" -- \
	"$HT" record -q -o full/t.htr -d 0.1
[ "$(ls -A full)" = filler ] && pass full_disk_at_start_leaves_no_file || fail full_disk_at_start_leaves_no_file "$(ls -A full)"

# SIGTERM while the BPF programs load (-v: libbpf's log says when loading began).
sigterm_during_load() { # $1: output path; prints the recorder's exit status
	local log=$1.log pid
	"$HT" record -v -q --force -o "$1" -d 5 >/dev/null 2>"$log" &
	pid=$!
	for _ in $(seq 500); do grep -q "^libbpf: " "$log" 2>/dev/null && break; sleep 0.01; done
	kill -TERM $pid
	wait $pid
	echo $?
}
# A stop while loading ends the run cleanly (status 0) without a file: nothing was traced.
status=$(sigterm_during_load early.htr)
if [ "$status" -eq 0 ] && grep -q "stopped before tracing began: no trace file written" early.htr.log &&
	[ ! -e early.htr ] && [ -z "$(ls -A . | grep '^\.htr-')" ]; then
	pass sigterm_during_load_leaves_no_file
elif [ "$status" -eq 0 ] && [ -e early.htr ]; then
	skip sigterm_during_load_leaves_no_file "the signal came after loading (the machine was fast): nothing to check"
else
	fail sigterm_during_load_leaves_no_file "status $status; $(ls -la early.htr 2>&1)"
fi
cp private.htr keep.htr
status=$(sigterm_during_load keep.htr)
if [ "$status" -eq 0 ] && grep -q "stopped before tracing began" keep.htr.log && cmp -s private.htr keep.htr; then
	pass a_run_that_fails_leaves_the_old_file_intact
elif [ "$status" -eq 0 ] && ! cmp -s private.htr keep.htr; then
	skip a_run_that_fails_leaves_the_old_file_intact "the signal came after loading: nothing to check"
else
	fail a_run_that_fails_leaves_the_old_file_intact "status $status; $(ls -la keep.htr)"
fi

# --- a trailer that disagrees with the records ------------------------------------
# The trailer of a 0-record file claims 1000000, with its CRC fixed: only the count is wrong.
"$HT" record -q -o counted.htr -d 0.1 >/dev/null 2>&1
python3 - counted.htr <<'PY'
import struct, sys, zlib
p = sys.argv[1]
d = bytearray(open(p, 'rb').read())
assert len(d) == 256 + 24 + 64, len(d)
struct.pack_into('<Q', d, 280, 1000000)
struct.pack_into('<I', d, 276, zlib.crc32(bytes(d[280:344])))
open(p, 'wb').write(d)
PY
expect_run report_flags_a_trailer_count_that_disagrees 1 "counted.htr is damaged: read 0 records.*the trailer counts 1000000 records but the file holds 0" -- \
	"$HT" report counted.htr

# --- a full disk during the recording -------------------------------------------
# 1 MiB holds the header and three 320 KiB blocks; the fourth is refused part way.
mount_tmpfs 1m small
"$HT" record -q -b 8M -o small/t.htr >enospc.out 2>enospc.err &
pid=$!
inj=$("$INJECT" $pid 30000 2>&1)
sleep 1.5 # the recorder flushes what it holds
kill -INT $pid
wait $pid; status=$?
not_written=$(sed -n 's/.*: \([0-9]*\) records not written (not written: disk full).*/\1/p' enospc.err)
report=$("$HT" report small/t.htr 2>&1); rstatus=$?
read_records=$(sed -n 's/^records: //p' <<<"$report")
if [ $status -eq 1 ] && [ "$inj" = "injected 30000 dropped 0" ] && [ -n "$not_written" ] && [ "$not_written" -gt 0 ] \
	&& [ "$(grep -c . enospc.err)" -le 3 ]; then
	pass disk_full_exits_1_with_the_count_not_written
else
	fail disk_full_exits_1_with_the_count_not_written "status $status, $inj: $(cat enospc.out enospc.err)"
fi
if [ $rstatus -eq 0 ] && [ -n "$read_records" ] && [ "$read_records" -gt 0 ] && [ $((read_records + ${not_written:-0})) -eq 30000 ]; then
	pass disk_full_keeps_every_whole_block_readable
else
	fail disk_full_keeps_every_whole_block_readable "report status $rstatus, $read_records records read + ${not_written:-?} not written != 30000: $report"
fi
grep -q "not written: disk full $not_written)" <<<"$report" && pass disk_full_count_is_in_the_trailer \
	|| fail disk_full_count_is_in_the_trailer "$report"

# --- a stalled disk does not stall the drain --------------------------------------
# ext4 on a loop device, frozen while records come: every write(2) waits. The
# drain must go on emptying a 64 KiB ring buffer (about 740 records) meanwhile.
truncate -s 64M disk.img
mkdir stall
if mkfs.ext4 -q -F disk.img >/dev/null 2>&1 && mount -o loop disk.img stall 2>/dev/null; then
	mounts+=("$work/stall")
fi
if [ ${#mounts[@]} -gt 0 ] && [ "${mounts[-1]}" = "$work/stall" ] && fsfreeze -f stall 2>/dev/null && fsfreeze -u stall; then
	"$HT" record -q -b 64K -o stall/t.htr >stall.out 2>&1 &
	pid=$!
	for _ in $(seq 600); do [ -e stall/t.htr ] && break; sleep 0.05; done
	fsfreeze -f stall && frozen=$work/stall
	inj=$("$INJECT" $pid 4000 20 2>&1) # about 2 s
	fsfreeze -u stall && frozen=""
	sleep 1
	kill -INT $pid
	wait $pid; status=$?
	check=$("$INJECT" --check stall/t.htr 4000 2>&1)
	if [ $status -eq 0 ] && [ "$inj" = "injected 4000 dropped 0" ] && [ "$check" = "records 4000 missing 0" ]; then
		pass a_stalled_disk_does_not_stall_the_drain
	else
		fail a_stalled_disk_does_not_stall_the_drain "status $status, $inj, $check: $(cat stall.out)"
	fi
else
	skip a_stalled_disk_does_not_stall_the_drain "cannot freeze an ext4 image on a loop device here (mkfs.ext4, loop module, fsfreeze)"
fi

# --- kill -9 with five recorders at once ---------------------------------------
# Every record older than a second at the kill must be in the file, and nothing
# may stay reserved past the file's end.
mount_tmpfs 512m crash
pids=()
for i in 1 2 3 4 5; do
	"$HT" record -q -b 4M -o crash/$i.htr >/dev/null 2>&1 &
	pids+=($!)
done
for _ in $(seq 600); do
	[ "$(ls crash/*.htr 2>/dev/null | wc -l)" -eq 5 ] && break
	sleep 0.05
done
for i in 1 2 3 4 5; do
	"$INJECT" "${pids[i - 1]}" --kill-after 3 >crash/$i.inject 2>&1 &
done
for i in 1 2 3 4 5; do wait "${pids[i - 1]}" 2>/dev/null; done
wait
bad=""; spare=""
for i in 1 2 3 4 5; do
	read -r _ injected _ dropped _ old <crash/$i.inject
	check=$("$INJECT" --check crash/$i.htr "${old:-1}" 2>&1)
	if [ -z "$old" ] || [ "$old" -eq 0 ] || [ "$dropped" != 0 ] || [ "${check##* missing }" != 0 ]; then
		bad+=" recorder $i: $(cat crash/$i.inject); $check;"
	fi
	read -r blocks block_size size < <(stat -c '%b %B %s' crash/$i.htr)
	if [ $((blocks * block_size)) -gt $(((size + 4095) / 4096 * 4096)) ]; then
		spare+=" recorder $i: $((blocks * block_size)) bytes allocated for $size;"
	fi
done
[ -z "$bad" ] && pass kill_9_loses_nothing_older_than_a_second_with_5_recorders \
	|| fail kill_9_loses_nothing_older_than_a_second_with_5_recorders "$bad"
[ -z "$spare" ] && pass kill_9_leaves_no_space_reserved_past_the_end || fail kill_9_leaves_no_space_reserved_past_the_end "$spare"

suite_exit
