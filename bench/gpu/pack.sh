#!/usr/bin/env bash
# Packs what a call on the lent GPU machine needs into .devcarry/stage.tar.xz
# (carry [".devcarry"]): binaries built here (CUDA, sm_90) and the Debian
# libraries they link that the machine's image lacks. The working tree
# travels beside it (64 MiB in all: keep the pack under ~36 MiB; xz -9e
# packs the test binaries and the model bench into ~19 MiB).
#   bench/gpu/pack.sh [more binaries...]   (PACK_BINS="..." replaces the default set)
set -euo pipefail
cd "$(dirname "$0")/../.."
bins=(${PACK_BINS:-build/llmhost build/tests/backend_tests build/tests/engine_tests build/bench/model_bench} "$@")
stage=$(mktemp -d)
mkdir -p "$stage/bin" "$stage/lib" .devcarry
for b in "${bins[@]}"; do
  [ -x "$b" ] || { echo "pack: $b not built" >&2; exit 1; }
  strip -o "$stage/bin/$(basename "$b")" "$b"
done
# Libraries outside glibc and the compiler's runtime (ICU, PCRE2, OpenSSL, ...).
for b in "$stage"/bin/*; do ldd "$b"; done | awk '/=> \// {print $3}' | sort -u |
  grep -vE '/(libc|libm|libdl|librt|libpthread|libgcc_s|libstdc\+\+|ld-linux[^/]*)\.so' |
  while read -r lib; do cp -L "$lib" "$stage/lib/"; done
XZ_OPT=${XZ_OPT:--9e -T0} tar -C "$stage" -cJf .devcarry/stage.tar.xz bin lib
rm -rf "$stage"
ls -l .devcarry/stage.tar.xz
