# Thin wrapper over CMake + Ninja. See README.md.
#   make              build into build/
#   make test         build and run every test (CTest, which also runs pytest)
#   make bench        quick comparison tables (a few minutes)
#   make bench-full   the whole benchmark matrix, with plots
#   make bench-compare A B   two results directories side by side
#   make stress       the long stress runs
#   make install PREFIX=/usr/local
# SANITIZE=address,undefined or SANITIZE=thread builds into build-<name>/.

SANITIZE ?=
ifeq ($(SANITIZE),)
BUILD ?= build
else
BUILD ?= build-$(subst $(comma),-,$(SANITIZE))
endif
comma := ,
PREFIX ?= /usr/local
CMAKE_ARGS ?=
VENV := $(CURDIR)/.venv
PY := $(VENV)/bin/python3
JOBS ?= $(shell nproc)

.PHONY: all bootstrap configure build test bench bench-full stress install venv clean bench-compare

all: build

bootstrap:
	@sh scripts/bootstrap.sh

$(BUILD)/build.ninja: CMakeLists.txt | bootstrap
	cmake -S . -B $(BUILD) -G Ninja -DCANAL_SANITIZE=$(SANITIZE) \
	  $(if $(SANITIZE),-DCANAL_BUILD_PEERS=OFF) $(CMAKE_ARGS)

configure: bootstrap $(BUILD)/build.ninja

build: configure
	ninja -C $(BUILD)

venv: bootstrap
	@sh scripts/venv.sh $(VENV)

test: build venv
	cd $(BUILD) && CANAL_PYTHON=$(PY) ctest --output-on-failure -j $(JOBS) $(CTEST_ARGS)

bench: build venv
	$(PY) bench/harness/run.py --build $(BUILD) quick

bench-full: build venv
	$(PY) bench/harness/run.py --build $(BUILD) full

stress: build
	cd $(BUILD) && CANAL_STRESS=1 ctest --output-on-failure -L stress $(CTEST_ARGS)

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf build build-*

# make bench-compare results/<A> results/<B> (or A=... B=...): the two
# directories' summaries side by side.
ifeq (bench-compare,$(firstword $(MAKECMDGOALS)))
COMPARE_DIRS := $(wordlist 2,$(words $(MAKECMDGOALS)),$(MAKECMDGOALS))
$(eval $(COMPARE_DIRS):;@:)
.PHONY: $(COMPARE_DIRS)
endif
bench-compare: venv
	$(PY) bench/harness/compare.py $(or $(A),$(word 1,$(COMPARE_DIRS))) $(or $(B),$(word 2,$(COMPARE_DIRS)))
