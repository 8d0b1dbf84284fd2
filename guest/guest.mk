# Guest-side programs and their unit tests. Included by the top-level Makefile,
# which defines OUTPUT, CC, WARN, CFLAGS and SAN_FLAGS.
#   $(OUTPUT)/guest/hypercall   hypercall issuer to copy into any KVM guest
#   $(OUTPUT)/guest/minivm      tiny VMM issuing known hypercalls from real mode
# Both are linked -static: they run in guests and minimal initramfs images
# that have no matching C library.
# Unit tests tests/guest/test_guest_*.c become $(OUTPUT)/tests/unit/test_guest_*,
# where tests/run finds them; they link the guest sources and only the
# harness part of tests/support (the rest needs the tracer's headers), sanitized.

GUEST_OUT := $(OUTPUT)/guest
GUEST_CFLAGS := -std=c11 -D_GNU_SOURCE $(WARN) $(CFLAGS) -Iguest
GUEST_HDRS := $(wildcard guest/*.h)
GUEST_COMMON_SRCS := guest/cpuid_info.c guest/cpuid_read.c guest/parse_number.c
HYPERCALL_SRCS := guest/hypercall.c guest/hypercall_options.c guest/latency_stats.c \
	$(GUEST_COMMON_SRCS)
MINIVM_SRCS := guest/minivm.c guest/minivm_options.c guest/minivm_payload.c guest/minivm_vm.c \
	$(GUEST_COMMON_SRCS)
# Everything but the two main() files, for the unit tests.
GUEST_LIB_SRCS := $(filter-out guest/hypercall.c guest/minivm.c,$(wildcard guest/*.c))

GUEST_TEST_SRCS := $(wildcard tests/guest/test_guest_*.c)
GUEST_TEST_BINS := $(patsubst tests/guest/%.c,$(OUTPUT)/tests/unit/%,$(GUEST_TEST_SRCS))

guest: $(GUEST_OUT)/hypercall $(GUEST_OUT)/minivm $(GUEST_TEST_BINS)

$(GUEST_OUT)/hypercall: $(HYPERCALL_SRCS) $(GUEST_HDRS)
	@mkdir -p $(@D)
	$(CC) $(GUEST_CFLAGS) -static $(HYPERCALL_SRCS) -lm -o $@

$(GUEST_OUT)/minivm: $(MINIVM_SRCS) $(GUEST_HDRS)
	@mkdir -p $(@D)
	$(CC) $(GUEST_CFLAGS) -static -pthread $(MINIVM_SRCS) -o $@

$(GUEST_TEST_BINS): $(OUTPUT)/tests/unit/%: tests/guest/%.c $(GUEST_LIB_SRCS) $(GUEST_HDRS) \
		tests/support/test.c tests/support/test.h
	@mkdir -p $(@D)
	$(CC) $(GUEST_CFLAGS) $(SAN_FLAGS) -Itests/support $< $(GUEST_LIB_SRCS) \
		tests/support/test.c -pthread -lm -o $@
