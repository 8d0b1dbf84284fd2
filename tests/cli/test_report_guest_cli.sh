#!/usr/bin/env bash
# Command-line errors of report's guest-event options: one line, exit 2,
# before any file is read. (Decoding itself: tests/unit/test_guest_decode.c.)
source "$(dirname "$0")/../lib.sh"
cd "$(mktemp -d)" || exit 1
trap 'rm -rf "$PWD"' EXIT

expect_run report_graph_excludes_csv 2 "--graph and --sched exclude --dump, --csv, --json and --hist" -- "$HT" report --graph --csv a.htr
expect_run report_graph_excludes_sched 2 "--graph and --sched exclude each other" -- "$HT" report --graph --sched a.htr
expect_run report_catalog_needs_a_decoding_mode 2 "go with --dump, --csv, --json, --graph or --sched" -- "$HT" report --catalog x.cat a.htr
expect_run report_symbols_need_a_decoding_mode 2 "go with --dump, --csv, --json, --graph or --sched" -- "$HT" report --hist --guest-symbols map a.htr
expect_run report_bad_kaslr_offset 2 "invalid --kaslr-offset 'abc': expected an integer" -- "$HT" report --dump --kaslr-offset abc a.htr
expect_run report_two_guest_symbols 2 "--guest-symbols given twice" -- "$HT" report --dump --guest-symbols a --guest-symbols b a.htr
cats=(); for i in 1 2 3 4 5 6 7 8 9; do cats+=(--catalog "c$i"); done
expect_run report_too_many_catalogs 2 "too many --catalog: at most 8 files" -- "$HT" report --dump "${cats[@]}" a.htr
if "$HT" report --help | grep -q -- "--guest-symbols FILE"; then
	pass report_help_lists_guest_options
else
	fail report_help_lists_guest_options "no --guest-symbols in report --help"
fi
suite_exit
