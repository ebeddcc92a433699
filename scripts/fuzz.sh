#!/usr/bin/env bash
# Runs every libFuzzer target in BUILD_DIR/fuzz for SECONDS each over a scratch
# copy of its corpus (fuzz/corpus/<name>: seeds and kept crash inputs), so the
# repository's corpus does not grow. A crash input is saved to fuzz/artifacts/.
# JOBS targets run at once (default: the number of cores; each is one process).
#   scripts/fuzz.sh BUILD_DIR [SECONDS]
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:?usage: scripts/fuzz.sh BUILD_DIR [SECONDS]}
SECS=${2:-60}
JOBS=${JOBS:-$(nproc)}
mkdir -p fuzz/artifacts
shopt -s nullglob
targets=("$BUILD"/fuzz/*_fuzz)
if [[ ${#targets[@]} -eq 0 ]]; then
  echo "fuzz: no targets built in $BUILD/fuzz"
  exit 1
fi

fuzz_one() {  # fuzz_one EXE: runs it, then prints its result in one piece
  local exe=$1 name scratch seeds rc=0
  name=$(basename "$exe")
  scratch=$(mktemp -d)
  [[ -d fuzz/corpus/$name ]] && cp -r "fuzz/corpus/$name/." "$scratch/"
  seeds=$(ls "$scratch" | wc -l)
  if ASAN_OPTIONS=detect_leaks=1 "$exe" -max_total_time="$SECS" -rss_limit_mb=2048 -timeout=10 \
      -artifact_prefix="fuzz/artifacts/$name-" -print_final_stats=0 "$scratch" >"$scratch.log" 2>&1; then
    echo "fuzz: $name for ${SECS}s ($seeds seeds): $(grep -E "^#[0-9]+.*DONE" "$scratch.log" | tail -1)"
  else
    echo "fuzz: $name for ${SECS}s ($seeds seeds) FAILED; last lines:"
    tail -40 "$scratch.log"
    rc=1
  fi
  rm -rf "$scratch" "$scratch.log"
  return $rc
}

rc=0
pids=()
for exe in "${targets[@]}"; do
  if [[ ${#pids[@]} -ge $JOBS ]]; then  # wait for the oldest before starting another
    wait "${pids[0]}" || rc=1
    pids=("${pids[@]:1}")
  fi
  fuzz_one "$exe" &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || rc=1; done
exit $rc
