#!/usr/bin/env bash
# The test command: builds and runs everything CI checks.
#   1. Release build + unit tests (ctest)
#   2. the command-line contract against ../shared (conformance.py), when present
#   3. ASan+UBSan build (clang-14) + unit tests
#   4. bounded libFuzzer runs (FUZZ_SECONDS per target, default 20), built in
#      the same sanitizer build (one build serves both: CI has 2 cores)
# Env: SKIP_ASAN=1, SKIP_FUZZ=1 to skip steps locally; JOBS to set parallelism.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
JOBS=${JOBS:-$(nproc)}
SHARED=${LLMHOST_SHARED_DIR:-$ROOT/../shared}
# Conformance suites of ../shared/tools/conformance.py that the implemented
# layers cover (stories: stories260K's text for 200 tokens, as llama2.c gives).
CONFORMANCE_SUITES=${CONFORMANCE_SUITES:-"tokenizers templates logits stories"}

passed=0
failed=0
failures=()
step() {  # step NAME COMMAND...: run one step, record its result
  local name=$1
  shift
  echo "=== $name"
  local t0=$SECONDS
  if "$@"; then
    passed=$((passed + 1))
    echo "=== $name: ok ($((SECONDS - t0)) s)"
  else
    failed=$((failed + 1))
    failures+=("$name")
    echo "=== $name: FAILED ($((SECONDS - t0)) s)"
  fi
}

build() {  # build DIR CMAKE_ARGS...
  local dir=$1
  shift
  cmake -S "$ROOT" -B "$dir" -G Ninja "$@" >/dev/null && ninja -C "$dir" -j "$JOBS"
}

release_tests() {
  build build -DCMAKE_BUILD_TYPE=Release && ctest --test-dir build --output-on-failure -j "$JOBS"
}

conformance() {
  if [[ ! -d "$SHARED" ]]; then
    echo "conformance: $SHARED is absent, skipped"
    return 0
  fi
  local rc=0
  for suite in $CONFORMANCE_SUITES; do
    python3 "$SHARED/tools/conformance.py" --binary build/llmhost --suite "$suite" || rc=1
  done
  return $rc
}

sanitizer_build() {  # unit tests and fuzz targets, ASan+UBSan, clang-14
  build build-asan -DCMAKE_BUILD_TYPE=Debug -DLLMHOST_SANITIZE=ON -DLLMHOST_FUZZ=ON -DLLMHOST_BUILD_BENCH=OFF \
    -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g"
}

asan_tests() {
  sanitizer_build &&
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      ctest --test-dir build-asan --output-on-failure -j "$JOBS"
}

fuzz_runs() {
  sanitizer_build && scripts/fuzz.sh build-asan "${FUZZ_SECONDS:-20}"
}

step "release build + unit tests" release_tests
step "conformance (../shared)" conformance
[[ "${SKIP_ASAN:-0}" == 1 ]] || step "ASan+UBSan build + unit tests" asan_tests
[[ "${SKIP_FUZZ:-0}" == 1 ]] || step "bounded fuzz runs" fuzz_runs

echo
for f in "${failures[@]}"; do echo "failed step: $f"; done
echo "steps: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
