// A BenchStreamFn (engine/bench_run.h) straight into an Engine, with no HTTP
// between: the prompt encoded with the model's tokenizer (special tokens
// added, as /v1/completions does), submitted greedy with ignore_eos, and
// timed from the Submit to its token events. For the server's Bench runs and
// `llmhost bench` in-process.
#pragma once

#include <atomic>

#include "engine/bench_run.h"
#include "engine/engine.h"
#include "tokenizer/tokenizer.h"

namespace llmhost {

// `engine` and `tokenizer` must outlive the function; `cancel` (may be null)
// ends a request in flight (its sample then has an error). Thread-safe.
BenchStreamFn EngineBenchStream(Engine* engine, const Tokenizer* tokenizer,
                                const std::atomic<bool>* cancel = nullptr);

}  // namespace llmhost
