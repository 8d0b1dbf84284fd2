# hypertrace-bpf build.
#   make            BPF object, skeleton, the hypertrace-bpf binary (libbpf linked
#                   statically) and the guest programs
#   make static     fully static binaries (for copying into a test VM)
#   make test       install missing build/test packages, build, run every test
#   make demo       install, build, and show hypertrace-bpf recording real hypercalls
#   make bench      benchmarks
#   make man        man pages (docs/man), filled with each command's --help
#   make install    PREFIX=/usr/local, DESTDIR= for staging; make uninstall
#   make install-service  the systemd units, its settings file and the Prometheus rules
#   make deb        Debian packages into $(OUTPUT)/deb (dpkg-buildpackage)
#   make image      an OCI image FROM scratch holding the static binary (buildah, nothing pulled)
#   make deps       install the Debian packages the build and tests need (root)
# Everything generated goes to $(OUTPUT); `make clean` removes exactly that.
# Quiet by default; `make V=1` prints every command. The usual variables
# override the toolchain: `make CC=clang CFLAGS='-O1 -g'`.

OUTPUT ?= .output
CLANG ?= clang
BPFTOOL ?= bpftool
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
LIBEXECDIR ?= $(PREFIX)/libexec/hypertrace-bpf
DOCDIR ?= $(PREFIX)/share/doc/hypertrace-bpf
MANDIR ?= $(PREFIX)/share/man
# bash-completion's directory under PREFIX, as its pkg-config file names it.
BASHCOMPDIR ?= $(or $(shell pkg-config --define-variable=datadir=$(PREFIX)/share --variable=completionsdir bash-completion 2>/dev/null),$(PREFIX)/share/bash-completion/completions)
SYSCONFDIR ?= /etc
SYSTEMD_UNITDIR ?= $(PREFIX)/lib/systemd/system
DATADIR ?= $(PREFIX)/share/hypertrace-bpf
INSTALL ?= install

ifeq ($(V),1)
Q =
msg =
else
Q = @
msg = @printf '  %-8s %s\n' "$(1)" "$(patsubst $(OUTPUT)/%,%,$(2))";
endif

WARN := -Wall -Wextra -Werror
# gcc only (clang has no such warning): a goto must not skip an initialised declaration.
USER_WARN := $(WARN) $(shell $(CC) -Werror -Wjump-misses-init -E -x c /dev/null >/dev/null 2>&1 && echo -Wjump-misses-init)
CFLAGS ?= -O2 -g
# What the project needs whatever CFLAGS the user gives: the language level,
# warnings as errors, include paths and header dependency files (-MMD -MP).
PROJECT_CFLAGS := -std=c11 -D_GNU_SOURCE $(USER_WARN) -Iinclude -Isrc -Isrc/user -I$(OUTPUT) -MMD -MP
# The tests' build (the san/ objects, the test programs) runs under ASan and
# UBSan; SANITIZE=0 builds the same without them (the Debian 13 root, whose
# run proves that system's toolchain and libraries while the host's run
# holds the sanitizers: tests/distro/test_debian13.sh).
SANITIZE ?= 1
SAN_FLAGS_ON := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
SAN_FLAGS := $(if $(filter 0,$(SANITIZE)),,$(SAN_FLAGS_ON))
# -mcpu=v3: 32-bit subregisters and jumps (kernel 5.1+), no zero-extension shifts on the hot path.
BPF_CFLAGS := -target bpf -mcpu=v3 -g -O2 -D__TARGET_ARCH_x86 $(WARN) -I. -Iinclude

# How to link libbpf, as pkg-config says (its libelf needs libzstd too in a
# static link on Debian 13). LIBBPF_LINK=static (the default): libbpf
# statically, the libraries it needs (libelf, zlib) dynamically, so the binary
# runs on any host with libelf; LIBBPF_LINK=dynamic: libbpf's shared library
# (the Debian package). The fully static binaries (`make static`) take
# `pkg-config --static`. Asked once, when a link first needs it.
PKG_CONFIG ?= pkg-config
LIBBPF_LINK ?= static
pkg_libs = $(or $(shell $(PKG_CONFIG) $(1) 2>/dev/null),$(error $(PKG_CONFIG) $(1) failed: run 'make deps' as root (pkg-config, libbpf-dev)))
LIBBPF_DEPS = $(eval LIBBPF_DEPS := $(shell $(PKG_CONFIG) --print-requires-private libbpf 2>/dev/null | cut -d' ' -f1))$(LIBBPF_DEPS)
ifeq ($(LIBBPF_LINK),static)
LIBBPF_LIBS = $(eval LIBBPF_LIBS := -Wl,-Bstatic $(call pkg_libs,--libs libbpf) -Wl,-Bdynamic \
	$(if $(LIBBPF_DEPS),$(call pkg_libs,--libs $(LIBBPF_DEPS))))$(LIBBPF_LIBS)
else ifeq ($(LIBBPF_LINK),dynamic)
LIBBPF_LIBS = $(eval LIBBPF_LIBS := $(call pkg_libs,--libs libbpf))$(LIBBPF_LIBS)
else
$(error LIBBPF_LINK=$(LIBBPF_LINK): give static or dynamic)
endif
LIBBPF_STATIC_LIBS = $(eval LIBBPF_STATIC_LIBS := $(call pkg_libs,--static --libs libbpf))$(LIBBPF_STATIC_LIBS)
# The trace file's block codec and CRC-32 use zlib themselves.
ZLIB_LIBS = $(eval ZLIB_LIBS := $(call pkg_libs,--libs zlib))$(ZLIB_LIBS)
LIBS = $(LIBBPF_LIBS) $(ZLIB_LIBS) -lm -lpthread
STATIC_LIBS = -static $(LIBBPF_STATIC_LIBS) -lm -lpthread
# elfutils 0.192 (Debian 13) ships a libelf.a that calls search-tree helpers
# of its internal libeu, which is not installed: the static binaries then link
# src/compat/eu_search.c. Only where libelf.a needs them and lacks them.
LIBELF_A := $(shell $(CC) -print-file-name=libelf.a 2>/dev/null)
STATIC_COMPAT_OBJS := $(if $(shell nm -u $(LIBELF_A) 2>/dev/null | grep -w eu_search_tree_init),$(if \
	$(shell nm --defined-only $(LIBELF_A) 2>/dev/null | grep -w eu_search_tree_init),,$(OUTPUT)/obj/src/compat/eu_search.o))

BPF_SRCS := $(wildcard src/bpf/*.bpf.c)
SKELS := $(patsubst src/bpf/%.bpf.c,$(OUTPUT)/%.skel.h,$(BPF_SRCS))
# src/common: shared with the guest programs. src/user/*/: one directory per stage.
COMMON_SRCS := $(wildcard src/common/*.c)
USER_SRCS := $(wildcard src/user/*.c src/user/*/*.c) $(COMMON_SRCS)
LIB_SRCS := $(filter-out src/user/main.c,$(USER_SRCS))
obj = $(patsubst %.c,$(OUTPUT)/$(1)/%.o,$(2))
OBJS := $(call obj,obj,$(USER_SRCS))
LIB_OBJS := $(call obj,obj,$(LIB_SRCS))
SAN_LIB_OBJS := $(call obj,san,$(LIB_SRCS))
SAN_OBJS := $(call obj,san,$(USER_SRCS))

TEST_SRCS := $(wildcard tests/unit/test_*.c tests/kernel/test_*.c)
TEST_SUPPORT_SRCS := $(wildcard tests/support/*.c)
TEST_SUPPORT_OBJS := $(call obj,san,$(TEST_SUPPORT_SRCS))
TEST_BINS := $(patsubst tests/%.c,$(OUTPUT)/tests/%,$(TEST_SRCS))
# Drivers the shell suites run (not suites themselves), e.g. trace file generators.
TEST_HELPERS := $(OUTPUT)/tests/prometheus/metrics_feed \
	$(patsubst tests/%.c,$(OUTPUT)/tests/%,$(wildcard tests/tools/*.c))

BIN := $(OUTPUT)/hypertrace-bpf
SAN_BIN := $(OUTPUT)/san/hypertrace-bpf
STATIC_BIN := $(OUTPUT)/static/hypertrace-bpf

.PHONY: all static test demo bench deps clean tests-build tests-build-suites fuzz-build guest install uninstall fuzz man deb install-service image
.DELETE_ON_ERROR:
# Keep every intermediate (BPF objects, skeletons): a second `make` does nothing.
.SECONDARY:

all: $(BIN) guest

$(OUTPUT)/%.bpf.o: src/bpf/%.bpf.c
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) -MMD -MP -c $< -o $@

$(OUTPUT)/%.skel.h: $(OUTPUT)/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@

# User-space objects wait for the skeletons: the loader includes them.
$(OUTPUT)/obj/%.o: %.c | $(SKELS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(PROJECT_CFLAGS) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(OUTPUT)/san/%.o: %.c | $(SKELS)
	$(call msg,CC-SAN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(PROJECT_CFLAGS) $(CPPFLAGS) $(CFLAGS) $(SAN_FLAGS) -c $< -o $@

$(OUTPUT)/san/tests/%.o: PROJECT_CFLAGS += -Itests/support

$(BIN): $(OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) $^ $(LIBS) -o $@

$(SAN_BIN): $(SAN_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(SAN_FLAGS) $(LDFLAGS) $^ $(LIBS) -o $@

# The static binary links the very objects of the normal one.
$(STATIC_BIN): $(OBJS) $(STATIC_COMPAT_OBJS)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) $^ $(STATIC_LIBS) -o $@

# Test programs: each tests/<suite>/test_x.c links the sanitized library objects.
$(OUTPUT)/tests/%: $(OUTPUT)/san/tests/%.o $(TEST_SUPPORT_OBJS) $(SAN_LIB_OBJS)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(SAN_FLAGS) $(LDFLAGS) $^ $(LIBS) -lpthread -o $@

# boottrace_gen replays a trace through the guest program's own code.
BOOTTRACE_GEN_GUEST_SRCS := guest/trace_replay.c guest/trace_text.c
$(OUTPUT)/tests/tools/boottrace_gen: $(call obj,san,$(BOOTTRACE_GEN_GUEST_SRCS))
$(OUTPUT)/san/tests/tools/boottrace_gen.o $(call obj,san,$(BOOTTRACE_GEN_GUEST_SRCS)): PROJECT_CFLAGS += -Iguest

# Benchmarks: their own BPF object (the real handlers next to reference designs) and drivers.
BENCH_BINS := $(OUTPUT)/bench/bench_hotpath $(OUTPUT)/bench/bench_drain $(OUTPUT)/bench/bench_producers \
	$(OUTPUT)/bench/bench_exits

$(OUTPUT)/bench/%.bpf.o: bench/%.bpf.c
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) -Isrc/bpf -MMD -MP -c $< -o $@

$(OUTPUT)/bench/%.skel.h: $(OUTPUT)/bench/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@

$(OUTPUT)/obj/bench/bench_hotpath.o: $(OUTPUT)/bench/hotpath.skel.h
$(OUTPUT)/obj/bench/bench_producers.o: $(OUTPUT)/bench/producers.skel.h
$(OUTPUT)/obj/bench/%.o: PROJECT_CFLAGS += -I$(OUTPUT)/bench -Itests/support

$(OUTPUT)/bench/bench_hotpath: $(OUTPUT)/obj/bench/bench_hotpath.o $(OUTPUT)/obj/tests/support/synth.o $(LIB_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) $^ $(LIBS) -o $@

$(OUTPUT)/bench/bench_producers: $(OUTPUT)/obj/bench/bench_producers.o $(LIB_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) $^ $(LIBS) -lpthread -o $@

$(OUTPUT)/bench/bench_exits: $(OUTPUT)/obj/bench/bench_exits.o $(OUTPUT)/obj/tests/support/synth.o $(LIB_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) $^ $(LIBS) -o $@

$(OUTPUT)/bench/bench_drain: $(OUTPUT)/obj/bench/bench_drain.o $(LIB_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) $^ $(LIBS) -lpthread -o $@

# Fuzzing (tests/fuzz): the reader and every report mode (fuzz_report), the
# same with checksums made right after each mutation so that inputs reach
# EXITS blocks and vCPU switches (fuzz_blocks), and the guest-event decoding
# (fuzz_decode), each with checks of its output (output_check.c), under
# libFuzzer with ASan and UBSan, built with clang whatever CC is; seeds come
# from write_seeds.
# clang's UBSan also stops at an offset applied to a NULL pointer (gcc's does
# not): pointer-overflow is part of undefined, named here so it stays on.
FUZZ_CC ?= $(CLANG)
FUZZ_SAN := -fsanitize=address,undefined,pointer-overflow -fno-omit-frame-pointer -fno-sanitize-recover=all
FUZZ_CFLAGS := -std=c11 -D_GNU_SOURCE $(WARN) -Iinclude -Isrc -Isrc/user -I$(OUTPUT) -MMD -MP \
	-g -O1 -fsanitize=fuzzer-no-link $(FUZZ_SAN)
FUZZ_BIN := $(OUTPUT)/fuzz/fuzz_report
FUZZ_DECODE_BIN := $(OUTPUT)/fuzz/fuzz_decode
FUZZ_BLOCKS_BIN := $(OUTPUT)/fuzz/fuzz_blocks
SEED_BIN := $(OUTPUT)/fuzz/write_seeds
FUZZ_SECONDS ?= 600

$(OUTPUT)/fuzz/obj/%.o: %.c | $(SKELS)
	$(call msg,CC-FUZZ,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -c $< -o $@

$(FUZZ_BIN): $(OUTPUT)/fuzz/obj/tests/fuzz/fuzz_report.o $(OUTPUT)/fuzz/obj/tests/fuzz/output_check.o \
		$(call obj,fuzz/obj,$(LIB_SRCS))
	$(call msg,LINK,$@)
	$(Q)$(FUZZ_CC) -fsanitize=fuzzer $(FUZZ_SAN) $(LDFLAGS) $^ $(LIBS) -o $@

# fuzz_report's harness with HT_FUZZ_BLOCKS: checksums fixed up (tests/fuzz/fix_crcs.c).
$(OUTPUT)/fuzz/obj/tests/fuzz/fuzz_blocks.o: tests/fuzz/fuzz_report.c | $(SKELS)
	$(call msg,CC-FUZZ,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -DHT_FUZZ_BLOCKS -c $< -o $@

$(FUZZ_BLOCKS_BIN): $(OUTPUT)/fuzz/obj/tests/fuzz/fuzz_blocks.o $(OUTPUT)/fuzz/obj/tests/fuzz/fix_crcs.o \
		$(OUTPUT)/fuzz/obj/tests/fuzz/output_check.o $(call obj,fuzz/obj,$(LIB_SRCS))
	$(call msg,LINK,$@)
	$(Q)$(FUZZ_CC) -fsanitize=fuzzer $(FUZZ_SAN) $(LDFLAGS) $^ $(LIBS) -o $@

# The decoders with the checks of their output (tests/fuzz/output_check.c).
$(FUZZ_DECODE_BIN): $(OUTPUT)/fuzz/obj/tests/fuzz/fuzz_decode.o $(OUTPUT)/fuzz/obj/tests/fuzz/output_check.o \
		$(call obj,fuzz/obj,$(LIB_SRCS))
	$(call msg,LINK,$@)
	$(Q)$(FUZZ_CC) -fsanitize=fuzzer $(FUZZ_SAN) $(LDFLAGS) $^ $(LIBS) -o $@

$(SEED_BIN): $(OUTPUT)/obj/tests/fuzz/write_seeds.o $(LIB_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) $^ $(LIBS) -o $@

# Longer than the bounded run of `make test`: make fuzz FUZZ_SECONDS=3600
fuzz: $(FUZZ_BIN) $(FUZZ_DECODE_BIN) $(FUZZ_BLOCKS_BIN) $(SEED_BIN)
	FUZZ_SECONDS=$(FUZZ_SECONDS) tests/fuzz/test_fuzz.sh

# The BPF load matrix (tests/kernel/test_load_matrix.c), also static: the
# nested end-to-end test runs it on the kernel inside the nested machine.
STATIC_LOAD_MATRIX := $(OUTPUT)/static/test_load_matrix
$(OUTPUT)/obj/tests/%.o: PROJECT_CFLAGS += -Itests/support

$(STATIC_LOAD_MATRIX): $(OUTPUT)/obj/tests/kernel/test_load_matrix.o $(OUTPUT)/obj/tests/support/test.o $(LIB_OBJS) $(STATIC_COMPAT_OBJS)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) $^ $(STATIC_LIBS) -o $@

include guest/guest.mk

static: $(STATIC_BIN) $(STATIC_LOAD_MATRIX) guest

# What every suite but the benchmarks' and the fuzzers' runs (a Debian 13
# root builds only this: tests/distro/test_debian13.sh), then those two.
tests-build-suites: $(BIN) $(SAN_BIN) $(TEST_BINS) $(TEST_HELPERS) static man
fuzz-build: $(FUZZ_BIN) $(FUZZ_DECODE_BIN) $(FUZZ_BLOCKS_BIN) $(SEED_BIN)
tests-build: tests-build-suites $(OUTPUT)/bench/bench_hotpath $(OUTPUT)/bench/bench_producers fuzz-build

# The build on every CPU (a fresh clone builds everything, sanitizer
# variants included); the suites then share the machine themselves
# (tests/run). The fuzzers (a third build of the tree, with clang) are
# built by their suite, ahead of its turn beside the serial suites
# (tests/fuzz/test_fuzz.sh --prepare), not before the first suite can start.
test: deps
	$(MAKE) -j$$(nproc) tests-build-suites $(OUTPUT)/bench/bench_hotpath $(OUTPUT)/bench/bench_producers
	tests/run

demo: deps
	$(MAKE) all static
	tests/demo.sh

bench: deps
	$(MAKE) all static $(BENCH_BINS) $(OUTPUT)/tests/tools/trace_gen
	bench/run

deps:
	@tests/install-deps.sh

# Man pages: docs/man/PAGE.scd, its '%help PART' lines filled by
# docs/man/mangen.py from the --help of the command the page is named after
# (hypertrace-bpf-CMD.1: `hypertrace-bpf CMD --help`; hypertrace-bpf.1:
# `hypertrace-bpf --help`), then scdoc (no hyphenation: option names stay
# whole for search and copying). A new command's page is one new
# PAGE.scd; tests/docs checks every command has one and that no option is
# missing from a page or from --help.
MAN_SRCS := $(wildcard docs/man/*.scd)
MAN_PAGES := $(patsubst docs/man/%.scd,$(OUTPUT)/man/%,$(MAN_SRCS))
man_command = $(if $(filter hypertrace-bpf-%.1,$(1)),$(patsubst hypertrace-bpf-%.1,%,$(1)))
COMPLETION := completion/hypertrace-bpf.bash
DOCS := README.md $(wildcard docs/*.md)

man: $(MAN_PAGES)

$(OUTPUT)/man/%: docs/man/%.scd docs/man/mangen.py $(BIN)
	$(call msg,MAN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(BIN) $(call man_command,$*) --help >$@.help
	$(Q)python3 docs/man/mangen.py $< <$@.help >$@.scd
	$(Q)scdoc <$@.scd | sed '/^\.TH /a .nh\n.ad l' >$@
	$(Q)rm -f $@.help $@.scd

# Everything install puts in place, so that uninstall removes exactly that.
INSTALLED_FILES = $(BINDIR)/hypertrace-bpf \
	$(addprefix $(LIBEXECDIR)/,$(notdir $(GUEST_PROGS))) \
	$(addprefix $(DOCDIR)/,$(notdir $(DOCS))) \
	$(foreach p,$(notdir $(MAN_PAGES)),$(MANDIR)/man$(subst .,,$(suffix $(p)))/$(p)) \
	$(BASHCOMPDIR)/hypertrace-bpf

install: $(BIN) $(GUEST_PROGS) $(MAN_PAGES)
	$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBEXECDIR) $(DESTDIR)$(DOCDIR) \
		$(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(BASHCOMPDIR)
	$(INSTALL) -m 0755 $(BIN) $(DESTDIR)$(BINDIR)/hypertrace-bpf
	$(INSTALL) -m 0755 $(GUEST_PROGS) $(DESTDIR)$(LIBEXECDIR)/
	$(INSTALL) -m 0644 $(DOCS) $(DESTDIR)$(DOCDIR)/
	$(INSTALL) -m 0644 $(filter %.1,$(MAN_PAGES)) $(DESTDIR)$(MANDIR)/man1/
	$(INSTALL) -m 0644 $(filter %.5,$(MAN_PAGES)) $(DESTDIR)$(MANDIR)/man5/
	$(INSTALL) -m 0644 $(COMPLETION) $(DESTDIR)$(BASHCOMPDIR)/hypertrace-bpf

# The directories that are the project's own go too, once empty.
uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED_FILES))
	-rmdir $(DESTDIR)$(LIBEXECDIR) $(DESTDIR)$(DOCDIR) 2>/dev/null

# Debian packages (debian/): the .debs, .buildinfo and .changes go to
# $(OUTPUT)/deb. dpkg-buildpackage writes them next to the source tree, so it
# builds a copy of the tracked files under $(OUTPUT)/deb/src.
DEB_OUT := $(OUTPUT)/deb
deb:
	@command -v dpkg-buildpackage >/dev/null || { echo "make deb: dpkg-buildpackage is missing: run 'make deps' as root" >&2; exit 1; }
	rm -rf $(DEB_OUT)
	mkdir -p $(DEB_OUT)/src
	git ls-files -z | xargs -0 tar -cf - --no-recursion | tar -xf - -C $(DEB_OUT)/src
	cd $(DEB_OUT)/src && dpkg-buildpackage -us -uc -b $(if $(filter 1,$(V)),,>../build.log 2>&1) || \
		{ echo "make deb: dpkg-buildpackage failed, see $(DEB_OUT)/build.log" >&2; exit 1; }
	rm -rf $(DEB_OUT)/src
	@echo "make deb: the packages and hypertrace-bpf_*.changes are in $(DEB_OUT)"

# The units (the service runs $(BINDIR)/hypertrace-bpf on the port its
# socket unit holds); an existing settings file is kept.
SERVICE := hypertrace-exporter
install-service:
	$(INSTALL) -d $(DESTDIR)$(SYSTEMD_UNITDIR) $(DESTDIR)$(SYSCONFDIR)/default $(DESTDIR)$(DATADIR)/prometheus
	sed 's|/usr/bin/hypertrace-bpf|$(BINDIR)/hypertrace-bpf|' deploy/systemd/$(SERVICE).service \
		> $(DESTDIR)$(SYSTEMD_UNITDIR)/$(SERVICE).service
	chmod 0644 $(DESTDIR)$(SYSTEMD_UNITDIR)/$(SERVICE).service
	$(INSTALL) -m 0644 deploy/systemd/$(SERVICE).socket $(DESTDIR)$(SYSTEMD_UNITDIR)/
	[ -e $(DESTDIR)$(SYSCONFDIR)/default/$(SERVICE) ] || \
		$(INSTALL) -m 0644 deploy/systemd/$(SERVICE).default $(DESTDIR)$(SYSCONFDIR)/default/$(SERVICE)
	$(INSTALL) -m 0644 deploy/prometheus/hypertrace.rules.yml $(DESTDIR)$(DATADIR)/prometheus/

# The image and its seccomp profile under $(OUTPUT)/image (deploy/container/build-image.sh).
image: $(STATIC_BIN)
	deploy/container/build-image.sh $(STATIC_BIN) $(OUTPUT)/image

clean:
	rm -rf $(OUTPUT)

# Header dependencies written by -MMD; absent before the first build.
-include $(shell find $(OUTPUT) -name '*.d' 2>/dev/null)
