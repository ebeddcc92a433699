#!/usr/bin/env bash
# Runs every libFuzzer target in BUILD_DIR/fuzz for SECONDS each over a scratch
# copy of its corpus (fuzz/corpus/<name>: seeds and kept crash inputs), so the
# repository's corpus does not grow. A crash input is saved to fuzz/artifacts/.
#   scripts/fuzz.sh BUILD_DIR [SECONDS]
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:?usage: scripts/fuzz.sh BUILD_DIR [SECONDS]}
SECS=${2:-60}
mkdir -p fuzz/artifacts
rc=0
shopt -s nullglob
targets=("$BUILD"/fuzz/*_fuzz)
if [[ ${#targets[@]} -eq 0 ]]; then
  echo "fuzz: no targets built in $BUILD/fuzz"
  exit 1
fi
for exe in "${targets[@]}"; do
  name=$(basename "$exe")
  scratch=$(mktemp -d)
  [[ -d fuzz/corpus/$name ]] && cp -r "fuzz/corpus/$name/." "$scratch/"
  echo "fuzz: $name for ${SECS}s ($(ls "$scratch" | wc -l) seeds)"
  if ! ASAN_OPTIONS=detect_leaks=1 "$exe" -max_total_time="$SECS" -rss_limit_mb=2048 -timeout=10 \
      -artifact_prefix="fuzz/artifacts/$name-" -print_final_stats=0 "$scratch" >"$scratch.log" 2>&1; then
    echo "fuzz: $name FAILED; last lines:"
    tail -40 "$scratch.log"
    rc=1
  else
    grep -E "^#[0-9]+.*DONE" "$scratch.log" | tail -1
  fi
  rm -rf "$scratch" "$scratch.log"
done
exit $rc
