// BlockSaver: copies full KV blocks out of the paged cache into the block
// store on a thread of its own, so that the engine's executor only hands a
// block over (a reference taken, a job queued) instead of copying it and
// waiting for the store (whose disk writes may run inline when the SSD
// writer is behind).
//
//   saver.Submit(id, meta);      // executor: the caller took a reference on id
//   ... saver thread: ReadBlock(id) → store.Save(meta, bytes) ...
//   for (const auto& d : saver.TakeDone()) allocator.Unref(d.id);   // executor
//
// A referenced block is never handed out for new contents, and a full block
// is never written again (kv/prefix_cache.h), so the saver reads it while the
// executor goes on stepping. The bound on blocks in flight keeps the pinned
// blocks few: Submit refuses past it and the caller saves inline.
//
// Thread safety: Submit, TakeDone and in_flight are called by the owning
// (executor) thread; the saver thread only reads blocks and calls the store.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "kv/block_store.h"
#include "model/kv_cache.h"

namespace llmhost {

class BlockSaver {
 public:
  static constexpr size_t kMaxInFlight = 16;

  // `cache` and `store` must outlive the saver; `on_done` (may be empty)
  // runs on the saver thread after each save (the engine wakes its executor
  // to reap it).
  BlockSaver(const KvCache* cache, std::shared_ptr<BlockStore> store, std::function<void()> on_done);
  // Saves what is queued, then joins the thread.
  ~BlockSaver();
  BlockSaver(const BlockSaver&) = delete;
  BlockSaver& operator=(const BlockSaver&) = delete;

  // Queues block `id` (referenced by the caller until TakeDone returns it).
  // False, and nothing queued, when kMaxInFlight are already in flight.
  bool Submit(int32_t id, const BlockMeta& meta);
  struct Done {
    int32_t id;
    BlockKey key;  // the store's key (BlockMeta::key)
  };
  // Blocks whose save is done since the last call: drop their references.
  std::vector<Done> TakeDone();
  // Submitted and not yet returned by TakeDone.
  size_t in_flight() const;
  // Blocks until every submitted save is done (TakeDone still returns them).
  void Drain();

 private:
  struct Job {
    int32_t id;
    BlockMeta meta;
  };
  void Loop();

  const KvCache* cache_;
  std::shared_ptr<BlockStore> store_;
  std::function<void()> on_done_;
  mutable std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  std::deque<Job> queue_;
  std::vector<Done> done_;
  size_t in_flight_ = 0;  // queued + being saved + done, not taken
  size_t saving_ = 0;     // queued + being saved
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace llmhost
