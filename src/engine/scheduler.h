// Scheduler: continuous batching over one model and one KV cache, one step
// at a time. Engine (engine/engine.h) runs it on its executor thread; tests
// may drive Step() directly.
//
// Each Step():
//   1. admits waiting requests, first come first served, while fewer than
//      max_running run and the KV pool can hold the whole prompt (minus the
//      blocks found in the prefix cache, which are taken by reference) on
//      top of what admitted prompts still need; the first request that does
//      not fit waits, and so does everything behind it. A request whose
//      prefix the block store holds first waits for its restore, which runs
//      on a restore thread while the requests behind it are admitted and
//      the running ones keep stepping;
//   2. plans ONE Model::Forward: every running request that is decoding
//      (one token, or the few an output constraint forced after it) plus
//      prompt chunks of prefilling requests, oldest first, up to
//      prefill_chunk_tokens in all (a long prompt never stalls the streams
//      beside it);
//   3. when the step needs more free blocks than there are, preempts the
//      newest running request (its blocks are released but stay findable in
//      the prefix index; it goes back to the front of the queue and later
//      recomputes only what was evicted) until it fits;
//   4. runs the step (while it runs, the mask worker fills the next-token
//      masks of the constrained requests that sample after it: see
//      engine/mask_worker.h), indexes every newly full block, samples a token for
//      each request whose pending tokens are all in, sends its event, and
//      releases the blocks of every request that finished. A request of
//      several choices runs its prompt once: when it is in, the other
//      choices fork it (KvCache::Fork: its blocks shared, copy-on-write)
//      and join the batch.
//
// Not thread-safe except Validate() and the const accessors of immutable
// settings: the engine's executor thread owns it.
#pragma once

#include <chrono>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/request.h"
#include "engine/sequence.h"
#include "engine/kv_budget.h"
#include "engine/live_request.h"
#include "engine/mask_worker.h"
#include "engine/step_model.h"
#include "kv/prefix_cache.h"
#include "model/kv_cache.h"
#include "tokenizer/tokenizer.h"
#include "util/thread_pool.h"

namespace llmhost {

inline constexpr size_t kMaxStopStrings = 64;
inline constexpr size_t kMaxStopStringBytes = 1024;
inline constexpr size_t kMaxStopTokenIds = 1024;

struct SchedulerOptions {
  int max_running = 8;                 // requests in the running batch
  int64_t prefill_chunk_tokens = 512;  // prompt tokens per step; 0: whole prompts
  // Positions one sequence may hold (prompt + output); clamped to the pool.
  int64_t max_context = 0;
  std::vector<int32_t> eos_token_ids;  // stop ids of the model (EosTokenIds)
  bool prefix_caching = true;
  // Where full blocks are saved and restored from beyond the paged pool (the
  // hot RAM and SSD tiers, kv/block_store.h); null: none. Needs prefix_caching.
  std::shared_ptr<BlockStore> block_store;
  std::string model_id;                // names the model in the store
  // The store's fingerprint once known (kv/prefix_cache.h); until it answers
  // the store is not used. Null: never.
  PrefixCache::StoreFingerprintFn store_fingerprint;
  // A cache that grows (KvCache::max_blocks above its blocks): the memory of
  // each growth is claimed here first (null: always granted). The cache
  // keeps kv_floor_blocks (paid for when the model was admitted), grows by
  // at least kv_grow_blocks at a time, and waits at most kv_wait_seconds for
  // a claim before a request that cannot go on alone ends with an error.
  std::shared_ptr<KvBudget> kv_budget;
  int64_t kv_floor_blocks = 0;
  int64_t kv_grow_blocks = 1;
  double kv_wait_seconds = 300;
  // Draws a step's sampled rows on this pool's threads (each row with its
  // own sampler: the same tokens as one after another); null: the calling
  // thread alone. A T=1, top_p draw over a 128K vocabulary is 0.2-0.4 ms,
  // so 128 rows one after another take about as long as a GPU's decode step.
  ThreadPool* sample_pool = nullptr;
};

struct SchedulerCounters {
  uint64_t steps = 0;
  uint64_t admitted = 0;          // admissions (re-admissions after preemption included)
  uint64_t preemptions = 0;
  uint64_t finished = 0;          // stop or length
  uint64_t aborted = 0;
  uint64_t failed = 0;            // error
  uint64_t prompt_tokens = 0;     // of admitted requests (first admission)
  uint64_t cached_tokens = 0;     // of those, reused from the prefix cache
  uint64_t prefill_tokens = 0;    // tokens run through the model in prefill chunks
  uint64_t generated_tokens = 0;  // sampled tokens
  uint64_t pooled_draws = 0;      // of those, drawn on SchedulerOptions::sample_pool's threads
  uint64_t picked_rows = 0;       // of those, picked where the logits are (the step returned tokens, Backend::PickRows)
};

class Scheduler {
 public:
  // `model` and `cache` are owned; `fingerprint` keys the prefix index
  // (kv/fingerprint.h); `tokenizer` (may be null: no text, no stop strings)
  // must outlive the scheduler.
  Scheduler(std::unique_ptr<StepModel> model, std::unique_ptr<KvCache> cache,
            const Sha256Digest& fingerprint, const Tokenizer* tokenizer, SchedulerOptions options);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Checks a request against the model and the context: InvalidArgument with
  // a message for the client (empty prompt, token id out of range, prompt too
  // long, bad sampling values, bad stop strings). Thread-safe.
  Status Validate(const GenerationRequest& request) const;
  // The positions of `prompt` that admission would now take from the prefix
  // cache or the block store (an estimate: blocks may be evicted, or the
  // free list too short to restore them all, before then). Thread-safe.
  int64_t CachedPrefixTokens(std::span<const int32_t> prompt) const;
  // Positions a sequence may hold: min(max_context, the model's, the pool's).
  int64_t context_length() const { return context_; }
  int64_t vocab_size() const { return vocab_; }
  // The model's stop ids (immutable: thread-safe).
  const std::vector<int32_t>& eos_token_ids() const { return options_.eos_token_ids; }

  // Queues a validated request (ids must increase with arrival); `arrived`:
  // when it reached the engine.
  void Enqueue(uint64_t id, GenerationRequest request,
               std::chrono::steady_clock::time_point arrived = std::chrono::steady_clock::now());
  // Ends the request with kAbort and releases its blocks (no-op when unknown).
  void Cancel(uint64_t id);
  // Ends every request with kAbort (shutdown).
  void AbortAll();

  bool HasWork() const { return !running_.empty() || !waiting_.empty(); }
  // The last Step could not go on for want of KV memory (a claim was denied):
  // the engine waits a little before it tries again instead of spinning.
  bool stalled() const { return stalled_; }
  // Nothing to step until a restore finishes: nothing runs and every waiting
  // request waits for its restore from the block store.
  bool waiting_on_restores() const;
  // Called on a restore thread when a restore is done, and on the block
  // saver's thread after each save (the engine wakes its executor: Admit
  // reaps them). Set before the first Step.
  void set_on_restore_done(std::function<void()> fn) { prefix_->set_restore_done_hook(std::move(fn)); }
  // Gives cache blocks above the floor back (those free at the top: cached
  // prefixes there are forgotten) and returns their memory to the budget.
  // Returns the bytes given back.
  uint64_t ReleaseKv();
  bool kv_above_floor() const {
    return cache_->allocator().total_blocks() > std::max<int64_t>(options_.kv_floor_blocks, 1);
  }
  // One scheduling step (see above). A failed forward pass ends the requests
  // of that step with kError.
  void Step();
  // Step's first phase alone (the engine runs it first to publish an exact
  // queue length while the forward pass runs). Step() admits too.
  void Admit();

  // The requests held now, running ones first, each by arrival: at most
  // `max` entries written over `out`'s (their strings' memory reused, so that
  // a snapshot after every step allocates nothing once warm), the choices of
  // a request summed in one entry. Returns how many requests there are.
  int64_t CollectLive(std::vector<LiveRequest>* out, size_t max) const;

  int64_t running() const { return static_cast<int64_t>(running_.size()); }
  int64_t waiting() const { return static_cast<int64_t>(waiting_.size()); }
  const SchedulerCounters& counters() const { return counters_; }
  PrefixCacheStats kv_stats() const { return prefix_->stats(); }
  KvCache& cache() { return *cache_; }
  PrefixCache& prefix_cache() { return *prefix_; }
  // The block store waits for its fingerprint (kv/prefix_cache.h).
  bool store_pending() const { return prefix_->store_pending(); }
  // Blocks being saved to the store (referenced until Admit reaps them).
  int64_t saves_in_flight() const { return static_cast<int64_t>(prefix_->saves_in_flight()); }
  void PollStore() { prefix_->PollStore(); }

 private:
  struct Planned {
    Sequence* seq;
    int64_t n;         // tokens to run
    bool sample;       // the chunk ends the pending tokens: sample after it
    bool decode;       // the last sampled token (and tokens forced after it), not a prompt chunk
  };
  std::vector<Planned> Plan() const;
  int64_t BlocksFor(const std::vector<Planned>& plan) const;
  // Blocks the running requests' prompts still need to finish prefilling.
  int64_t ReservedForPrefill() const;
  void Preempt(size_t running_index);
  void Retire(size_t running_index);  // releases a finished request
  void ReleaseBlocks(Sequence* s);
  // `to` (a choice of from's request) takes from's stored positions by
  // reference: tokens, blocks, block keys.
  void Fork(Sequence& from, Sequence* to);
  // The step's ForwardOutput::picks: a RowPick for each sampled row that is
  // Pickable (no fork, constraint, penalty, bias or logprobs), none for the
  // rest; empty when no row has one.
  void PlanPicks(const std::vector<Planned>& plan);
  // drawn_[i]: plan[i]'s token, taken from the step's picked tokens where it
  // brought one back, else drawn on options_.sample_pool's threads where
  // the row only draws from its sampler and the step has two such rows.
  void DrawPlainRows(const std::vector<Planned>& plan);
  // Makes at least `blocks` blocks free, growing the cache (claiming its
  // memory) when it can. True when they are free.
  bool EnsureFree(int64_t blocks);

  bool stalled_ = false;
  std::optional<uint64_t> admit_blocked_;  // the request the last Admit could not fit
  std::optional<std::chrono::steady_clock::time_point> stalled_since_;
  std::unique_ptr<StepModel> model_;
  std::unique_ptr<KvCache> cache_;
  std::unique_ptr<PrefixCache> prefix_;
  const Tokenizer* tokenizer_;
  SchedulerOptions options_;
  int64_t vocab_;
  int64_t context_;
  std::deque<std::unique_ptr<Sequence>> waiting_;  // by arrival
  std::vector<std::unique_ptr<Sequence>> running_; // by arrival
  SchedulerCounters counters_;
  ForwardOutput out_;
  std::vector<std::optional<SampledToken>> drawn_;  // by plan row (DrawPlainRows)
  MaskWorker masks_;  // the constrained requests' masks, during Forward
};

}  // namespace llmhost
