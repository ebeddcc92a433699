#include "engine/engine_bench_stream.h"

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>

namespace llmhost {

namespace {

using Clock = std::chrono::steady_clock;

// What the executor thread's events leave for the waiting caller.
struct Waiter {
  std::mutex mu;
  std::condition_variable done_cv;
  bool done = false;
  bool got_token = false;
  Clock::time_point first, last;
  Usage usage;
  FinishReason finish = FinishReason::kNone;
  std::string error;
};

BenchSample StreamOne(Engine* engine, const Tokenizer* tokenizer, const std::atomic<bool>* cancel,
                      const std::string& prompt, int64_t max_tokens) {
  BenchSample s;
  GenerationRequest r;
  r.prompt = tokenizer->Encode(prompt, /*add_special=*/true);
  r.sampling.temperature = 0;
  r.max_tokens = max_tokens;
  r.ignore_eos = true;
  auto w = std::make_shared<Waiter>();
  r.on_event = [w](RequestEvent ev) {
    const Clock::time_point now = Clock::now();
    std::lock_guard<std::mutex> lock(w->mu);
    if (!ev.token_ids.empty()) {
      if (!w->got_token) w->first = now;
      w->last = now;
      w->got_token = true;
    }
    w->usage = ev.usage;
    if (ev.finish == FinishReason::kNone) return;
    w->finish = ev.finish;
    if (!ev.error.ok()) w->error = ev.error.message();
    w->done = true;
    w->done_cv.notify_all();
  };
  const Clock::time_point start = Clock::now();
  Result<uint64_t> id = engine->Submit(std::move(r));
  if (!id.ok()) {
    s.error = id.status().message();
    return s;
  }
  std::unique_lock<std::mutex> lock(w->mu);
  bool cancelled = false;
  while (!w->done) {
    // Wakes now and then to see whether the run was cancelled.
    w->done_cv.wait_for(lock, std::chrono::milliseconds(100));
    if (!cancelled && !w->done && cancel && cancel->load()) {
      cancelled = true;
      engine->Cancel(*id);
    }
  }
  s.prompt_tokens = w->usage.prompt_tokens;
  s.cached_tokens = w->usage.cached_tokens;
  s.completion_tokens = w->usage.completion_tokens;
  if (w->finish == FinishReason::kAbort) {
    s.error = cancelled ? "cancelled" : "the request was aborted (the engine stopped)";
  } else if (w->finish == FinishReason::kError) {
    s.error = w->error.empty() ? "the generation failed" : w->error;
  } else if (!w->got_token) {
    s.error = "the engine generated no token";
  }
  if (w->got_token) {
    s.ttft_s = std::chrono::duration<double>(w->first - start).count();
    s.decode_s = std::chrono::duration<double>(w->last - w->first).count();
  }
  return s;
}

}  // namespace

BenchStreamFn EngineBenchStream(Engine* engine, const Tokenizer* tokenizer, const std::atomic<bool>* cancel) {
  return [engine, tokenizer, cancel](const std::string& prompt, int64_t max_tokens) {
    return StreamOne(engine, tokenizer, cancel, prompt, max_tokens);
  };
}

}  // namespace llmhost
