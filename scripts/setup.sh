#!/usr/bin/env bash
# One-command set-up on Debian 12: installs every package the build and the
# tests need, then builds llmhost (Release) into build/.
#   scripts/setup.sh            install + build
#   SKIP_APT=1 scripts/setup.sh build only
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  build-essential cmake ninja-build pkg-config git python3
  nlohmann-json3-dev libpcre2-dev libicu-dev libssl-dev libcli11-dev libcpp-httplib-dev
  libboost1.81-dev              # Boost.Asio + Boost.Beast (HTTP server; header-only)
  libgtest-dev libgmock-dev libbenchmark-dev
  clang-14 libclang-rt-14-dev   # ASan/UBSan and libFuzzer builds
  python3-jsonschema python3-rfc3987  # scripts/check_grammar_cases.py (the grammar suite's labels)
  openssl                       # certificates for the tests: hub_pull.py's TLS fake Hub, tls.test.mjs
  prometheus                    # promtool: the /metrics test checks the exposition with it
  chromium                      # the dashboard's browser tests (playwright-core drives it)
)

if [[ "${SKIP_APT:-0}" != 1 ]]; then
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO=sudo
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${PACKAGES[@]}"
  # Node.js runs the integration tests with the official SDKs; a machine
  # without it gets Debian's (node 18 runs them too).
  command -v npm >/dev/null || $SUDO apt-get install -y -qq --no-install-recommends nodejs npm
fi

# The official OpenAI / Anthropic SDKs for the integration tests (pinned by
# tests/integration/package-lock.json); without them those tests skip.
if command -v npm >/dev/null; then
  (cd tests/integration && npm ci --no-audit --no-fund --loglevel=error) ||
    echo "setup: npm ci failed: the server integration tests will be skipped"
fi

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
ninja -C build
echo "setup: built $(pwd)/build/llmhost"
# The CUDA backend is built when nvcc (CUDA 13, /usr/local/cuda) is found.
if grep -q 'LLMHOST_HAVE_CUDA=1' build/build.ninja 2>/dev/null; then
  echo "setup: with the CUDA backend (archs $(sed -n 's/^LLMHOST_CUDA_ARCHS:STRING=//p' build/CMakeCache.txt)): --device cuda"
else
  echo "setup: without the CUDA backend (no nvcc at /usr/local/cuda/bin): CPU only"
fi
