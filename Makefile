# hypertrace-bpf build.
#   make            BPF object, skeleton and the hypertrace-bpf binary (libbpf linked statically)
#   make static     fully static binaries (for copying into a test VM)
#   make test       install missing build/test packages, build, run every test
#   make demo       install, build, and show hypertrace-bpf recording real hypercalls
#   make bench      benchmarks
#   make deps       install the Debian packages the build and tests need (root)
# Everything generated goes to $(OUTPUT); `make clean` removes exactly that.

OUTPUT ?= .output
CLANG ?= clang
BPFTOOL ?= bpftool
CC ?= gcc

WARN := -Wall -Wextra -Werror
CFLAGS ?= -O2 -g
USER_CFLAGS := -std=c11 -D_GNU_SOURCE $(WARN) $(CFLAGS) -I$(OUTPUT) -Iinclude -Isrc/user
SAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
# -mcpu=v3: 32-bit subregisters and jumps (kernel 5.1+), no zero-extension shifts on the hot path.
BPF_CFLAGS := -target bpf -mcpu=v3 -g -O2 -D__TARGET_ARCH_x86 $(WARN) -I. -Iinclude

# libbpf statically, libelf/zlib dynamically: the binary runs on any host with libelf.
LIBS := -Wl,-Bstatic -lbpf -Wl,-Bdynamic -lelf -lz -lm
STATIC_LIBS := -static -lbpf -lelf -lz -lm

BPF_SRCS := $(wildcard src/bpf/*.bpf.c)
BPF_HDRS := $(wildcard src/bpf/*.h) include/hypertrace/record.h vmlinux.h
SKELS := $(patsubst src/bpf/%.bpf.c,$(OUTPUT)/%.skel.h,$(BPF_SRCS))
USER_SRCS := $(wildcard src/user/*.c)
USER_HDRS := $(wildcard src/user/*.h) $(wildcard include/hypertrace/*.h)
LIB_SRCS := $(filter-out src/user/main.c,$(USER_SRCS))
OBJS := $(patsubst src/user/%.c,$(OUTPUT)/obj/%.o,$(USER_SRCS))
SAN_OBJS := $(patsubst src/user/%.c,$(OUTPUT)/san/%.o,$(USER_SRCS))
SAN_LIB_OBJS := $(patsubst src/user/%.c,$(OUTPUT)/san/%.o,$(LIB_SRCS))
STATIC_OBJS := $(patsubst src/user/%.c,$(OUTPUT)/static-obj/%.o,$(USER_SRCS))

TEST_SRCS := $(wildcard tests/unit/test_*.c tests/kernel/test_*.c)
TEST_SUPPORT_SRCS := $(wildcard tests/support/*.c)
TEST_BINS := $(patsubst tests/%.c,$(OUTPUT)/tests/%,$(TEST_SRCS))

BIN := $(OUTPUT)/hypertrace-bpf
SAN_BIN := $(OUTPUT)/san/hypertrace-bpf
STATIC_BIN := $(OUTPUT)/static/hypertrace-bpf

.PHONY: all static test demo bench deps clean tests-build guest
.DELETE_ON_ERROR:
# Keep the BPF objects: benchmarks and `bpftool prog loadall` use them.
.PRECIOUS: $(OUTPUT)/%.bpf.o $(OUTPUT)/bench/%.bpf.o

all: $(BIN) guest

$(OUTPUT) $(OUTPUT)/obj $(OUTPUT)/san $(OUTPUT)/static-obj $(OUTPUT)/static:
	@mkdir -p $@

$(OUTPUT)/%.bpf.o: src/bpf/%.bpf.c $(BPF_HDRS) | $(OUTPUT)
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(OUTPUT)/%.skel.h: $(OUTPUT)/%.bpf.o
	$(BPFTOOL) gen skeleton $< > $@

$(OUTPUT)/obj/%.o: src/user/%.c $(USER_HDRS) $(SKELS) | $(OUTPUT)/obj
	$(CC) $(USER_CFLAGS) -c $< -o $@

$(OUTPUT)/san/%.o: src/user/%.c $(USER_HDRS) $(SKELS) | $(OUTPUT)/san
	$(CC) $(USER_CFLAGS) $(SAN_FLAGS) -c $< -o $@

$(OUTPUT)/static-obj/%.o: src/user/%.c $(USER_HDRS) $(SKELS) | $(OUTPUT)/static-obj
	$(CC) $(USER_CFLAGS) -c $< -o $@

$(BIN): $(OBJS)
	$(CC) $(CFLAGS) $^ $(LIBS) -o $@

$(SAN_BIN): $(SAN_OBJS)
	$(CC) $(CFLAGS) $(SAN_FLAGS) $^ $(LIBS) -o $@

$(STATIC_BIN): $(STATIC_OBJS) | $(OUTPUT)/static
	$(CC) $(CFLAGS) $^ $(STATIC_LIBS) -o $@

# Test programs: each tests/<suite>/test_x.c links the sanitized library objects.
$(OUTPUT)/tests/%: tests/%.c $(TEST_SUPPORT_SRCS) $(wildcard tests/support/*.h) $(SAN_LIB_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(USER_CFLAGS) $(SAN_FLAGS) -Itests/support $< $(TEST_SUPPORT_SRCS) $(SAN_LIB_OBJS) $(LIBS) -lpthread -o $@

# Benchmarks: their own BPF object (the real handlers next to reference designs) and drivers.
BENCH_LIB_OBJS := $(filter-out $(OUTPUT)/obj/main.o,$(OBJS))
BENCH_BINS := $(OUTPUT)/bench/bench_hotpath $(OUTPUT)/bench/bench_drain

$(OUTPUT)/bench/%.bpf.o: bench/%.bpf.c $(BPF_HDRS) $(wildcard bench/*.h)
	@mkdir -p $(@D)
	$(CLANG) $(BPF_CFLAGS) -Isrc/bpf -c $< -o $@

$(OUTPUT)/bench/%.skel.h: $(OUTPUT)/bench/%.bpf.o
	$(BPFTOOL) gen skeleton $< > $@

$(OUTPUT)/bench/bench_hotpath: bench/bench_hotpath.c $(OUTPUT)/bench/hotpath.skel.h tests/support/synth.c $(BENCH_LIB_OBJS)
	$(CC) -I$(OUTPUT)/bench $(USER_CFLAGS) -Itests/support $< tests/support/synth.c $(BENCH_LIB_OBJS) $(LIBS) -o $@

$(OUTPUT)/bench/bench_drain: bench/bench_drain.c $(BENCH_LIB_OBJS)
	$(CC) $(USER_CFLAGS) $< $(BENCH_LIB_OBJS) $(LIBS) -lpthread -o $@

include guest/guest.mk

static: $(STATIC_BIN) guest

tests-build: $(BIN) $(SAN_BIN) $(TEST_BINS) static

test: deps
	$(MAKE) tests-build
	tests/run

demo: deps
	$(MAKE) all static
	tests/demo.sh

bench: deps
	$(MAKE) all static $(BENCH_BINS)
	bench/run

deps:
	@tests/install-deps.sh

clean:
	rm -rf $(OUTPUT)
