# cudaep — one non-recursive Makefile.
#
#   make            build cudaepd, cudaepctl and libcudaep-client into build/
#   make run        install what is missing, build, run cudaepd in the foreground
#   make test       install what is missing, build, run every CPU test
#   make test-gpu   the same tests with the GPU ones enabled (NOBUILD=1: no build)
#   make fuzz       build the libFuzzer targets and run each FUZZ_SECONDS
#   make bench      build and run the benchmarks under bench/
#   make deps       install missing Debian packages and the test virtualenv
#
# Knobs: V=1 (loud), SANITIZE=address,undefined (own build dir), BUILD=dir,
# CUDA_HOME=/usr/local/cuda, NOBUILD=1, FUZZ_SECONDS=N, RUN_ARGS="...".

SANITIZE ?=
ifneq ($(SANITIZE),)
BUILD ?= build/san-$(subst $(comma),-,$(SANITIZE))
else
BUILD ?= build
endif
comma := ,

CUDA_HOME ?= /usr/local/cuda
VENV      ?= build/venv
PREFIX    ?= /usr/local
FUZZ_SECONDS ?= 30

CC      ?= cc
CLANG   ?= clang
PROTOC_C ?= protoc-c
NANOPB_GEN ?= nanopb_generator.py

ifeq ($(V),1)
Q :=
say = @true
else
Q := @
say = @printf '  %-7s %s\n' $(1) $(2)
endif

WARN     := -Wall -Wextra -Wstrict-prototypes -Werror=implicit-function-declaration \
            -Wno-unused-parameter
CSTD     := -std=c11
OPT      ?= -O2 -g
CPPFLAGS += -D_GNU_SOURCE -MMD -MP -Iproto -Iclient -Idaemon -Ialloc -Igpu -Ikernels \
            -I$(BUILD)/gen -isystem $(CUDA_HOME)/include
CFLAGS   += $(CSTD) $(OPT) $(WARN) -fPIC -pthread
LDFLAGS  += -pthread
ifneq ($(SANITIZE),)
CFLAGS   += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDFLAGS  += -fsanitize=$(SANITIZE)
endif

# Static libuv and protobuf-c in the daemon, static nanopb in the client.
DAEMON_LIBS = -Wl,-Bstatic -luv_a -lprotobuf-c -Wl,-Bdynamic \
              -lsystemd -linih -lxxhash -ldl -lm
CLIENT_LIBS = -Wl,-Bstatic -lprotobuf-nanopb -Wl,-Bdynamic

# ---------------------------------------------------------------- sources

GEN := $(BUILD)/gen
PB_C_SRC  := $(GEN)/cudaep.pb-c.c $(GEN)/onnx.pb-c.c
PB_C_HDR  := $(PB_C_SRC:.c=.h)
NANOPB_SRC := $(GEN)/cudaep.pb.c
NANOPB_HDR := $(GEN)/cudaep.pb.h
ONNX_PROTO := $(wildcard proto/onnx.proto)
ifeq ($(ONNX_PROTO),)
PB_C_SRC := $(GEN)/cudaep.pb-c.c
PB_C_HDR := $(GEN)/cudaep.pb-c.h
endif

# Shared by the client library and the daemon.
COMMON_SRC := client/error.c client/dtype.c client/sockpath.c
CLIENT_SRC := $(COMMON_SRC) $(filter-out client/cudaepctl%.c client/cudaep-run%.c,$(wildcard client/*.c)) \
              $(NANOPB_SRC)
CLIENT_SRC := $(sort $(CLIENT_SRC))
CTL_SRC    := $(wildcard client/cudaepctl*.c)
RUNCLI_SRC := $(wildcard client/cudaep-run*.c)

# Everything of the daemon but main(), as one archive the tests link too.
# CORE_ONLY / CORE_EXCLUDE (make patterns) narrow it while one module is
# being worked on, e.g. CORE_ONLY='alloc/%'.
CORE_ALL := $(filter-out daemon/main.c,$(wildcard daemon/*.c)) \
            $(wildcard alloc/*.c) $(wildcard gpu/*.c) \
            $(wildcard kernels/*.c) $(wildcard kernels/cpu/*.c)
CORE_SRC := $(filter-out $(CORE_EXCLUDE),$(if $(CORE_ONLY),$(filter $(CORE_ONLY),$(CORE_ALL)),$(CORE_ALL))) \
            $(PB_C_SRC)

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(patsubst $(BUILD)/%,%,$(1)))

CLIENT_OBJ := $(call obj,$(CLIENT_SRC))
CORE_OBJ   := $(call obj,$(CORE_SRC))
COMMON_OBJ := $(call obj,$(COMMON_SRC))

BIN  := $(BUILD)/bin
LIB  := $(BUILD)/lib
CUDAEPD   := $(BIN)/cudaepd
CUDAEPCTL := $(BIN)/cudaepctl
CUDAEPRUN := $(if $(RUNCLI_SRC),$(BIN)/cudaep-run)
CLIENT_SO := $(LIB)/libcudaep-client.so
CLIENT_A  := $(LIB)/libcudaep-client.a
CORE_A    := $(LIB)/libcudaepd-core.a
CLIENT_PC := $(LIB)/pkgconfig/cudaep-client.pc

UNIT_SRC  := $(wildcard tests/unit/test_*.c)
UNIT_BIN  := $(patsubst tests/unit/%.c,$(BUILD)/tests/unit/%,$(UNIT_SRC))
UNIT_HELPERS := $(filter-out $(UNIT_SRC),$(wildcard tests/unit/*.c))
INTEG_SRC := $(wildcard tests/integration/test_*.c)
INTEG_HELPERS := $(filter-out $(INTEG_SRC),$(wildcard tests/integration/*.c))
INTEG_BIN := $(patsubst tests/integration/%.c,$(BUILD)/tests/integration/%,$(INTEG_SRC))
BENCH_SRC := $(wildcard bench/*.c)
BENCH_BIN := $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCH_SRC))

ALL := $(CUDAEPD) $(CUDAEPCTL) $(CUDAEPRUN) $(CLIENT_SO) $(CLIENT_A) $(CLIENT_PC)

.PHONY: all deps run test test-unit test-integration test-python test-gpu \
        test-conformance conformance-update \
        fuzz fuzz-build bench install clean
.DEFAULT_GOAL := all
.SECONDARY:

all: $(ALL)

# ---------------------------------------------------------------- deps

DEB_PKGS := build-essential pkg-config libuv1-dev libprotobuf-c-dev protobuf-c-compiler \
            protobuf-compiler libnanopb-dev nanopb libcriterion-dev libsystemd-dev \
            libinih-dev libxxhash-dev python3-venv python3-protobuf clang \
            libclang-rt-14-dev systemd
DEPS_STAMP := build/.deps-stamp
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

deps: $(DEPS_STAMP)

# Installs only what is missing, so a machine that has everything is left
# untouched; the stamp is rewritten when this Makefile or the Python
# requirements change.
$(DEPS_STAMP): Makefile tests/requirements.txt
	@mkdir -p $(@D)
	@missing=$$(for p in $(DEB_PKGS); do \
	    dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; \
	  done); \
	if [ -n "$$missing" ]; then \
	  echo "deps: installing" $$missing; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing \
	    >/dev/null || exit 1; \
	fi
	@[ -x $(VENV)/bin/python ] || /usr/bin/python3 -m venv $(VENV)
	@$(VENV)/bin/python -m pip install -q --disable-pip-version-check -r tests/requirements.txt
	@touch $@

# ---------------------------------------------------------------- generated

$(GEN)/%.pb-c.c $(GEN)/%.pb-c.h: proto/%.proto | $(DEPS_STAMP)
	$(call say,PROTOC,$<)
	@mkdir -p $(GEN)
	$(Q)$(PROTOC_C) -Iproto --c_out=$(GEN) $<

$(GEN)/%.pb.c $(GEN)/%.pb.h: proto/%.proto proto/%.options | $(DEPS_STAMP)
	$(call say,NANOPB,$<)
	@mkdir -p $(GEN)
	$(Q)$(NANOPB_GEN) -q -Iproto -fproto/$*.options -D$(GEN) $< >/dev/null

# Every object waits for the generated headers (cheap, and correct before
# the first .d files exist).
$(BUILD)/obj/%.o: %.c | $(PB_C_HDR) $(NANOPB_HDR) $(DEPS_STAMP)
	$(call say,CC,$<)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(BUILD)/obj/gen/%.o: $(GEN)/%.c | $(PB_C_HDR) $(NANOPB_HDR)
	$(call say,CC,$<)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -Wno-unused-parameter -c -o $@ $<

# ---------------------------------------------------------------- libraries

$(CLIENT_A): $(CLIENT_OBJ)
	$(call say,AR,$@)
	@mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcs $@ $^

$(CLIENT_SO): $(CLIENT_OBJ)
	$(call say,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) -shared -Wl,-soname,libcudaep-client.so.0 -Wl,--version-script=client/libcudaep-client.map \
	  $(LDFLAGS) -o $@ $^ $(CLIENT_LIBS)

$(CLIENT_PC): client/cudaep-client.pc.in
	@mkdir -p $(@D)
	$(Q)sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|0.1.0|g' $< > $@

$(CORE_A): $(CORE_OBJ)
	$(call say,AR,$@)
	@mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcs $@ $^

# ---------------------------------------------------------------- programs

$(CUDAEPD): $(call obj,daemon/main.c) $(CORE_A) $(COMMON_OBJ)
	$(call say,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(DAEMON_LIBS)

$(CUDAEPCTL): $(call obj,$(CTL_SRC)) $(CLIENT_A)
	$(call say,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(CLIENT_LIBS) -lm

$(BIN)/cudaep-run: $(call obj,$(RUNCLI_SRC)) $(CLIENT_A)
	$(call say,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(CLIENT_LIBS) -lm

# ---------------------------------------------------------------- tests

TEST_LIBS = $(CORE_A) $(CLIENT_A) -lcriterion $(DAEMON_LIBS) $(CLIENT_LIBS)

$(BUILD)/tests/unit/%: $(call obj,tests/unit/%.c) $(call obj,$(UNIT_HELPERS)) $(CORE_A) $(CLIENT_A)
	$(call say,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) -o $@ $< $(call obj,$(UNIT_HELPERS)) $(TEST_LIBS)

$(BUILD)/tests/integration/%: $(call obj,tests/integration/%.c) $(call obj,$(INTEG_HELPERS)) $(CLIENT_A)
	$(call say,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) -o $@ $< $(call obj,$(INTEG_HELPERS)) $(CLIENT_A) -lcriterion $(CLIENT_LIBS) -lm

# The engine-level conformance runner (a developer tool; CI's runner goes
# through the daemon).
ENGINE_CONF := $(BUILD)/tests/conformance/engine_conf
$(ENGINE_CONF): $(call obj,tests/conformance/engine_conf.c) $(CORE_A) $(CLIENT_A)
	$(call say,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) -o $@ $< $(CORE_A) $(CLIENT_A) $(DAEMON_LIBS) $(CLIENT_LIBS)

$(BUILD)/bench/%: $(call obj,bench/%.c) $(CLIENT_A)
	$(call say,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) -o $@ $< $(CLIENT_A) $(CLIENT_LIBS) -lm

ifeq ($(NOBUILD),1)
TEST_PREREQ :=
else
TEST_PREREQ = $(ALL) $(UNIT_BIN) $(INTEG_BIN) $(ENGINE_CONF)
endif

# Criterion runs each test in its own process; -j2 matches CI's two cores.
CRITERION_FLAGS ?= --jobs 2
export CUDAEP_BUILD_DIR := $(abspath $(BUILD))

# The suites run one after the other (Criterion parallelizes inside each),
# so their logs do not interleave.
test: deps $(TEST_PREREQ)
	$(Q)$(MAKE) --no-print-directory -j1 test-unit test-integration test-python \
	  test-conformance NOBUILD=1

test-unit: $(if $(filter 1,$(NOBUILD)),,$(UNIT_BIN))
	@set -e; for t in $(UNIT_BIN); do echo "== $$t"; $$t $(CRITERION_FLAGS); done

test-integration: $(if $(filter 1,$(NOBUILD)),,$(ALL) $(INTEG_BIN))
	@set -e; for t in $(INTEG_BIN); do echo "== $$t"; $$t $(CRITERION_FLAGS); done

# An ASan-built libcudaep-client cannot be loaded into a plain Python, so
# the Python suite runs only in the plain build.
test-python:
ifneq ($(SANITIZE),)
	@echo "test-python: SKIP under SANITIZE=$(SANITIZE) (an ASan library cannot load into a plain python)"
else
	@$(VENV)/bin/python -m pytest -q python/tests
endif

# ONNX node conformance: the cases are generated from the installed onnx
# package (nothing generated is committed), then run through the daemon;
# tests/conformance/expected_pass.txt lists the cases that must pass. Under
# SANITIZE the engine-level runner goes through the same cases instead (an
# ASan library cannot load into the plain Python of the daemon runner).
CONF_CASES := build/conformance/cases
CONF_EXPECTED := tests/conformance/expected_pass.txt

$(CONF_CASES)/.stamp: tests/conformance/gen_cases.py tests/requirements.txt | $(DEPS_STAMP)
	@rm -rf $(CONF_CASES)
	@$(VENV)/bin/python tests/conformance/gen_cases.py $(CONF_CASES)
	@touch $@

test-conformance: $(CONF_CASES)/.stamp $(if $(filter 1,$(NOBUILD)),,$(ALL) $(ENGINE_CONF))
ifneq ($(SANITIZE),)
	@$(ENGINE_CONF) $(CONF_CASES) --expected $(CONF_EXPECTED)
else
	@$(VENV)/bin/python tests/conformance/run_conformance.py $(CONF_CASES) --expected $(CONF_EXPECTED)
endif

# Rewrites the expected-pass list from what passes now (review the diff).
conformance-update: $(CONF_CASES)/.stamp $(ALL)
	@$(VENV)/bin/python tests/conformance/run_conformance.py $(CONF_CASES) \
	  --expected $(CONF_EXPECTED) --update

# The same binaries with the GPU tests switched on; run on the GPU machine
# with NOBUILD=1 (it has no libuv or protobuf-c headers to build with).
test-gpu: $(TEST_PREREQ)
	$(Q)CUDAEP_TEST_GPU=1 $(MAKE) --no-print-directory -j1 test-unit test-integration NOBUILD=1

# ---------------------------------------------------------------- fuzzing

FUZZ_SRC := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BUILD := build/fuzz
FUZZ_BIN := $(patsubst tests/fuzz/%.c,$(FUZZ_BUILD)/%,$(FUZZ_SRC))
FUZZ_FLAGS := -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer -g -O1 -DCEP_FUZZING

fuzz-build: deps
	$(Q)$(MAKE) --no-print-directory BUILD=$(FUZZ_BUILD) CC=$(CLANG) \
	  OPT="$(FUZZ_FLAGS)" LDFLAGS="-fsanitize=address,undefined" $(FUZZ_BIN)

$(FUZZ_BUILD)/fuzz_%: $(call obj,tests/fuzz/fuzz_%.c) $(CORE_A) $(COMMON_OBJ)
	$(call say,LD,$@)
	$(Q)$(CC) -fsanitize=fuzzer,address,undefined -o $@ $^ $(DAEMON_LIBS)

# Seeds: tests/fuzz/corpus/<target> where committed (small hand-made
# packets), and models made at fuzz time for fuzz_model.
fuzz: fuzz-build
	@$(VENV)/bin/python tests/fuzz/make_model_seeds.py $(FUZZ_BUILD)/seeds/fuzz_model
	@set -e; for f in $(FUZZ_BIN); do \
	  n=$$(basename $$f); mkdir -p $(FUZZ_BUILD)/corpus/$$n; \
	  seeds=$$(for d in tests/fuzz/corpus/$$n $(FUZZ_BUILD)/seeds/$$n; do if [ -d $$d ]; then echo $$d; fi; done); \
	  echo "== $$n for $(FUZZ_SECONDS)s"; \
	  $$f -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -print_final_stats=1 \
	    $(FUZZ_BUILD)/corpus/$$n $$seeds 2>$(FUZZ_BUILD)/$$n.log \
	    || { tail -50 $(FUZZ_BUILD)/$$n.log; exit 1; }; \
	  grep -E 'stat::number_of_executed_units|stat::peak_rss' $(FUZZ_BUILD)/$$n.log; \
	done

# ---------------------------------------------------------------- bench

bench: deps $(ALL) $(BENCH_BIN)
	@set -e; for b in $(BENCH_BIN); do echo "== $$b"; $$b; done

# ---------------------------------------------------------------- run, install

run: deps $(ALL)
	exec $(CUDAEPD) $(RUN_ARGS)

install: $(ALL)
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/include
	install -m 0755 $(CUDAEPD) $(CUDAEPCTL) $(DESTDIR)$(PREFIX)/bin/
	install -m 0644 $(CLIENT_A) $(DESTDIR)$(PREFIX)/lib/
	install -m 0755 $(CLIENT_SO) $(DESTDIR)$(PREFIX)/lib/libcudaep-client.so.0
	ln -sf libcudaep-client.so.0 $(DESTDIR)$(PREFIX)/lib/libcudaep-client.so
	install -m 0644 $(CLIENT_PC) $(DESTDIR)$(PREFIX)/lib/pkgconfig/
	install -m 0644 client/cudaep.h $(DESTDIR)$(PREFIX)/include/

clean:
	rm -rf $(filter-out build/venv build/.deps-stamp,$(wildcard build/*)) $(if $(filter-out build%,$(BUILD)),$(BUILD))

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
