#!/usr/bin/env bash
# The ctest entry `server_integration`: runs the node integration tests
# against the llmhost binary given as $1. Skips (exit 77) when node or the
# SDKs (npm ci in tests/integration, done by scripts/setup.sh) are missing.
set -u
cd "$(dirname "$0")"
export LLMHOST_BIN=${1:?usage: run.sh LLMHOST_BINARY}
if ! command -v node >/dev/null; then
  echo "server_integration: node not found: skipped"
  exit 77
fi
if [[ ! -d node_modules/openai || ! -d node_modules/@anthropic-ai/sdk ]]; then
  echo "server_integration: tests/integration/node_modules is absent (run npm ci there): skipped"
  exit 77
fi
# 5,000 client sockets in one node process: raise the soft descriptor limit.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
exec node --test --test-concurrency=1 --test-reporter=spec ./*.test.mjs
