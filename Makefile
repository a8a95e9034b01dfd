# Makefile for gpuhash (PGXS).
#
#   make && make install          build with nvcc when found (GPU + CPU twin)
#   make GPUHASH_CUDA=no          build without CUDA (CPU twin only)
#   make installcheck             the pg_regress suites and isolation specs, each
#                                 in a temporary, preloaded instance, then the
#                                 TAP tests (test/t) in clusters of their own
#   make coverage                 test/run.sh on a build with gcov counters
#                                 (GPUHASH_COVERAGE=1), then an lcov report of
#                                 src/ and the CPU twin in coverage/
#   make deb                      the Debian package postgresql-15-gpuhash
#                                 (debian/, pg_buildext) in dist/:
#                                 packaging/build-deb.sh
#
# src/*.c and the plain C parts of cuda/ go through PGXS; cuda/*.cu go through
# nvcc for every GPU architecture of GPUHASH_CUDA_ARCHS plus PTX, and the CUDA runtime is linked statically
# so that the installed library needs no CUDA toolkit at run time.

EXTENSION = gpuhash
MODULE_big = gpuhash
DATA = gpuhash--0.1.sql gpuhash--0.4.sql gpuhash--0.1--0.2.sql gpuhash--0.2--0.3.sql gpuhash--0.3--0.4.sql
PGFILEDESC = "gpuhash - GPU hash joins and aggregation"

# pg_regress suites (sql/, expected/) in test/schedule's order, and the
# isolation specs (test/isolation/specs), each in a temporary instance with
# gpuhash preloaded: test/regress.conf, then GPUHASH_TEST_CONF if given
# (test/run.sh's device settings; its lines win)
GPUHASH_TEST_CONF ?=
test_conf = --temp-config=test/regress.conf $(if $(GPUHASH_TEST_CONF),--temp-config=$(GPUHASH_TEST_CONF))
REGRESS = $(shell sed -n 's/^test: *//p' test/schedule)
REGRESS_OPTS = --temp-instance=./tmp_check_regress $(test_conf)
ISOLATION = $(sort $(notdir $(basename $(wildcard test/isolation/specs/*.spec))))
ISOLATION_OPTS = --inputdir=test/isolation --temp-instance=./tmp_check_iso \
	--temp-config=test/isolation/isolation.conf $(test_conf)

# TAP tests on PostgreSQL's framework (PostgreSQL::Test::Cluster; Debian:
# postgresql-server-dev-15 and libipc-run-perl), test/t/NNN_name.pl with
# their helpers in test/perl: each starts clusters of its own, with the
# device GPUHASH_TEST_DEVICE (cpu by default).  PGXS's prove_installcheck
# empties tmp_check/ first, hence the pg_regress instance's own name above.
# TAP_TESTS= leaves them out (test/run.sh runs them as parts of its own).
# PROVE_FLAGS is set below PGXS's include, whose Makefile.global empties it.
TAP_TESTS = 1
PROVE_TESTS = test/t/*.pl

PG_CONFIG ?= pg_config

CUDA_HOME ?= /usr/local/cuda
NVCC ?= $(shell command -v nvcc 2>/dev/null || \
	{ test -x $(CUDA_HOME)/bin/nvcc && echo $(CUDA_HOME)/bin/nvcc; })
ifeq ($(NVCC),)
GPUHASH_CUDA ?= no
endif
GPUHASH_CUDA ?= yes

# GPUHASH_CUDA_ARCHS: the GPU architectures (compute capability x 10) to
# build machine code for, by default every one CUDA 13 supports that data
# centres and workstations use: Turing (T4, Quadro RTX), Ampere (A100;
# A10, A40, RTX A6000), Ada (L4, L40S, RTX 6000 Ada), Hopper (H100, H200),
# Blackwell (B200, B300; RTX PRO 6000).  The last one is also kept as PTX,
# which the driver compiles for GPUs newer than all of them.  Narrow it to
# build faster, e.g. make GPUHASH_CUDA_ARCHS=90; or set NVCC_ARCH to nvcc's
# own -gencode options.
GPUHASH_CUDA_ARCHS ?= 75 80 86 89 90 100 103 120
gh_ptx_arch = $(lastword $(GPUHASH_CUDA_ARCHS))
NVCC_ARCH ?= $(foreach a,$(GPUHASH_CUDA_ARCHS),-gencode=arch=compute_$(a),code=sm_$(a)) \
	-gencode=arch=compute_$(gh_ptx_arch),code=compute_$(gh_ptx_arch)
NVCCFLAGS ?= -O3 -std=c++17 --threads 0 -Xcompiler -fPIC -Xcompiler -fvisibility=hidden \
	-Icuda $(NVCC_ARCH)
# what NVCC_ARCH has code for, for cuda/device.cu's check of the GPU
# (gh_cuda_check_arch): machine code (code=sm_XY), PTX (code=compute_XY), and
# the lowest of them; a GPU the build has no code for is not used at all
gh_arch_list = $(shell printf '%s\n' $(NVCC_ARCH) | grep -o ',code=\[*[a-z_,0-9]*' | sed 's/^,code=//' | tr ',[' '\n\n' | sed -n 's/^$(1)_\([0-9][0-9]*\)$$/\1/p' | sort -un)
GH_BUILD_SASS := $(call gh_arch_list,sm)
GH_BUILD_PTX := $(call gh_arch_list,compute)
GH_BUILD_MIN_CC := $(shell printf "%s\n" $(GH_BUILD_SASS) $(GH_BUILD_PTX) | sort -n | head -1)
gh_empty :=
gh_space := $(gh_empty) $(gh_empty)
NVCCFLAGS += -DGH_BUILD_MIN_CC=$(GH_BUILD_MIN_CC) \
	'-DGH_BUILD_SASS="$(subst $(gh_space),:,$(strip $(GH_BUILD_SASS)))"' \
	'-DGH_BUILD_PTX="$(subst $(gh_space),:,$(strip $(GH_BUILD_PTX)))"'


C_SRCS = $(wildcard src/*.c) $(filter-out cuda/nocuda.c,$(wildcard cuda/*.c))
ifeq ($(GPUHASH_CUDA),yes)
CU_OBJS = $(patsubst %.cu,%.o,$(wildcard cuda/*.cu))
SHLIB_LINK += -L$(CUDA_HOME)/lib64 -lcudart_static -lstdc++ -lrt -ldl -lpthread
else
C_SRCS += cuda/nocuda.c
CU_OBJS =
endif

OBJS = $(C_SRCS:.c=.o) $(CU_OBJS)
PG_CPPFLAGS = -Icuda -Isrc
EXTRA_CLEAN = $(CU_OBJS) cuda/nocuda.o src/*.gcno src/*.gcda cuda/*.gcno cuda/*.gcda \
	tmp_check_regress/

# GPUHASH_COVERAGE=1: gcov counters in every C object (src/ and the CPU twin;
# nvcc's objects have none), unoptimised so that lines map to code.  Read from
# the environment too, so that test/run.sh's own rebuild keeps it.
GPUHASH_COVERAGE ?=
ifeq ($(GPUHASH_COVERAGE),1)
PG_CFLAGS += --coverage -O0
SHLIB_LINK += --coverage
endif

# nvcc objects have no LLVM bitcode; gpuhash's own code gains nothing from
# JIT inlining, so skip the bitcode step for every object.
override with_llvm = no

PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

PROVE_FLAGS = -I ./test/perl

# every object depends on every header of its side of the seam and on the
# seam's: coarse, but a changed header never leaves a stale object
cuda/%.o: cuda/%.cu $(wildcard cuda/*.h cuda/*.cuh)
	$(NVCC) $(NVCCFLAGS) -c $< -o $@

$(C_SRCS:.c=.o): $(wildcard src/*.h cuda/*.h)

# make coverage [COVERAGE_ARGS=--quick]: see test/coverage.sh
COVERAGE_ARGS ?=
coverage:
	bash test/coverage.sh $(COVERAGE_ARGS)

# make deb [DEB_ARGS="--head --out DIR"]: see packaging/build-deb.sh
DEB_ARGS ?=
deb:
	bash packaging/build-deb.sh $(DEB_ARGS)

.PHONY: coverage deb
