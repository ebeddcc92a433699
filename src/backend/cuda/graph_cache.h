// Device graphs of forward steps, by the caller's key (shapes and addresses):
// a step is recorded the second time its key is seen (the first runs as
// plain launches and sizes every scratch buffer), then replayed as one
// launch. Graphs made before `generation` changed (a scratch buffer moved,
// a weight was released) are dropped. Least recently used go first.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <list>
#include <unordered_map>

namespace llmhost::cuda {

class GraphCache {
 public:
  enum class Action { kRun, kRecord, kReplay };
  explicit GraphCache(size_t capacity) : capacity_(capacity) {}
  ~GraphCache() { Clear(); }
  GraphCache(const GraphCache&) = delete;
  GraphCache& operator=(const GraphCache&) = delete;

  // What to do with the step of `key` at `generation`.
  Action Next(uint64_t key, uint64_t generation);
  // Launches the graph Next said kReplay for.
  cudaError_t Replay(uint64_t key, cudaStream_t s);
  // Keeps the graph recorded for `key` (instantiated here); false when it
  // cannot be instantiated (the key is then never recorded again).
  bool Keep(uint64_t key, uint64_t generation, cudaGraph_t g);
  // The key's recording failed: run it as plain launches from now on.
  void Refuse(uint64_t key);
  void Clear();
  uint64_t replays() const { return replays_; }

 private:
  struct Entry {
    uint64_t generation = 0;
    cudaGraphExec_t exec = nullptr;
    bool refused = false;
    std::list<uint64_t>::iterator lru;
  };
  void Touch(Entry& e, uint64_t key);
  void Evict();

  size_t capacity_;
  std::unordered_map<uint64_t, Entry> entries_;
  std::list<uint64_t> lru_;  // most recent first
  uint64_t replays_ = 0;
};

}  // namespace llmhost::cuda
