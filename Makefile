# spate's commands around CMake. On a fresh Debian 12 machine:
#   make quickstart   install what is missing, build, run the main job
#   make test         install what is missing, build, run every test (ctest)
# Also: make unit (the quick loop: the unit tests), make (Release build into
# build/), make install (PREFIX=/usr/local, DESTDIR= for staging), make bench,
# make asan, make tsan, make format, make clean.

JOBS ?= $(shell nproc)
# ctest's slots: two per core. Most e2e tests wait on processes that idle;
# those that keep the cores busy take more slots (PROCESSORS in
# cmake/spate.cmake's spate_e2e_test).
TEST_JOBS ?= $(shell echo $$(( 2 * $$(nproc) )))
CMAKE ?= cmake
CTEST ?= ctest
CTEST_FLAGS ?= --output-on-failure -j $(TEST_JOBS)
PREFIX ?= /usr/local

.DEFAULT_GOAL := build
.PHONY: build deps quickstart test unit install bench bench-instr asan tsan format clean

deps:
	@scripts/install-deps.sh

# Release build: build/bin (spate, benchmarks, test helpers), build/lib,
# build/examples. The sanitizer suites of build-asan/ and build-tsan/ are
# registered with its ctest.
build:
	@$(CMAKE) -S . -B build -DCMAKE_BUILD_TYPE=Release -DSPATE_SANITIZER_SUITES=ON >/dev/null
	@$(CMAKE) --build build -j $(JOBS)

# ASan+UBSan build of the unit tests and the libFuzzer targets (clang).
asan:
	@CC=clang CXX=clang++ $(CMAKE) -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug \
	    -DSPATE_SANITIZE=address,undefined -DSPATE_FUZZ=ON >/dev/null
	@$(CMAKE) --build build-asan -j $(JOBS) --target asan_suite

# ThreadSanitizer build of the concurrency tests (clang).
tsan:
	@CC=clang CXX=clang++ $(CMAKE) -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug \
	    -DSPATE_SANITIZE=thread >/dev/null
	@$(CMAKE) --build build-tsan -j $(JOBS) --target tsan_suite

test: deps build asan tsan
	@cd build && $(CTEST) $(CTEST_FLAGS)

# The quick loop: the unit tests of the Release build (ctest label unit),
# a few seconds; `make test` runs them with everything else.
unit: build
	@cd build && $(CTEST) $(CTEST_FLAGS) -L '^unit$$'

# The Release build into $(DESTDIR)$(PREFIX): bin/spate and the cluster
# scripts, lib/libspate.so with lib/plugins/ and lib/pkgconfig/spate.pc,
# include/spate/, conf/. A job builds against it with
# `cc -shared -fPIC -o job.so job.c $(pkg-config --cflags --libs spate)`.
install: build
	@DESTDIR="$(DESTDIR)" $(CMAKE) --install build --prefix "$(PREFIX)"

quickstart: deps build
	@scripts/quickstart.sh

bench: build
	@scripts/run-benchmarks.sh build/bin

# Instructions per record of the engine and of each baseline, counted by
# callgrind (bench/bench_instr.h), beside one round of each benchmark's rates.
INSTR_BENCHES ?= window_bench job_bench sql_bench network_bench
bench-instr: build
	@for b in $(INSTR_BENCHES); do echo "== $$b"; \
	    BENCH_INSTR=1 WINDOW_BENCH_RUNS=1 JOB_BENCH_RUNS=1 JOB_BENCH_CLUSTER_RUNS=1 \
	    SQL_BENCH_RUNS=1 NETWORK_BENCH_RUNS=1 build/bin/$$b || exit 1; done

format:
	@git ls-files --cached --others --exclude-standard '*.c' '*.h' | xargs clang-format -i

clean:
	rm -rf build build-asan build-tsan
