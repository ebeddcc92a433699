// Engine: serves generation requests for one model. One executor thread owns
// the model's compute, its KV cache and prefix index, and runs the
// scheduler (engine/scheduler.h) step after step; any thread may submit and
// cancel.
//
//   EngineOptions opt;                              // defaults: 8 running, queue 32
//   auto engine = Engine::Create(model, tokenizer, opt);
//   GenerationRequest r;
//   r.prompt = tokenizer->Encode(text, true);
//   r.sampling.temperature = 0;
//   r.on_event = [](RequestEvent ev) { post ev to the connection's strand };
//   Result<uint64_t> id = (*engine)->Submit(std::move(r));
//   ...
//   (*engine)->Cancel(*id);                         // client went away
//
// Submit validates synchronously: InvalidArgument (the server answers 400:
// prompt too long, bad sampling values, ...) or ResourceExhausted when the
// waiting queue is full (503 with Retry-After: 1) or the engine is stopping.
// An accepted request gets its events on the executor thread, in order, and
// exactly one final event (finish != kNone) — also when it is cancelled
// (kAbort) or when the engine shuts down (kAbort). A cancel is handled at
// the start of the next step: the request's blocks are released within one
// step.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <vector>

#include "engine/live_request.h"
#include "engine/request.h"
#include "engine/scheduler.h"
#include "kv/prefix_cache.h"
#include "kv/weights_hasher.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"
#include "util/status.h"

namespace llmhost {

struct EngineOptions {
  int max_concurrent_requests = 8;     // the running batch
  int max_queue = -1;                  // waiting requests; < 0: max(4 × max_concurrent, 32)
  int64_t block_size = kDefaultKvBlockSize;
  // KV cache: kv_blocks blocks, fixed, when > 0. Otherwise it reserves
  // address space for max_concurrent_requests full contexts (never cutting
  // the context to fit), capped at kv_max_bytes when > 0, holds memory for
  // kv_floor_tokens at first, and grows on demand with each growth's memory
  // claimed from kv_budget (null: always granted); blocks above the floor go
  // back to the budget after kv_idle_release_s seconds without work, and
  // when ReleaseKvMemory() is called (memory pressure).
  int64_t kv_blocks = 0;
  uint64_t kv_max_bytes = 0;
  int64_t kv_floor_tokens = 1024;
  std::shared_ptr<KvBudget> kv_budget;
  double kv_idle_release_s = 30;
  double kv_wait_seconds = 300;  // a request waits this long at most for its KV memory
  // The KV cache's element type: F32 (the reference path's, the default), or
  // BF16 / F16 (half the memory; Model::Native16BitType picks the model's).
  DType kv_dtype = DType::kF32;
  int64_t prefill_chunk_tokens = 512;  // 0: whole prompts in one step
  ThreadPool* sample_pool = nullptr;   // SchedulerOptions::sample_pool
  int64_t max_context = 0;             // 0: the model's max_position_embeddings
  bool prefix_caching = true;
  // The KV block store shared by the engines of a server (hot RAM + SSD
  // tiers): full blocks are saved there and restored on a prefix hit.
  std::shared_ptr<BlockStore> block_store;
  std::string model_id;  // the model's id in the store (stats, file headers)
  // The full identity of the model's weights (kv/weights_hasher.h), which the
  // store's keys start from; the store is used once it is ready. Null with a
  // block_store: the identity is computed in Create (every byte read).
  std::shared_ptr<WeightsIdentityHandle> weights_identity;
  // Stop ids of the model; unset: EosTokenIds(model, tokenizer).
  std::optional<std::vector<int32_t>> eos_token_ids;
};

struct EngineStats {
  int64_t running = 0;
  int64_t waiting = 0;                 // queued, not yet running (submitted ones included)
  uint64_t submitted = 0;
  uint64_t rejected = 0;               // queue full
  SchedulerCounters counters;          // steps, tokens, preemptions, finishes
  PrefixCacheStats kv;                 // blocks, prefix-cache hits
  int64_t context_length = 0;
  uint64_t kv_cache_bytes = 0;         // memory the KV cache holds now (committed blocks)
  uint64_t kv_max_bytes = 0;           // what it may grow to (its reservation)
  DType kv_dtype = DType::kF32;
  int64_t kv_saves_in_flight = 0;      // blocks on their way to the block store
};

class Engine {
 public:
  // `model` and `tokenizer` (may be null: ids only) must outlive the engine.
  static Result<std::unique_ptr<Engine>> Create(Model* model, const Tokenizer* tokenizer,
                                                EngineOptions options);
  // Runs a scheduler built by the caller (tests: a scripted StepModel).
  static std::unique_ptr<Engine> Start(std::unique_ptr<Scheduler> scheduler, int max_queue);
  // Shutdown().
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Stops: later Submits fail (ResourceExhausted), every request still
  // queued or running ends with kAbort (events on the executor thread, at
  // the end of the step in progress), then the thread is joined.
  // Idempotent; thread-safe, but not from an event callback.
  void Shutdown();

  // Thread-safe. Returns the request's id (its events carry it).
  Result<uint64_t> Submit(GenerationRequest request);
  // Thread-safe; no-op for an unknown or finished id.
  void Cancel(uint64_t id);
  // Thread-safe: the prompt positions the prefix cache and the block store
  // now hold (what a prefill would not recompute), for the prefill guard.
  int64_t CachedPrefixTokens(std::span<const int32_t> prompt) const {
    return sched_->CachedPrefixTokens(prompt);
  }
  // Thread-safe snapshot, refreshed after every step.
  EngineStats Stats() const;
  // Thread-safe: the requests held now (submitted, queued, running), as of
  // the last step for those the scheduler has; at most kMaxLiveRequests.
  LiveRequests Live() const;
  // Blocks until nothing is queued or running and no block is on its way to
  // the block store, and returns the stats of that moment (every finished
  // request's blocks are released in them).
  EngineStats WaitIdle() const;
  // Thread-safe: gives the KV cache's memory above its floor back at the
  // executor's next turn (blocks in use stay). For memory pressure.
  void ReleaseKvMemory();

  int64_t context_length() const { return context_; }
  int64_t vocab_size() const { return vocab_; }
  int max_queue() const { return max_queue_; }
  // The ids that end a generation (an output constraint's vocabulary allows
  // them where its grammar can end). Thread-safe.
  const std::vector<int32_t>& eos_token_ids() const { return sched_->eos_token_ids(); }

 private:
  Engine(std::unique_ptr<Scheduler> scheduler, int max_queue);
  void Run();
  void Snapshot();  // with mu_ held

  std::unique_ptr<Scheduler> sched_;  // the executor thread's
  const int64_t context_;
  const int64_t vocab_;
  const int max_queue_;

  mutable std::mutex mu_;
  mutable std::condition_variable wake_;  // the executor: work arrived
  mutable std::condition_variable idle_;  // WaitIdle callers
  struct Submitted {
    uint64_t id;
    GenerationRequest request;
    std::chrono::steady_clock::time_point arrived;
  };
  std::vector<Submitted> inbox_;
  std::vector<uint64_t> cancels_;
  uint64_t next_id_ = 1;
  bool stop_ = false;
  bool release_kv_ = false;    // ReleaseKvMemory was called
  bool restore_done_ = false;  // a restore thread finished: admit its request
  double idle_release_s_ = 30;
  int64_t sched_waiting_ = 0;  // the scheduler's queue as of the last step
  bool busy_ = false;          // the executor is inside a step
  EngineStats stats_;
  std::vector<LiveRequest> live_;  // the scheduler's requests as of the last step
  int64_t live_total_ = 0;         // how many it holds (live_ is capped)
  std::mutex join_mu_;  // one Shutdown joins
  std::thread thread_;
};

}  // namespace llmhost
