#include "backend/cuda/graph_cache.h"

#include <cuda_runtime.h>

namespace llmhost::cuda {

void GraphCache::Touch(Entry& e, uint64_t key) {
  lru_.erase(e.lru);
  lru_.push_front(key);
  e.lru = lru_.begin();
}

void GraphCache::Evict() {
  while (entries_.size() > capacity_ && !lru_.empty()) {
    auto it = entries_.find(lru_.back());
    if (it != entries_.end()) {
      if (it->second.exec) cudaGraphExecDestroy(it->second.exec);
      entries_.erase(it);
    }
    lru_.pop_back();
  }
}

GraphCache::Action GraphCache::Next(uint64_t key, uint64_t generation) {
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    lru_.push_front(key);
    Entry e;
    e.generation = generation;
    e.lru = lru_.begin();
    entries_.emplace(key, e);
    Evict();
    return Action::kRun;
  }
  Entry& e = it->second;
  Touch(e, key);
  if (e.refused) return Action::kRun;
  if (e.generation != generation) {  // recorded (or first seen) with other buffers
    if (e.exec) cudaGraphExecDestroy(e.exec);
    e.exec = nullptr;
    e.generation = generation;
    return Action::kRun;
  }
  return e.exec ? Action::kReplay : Action::kRecord;
}

cudaError_t GraphCache::Replay(uint64_t key, cudaStream_t s) {
  auto it = entries_.find(key);
  if (it == entries_.end() || !it->second.exec) return cudaErrorInvalidValue;
  ++replays_;
  return cudaGraphLaunch(it->second.exec, s);
}

bool GraphCache::Keep(uint64_t key, uint64_t generation, cudaGraph_t g) {
  auto it = entries_.find(key);
  if (it == entries_.end()) return false;
  cudaGraphExec_t exec = nullptr;
  if (cudaGraphInstantiate(&exec, g, 0) != cudaSuccess) {
    (void)cudaGetLastError();
    it->second.refused = true;
    return false;
  }
  if (it->second.exec) cudaGraphExecDestroy(it->second.exec);
  it->second.exec = exec;
  it->second.generation = generation;
  return true;
}

void GraphCache::Refuse(uint64_t key) {
  auto it = entries_.find(key);
  if (it == entries_.end()) return;
  if (it->second.exec) cudaGraphExecDestroy(it->second.exec);
  it->second.exec = nullptr;
  it->second.refused = true;
}

void GraphCache::Clear() {
  for (auto& [key, e] : entries_) {
    if (e.exec) cudaGraphExecDestroy(e.exec);
  }
  entries_.clear();
  lru_.clear();
}

}  // namespace llmhost::cuda
