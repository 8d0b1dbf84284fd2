# Guest-side programs and their unit tests. Included by the top-level Makefile,
# whose object rules build them (with src/common, shared with the host tool).
#   $(OUTPUT)/guest/hypercall   hypercall issuer to copy into any KVM guest
#   $(OUTPUT)/guest/minivm      tiny VMM issuing known hypercalls from real mode
#   $(OUTPUT)/guest/exitload    makes a guest exit a chosen number of times
#                               (CPUID, port I/O, MMIO)
#   $(OUTPUT)/guest/boottrace   sends the guest's own trace (its boot-time
#                               events: initcalls) to the host, with clock pairs
# All four are linked -static: they run in guests and minimal initramfs images
# that have no matching C library. GUEST_STATIC= links them dynamically, for
# a distribution package installed where the C library is.
# Unit tests tests/guest/test_guest_*.c become $(OUTPUT)/tests/unit/test_guest_*,
# where tests/run finds them; they link the guest objects and only the harness
# part of tests/support (the rest needs the tracer's headers), sanitized.

GUEST_OUT := $(OUTPUT)/guest
GUEST_STATIC ?= -static
GUEST_PROGS := $(GUEST_OUT)/hypercall $(GUEST_OUT)/minivm $(GUEST_OUT)/exitload $(GUEST_OUT)/boottrace
GUEST_COMMON_SRCS := guest/cpuid_info.c guest/cpuid_read.c $(COMMON_SRCS)
HYPERCALL_SRCS := guest/hypercall.c guest/hypercall_options.c guest/latency_stats.c \
	$(GUEST_COMMON_SRCS)
MINIVM_SRCS := guest/minivm.c guest/minivm_options.c guest/minivm_payload.c guest/minivm_vm.c \
	$(GUEST_COMMON_SRCS)
EXITLOAD_SRCS := guest/exitload.c $(COMMON_SRCS)
BOOTTRACE_SRCS := guest/boottrace.c guest/trace_replay.c guest/trace_text.c $(COMMON_SRCS)
# Everything but the main() files, for the unit tests.
GUEST_LIB_SRCS := $(filter-out guest/hypercall.c guest/minivm.c guest/exitload.c guest/boottrace.c,$(wildcard guest/*.c)) \
	$(COMMON_SRCS)

GUEST_TEST_SRCS := $(wildcard tests/guest/test_guest_*.c)
GUEST_TEST_BINS := $(patsubst tests/guest/%.c,$(OUTPUT)/tests/unit/%,$(GUEST_TEST_SRCS))

guest: $(GUEST_PROGS) $(GUEST_TEST_BINS)

$(GUEST_OUT)/hypercall: $(call obj,obj,$(HYPERCALL_SRCS))
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) $(GUEST_STATIC) $^ -lm -o $@

$(GUEST_OUT)/exitload: $(call obj,obj,$(EXITLOAD_SRCS))
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) $(GUEST_STATIC) $^ -o $@

$(GUEST_OUT)/boottrace: $(call obj,obj,$(BOOTTRACE_SRCS))
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) $(GUEST_STATIC) $^ -o $@

$(GUEST_OUT)/minivm: $(call obj,obj,$(MINIVM_SRCS))
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) $(GUEST_STATIC) -pthread $^ -o $@

$(GUEST_TEST_BINS): $(OUTPUT)/tests/unit/%: $(OUTPUT)/san/tests/guest/%.o \
		$(call obj,san,$(GUEST_LIB_SRCS) tests/support/test.c)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(SAN_FLAGS) $(LDFLAGS) $^ -pthread -lm -o $@

$(OUTPUT)/san/tests/guest/%.o: PROJECT_CFLAGS += -Iguest

# The guest kernel module, built out of tree against a guest kernel's build
# tree (KDIR: /lib/modules/<version>/build, or an unpacked linux-headers
# package; tests/guest_kernel.sh fetches Debian's). The sources are copied
# under $(OUTPUT) so the build writes nothing into guest/module/.
GUEST_MODULE_OUT := $(OUTPUT)/guest/module
GUEST_MODULE_SRCS := guest/module/Kbuild guest/module/hypertrace_guest.c

.PHONY: guest-module
guest-module: $(GUEST_MODULE_SRCS) include/hypertrace/guest.h include/hypertrace/hypercall_abi.h
	@if [ -z "$(KDIR)" ]; then echo "make guest-module: give KDIR=<guest kernel build tree>, e.g. KDIR=/lib/modules/\$$(uname -r)/build or tests/guest_kernel.sh fetch" >&2; exit 2; fi
	@if [ ! -f "$(KDIR)/Makefile" ]; then echo "make guest-module: KDIR=$(KDIR) has no Makefile: give a kernel build tree (linux-headers)" >&2; exit 2; fi
	$(call msg,KMOD,$(GUEST_MODULE_OUT)/hypertrace_guest.ko)
	$(Q)mkdir -p $(GUEST_MODULE_OUT)
	$(Q)cp $(GUEST_MODULE_SRCS) $(GUEST_MODULE_OUT)/
	$(Q)$(MAKE) -C $(KDIR) M=$(abspath $(GUEST_MODULE_OUT)) HT_INCLUDE=$(abspath include) \
		$(if $(filter 1,$(V)),V=1,) modules
