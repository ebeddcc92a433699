// WeightsHasher: the full weights identity (kv/fingerprint.h) of each model
// the server loads, computed off the request path.
//
// Identify(path) answers at once. When every weight file's digest is
// remembered (kv/weights_digest.h: the same file version seen before, in
// this process or an earlier one), the identity is ready on return, so a
// restarted server restores blocks from its first request. A small model
// (inline_max_bytes) is hashed there and then. Otherwise the files are hashed
// on a background thread (its chunks on `threads` threads
// at the lowest CPU priority), one model after another, and the identity
// becomes ready when the last file is done. Until then the model's engine
// neither saves blocks to the store nor restores them (it catches up on the
// blocks it indexed meanwhile once the identity is known).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "kv/fingerprint.h"
#include "kv/weights_digest.h"

namespace llmhost {

// One model's identity as it is being computed. Thread-safe.
class WeightsIdentityHandle {
 public:
  enum class State { kHashing, kReady, kFailed };

  std::optional<Sha256Digest> Get() const;  // once kReady
  State state() const;
  std::string error() const;                // kFailed: why (blocks are never stored for it)
  uint64_t bytes_hashed() const { return progress_.bytes.load(); }
  uint64_t bytes_total() const { return bytes_total_; }
  double seconds() const;                   // how long the hashing took (0 when remembered)
  bool from_cache() const { return from_cache_; }
  // Blocks until ready or failed, at most `timeout`; true when no longer hashing.
  bool Wait(std::chrono::milliseconds timeout) const;

  // A handle that is ready already (engines whose identity was computed
  // inline), and one that waits for Finish (the hasher's, or a test's).
  static std::shared_ptr<WeightsIdentityHandle> Ready(const Sha256Digest& identity);
  static std::shared_ptr<WeightsIdentityHandle> Pending() { return std::make_shared<WeightsIdentityHandle>(); }
  // Once: ready with the identity, or failed with the status.
  void Finish(Result<Sha256Digest> r, double seconds);

 private:
  friend class WeightsHasher;

  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  State state_ = State::kHashing;
  Sha256Digest identity_{};
  std::string error_;
  double seconds_ = 0;
  bool from_cache_ = false;
  uint64_t bytes_total_ = 0;
  DigestProgress progress_;
};

struct WeightsHasherOptions {
  std::string cache_path;  // <home>/weights_digests.json; "" in memory only
  int threads = 0;         // 0: min(hardware threads, 8)
  bool low_priority = true;
  // Files still to hash up to this many bytes in all are hashed by Identify
  // itself (~50 ms for 64 MiB): a small model's first blocks never wait,
  // whatever the machine's load does to a background thread at nice 19.
  uint64_t inline_max_bytes = uint64_t{64} << 20;
};

class WeightsHasher {
 public:
  explicit WeightsHasher(WeightsHasherOptions options);
  ~WeightsHasher();  // stops hashing (handles still hashing fail) and joins
  WeightsHasher(const WeightsHasher&) = delete;
  WeightsHasher& operator=(const WeightsHasher&) = delete;

  // Never blocks on hashing: at most a stat per file and a lookup. An error
  // listing the files (no weights, unreadable directory) is returned as a
  // failed handle.
  std::shared_ptr<WeightsIdentityHandle> Identify(const std::string& model_path);

  WeightsDigestCache& cache() { return cache_; }

 private:
  struct Job {
    WeightFiles files;
    std::vector<FileStamp> stamps;
    std::shared_ptr<WeightsIdentityHandle> handle;
  };
  void Run();
  void HashJob(Job& job, bool background);

  WeightsHasherOptions options_;
  WeightsDigestCache cache_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_;  // guarded by mu_
  bool stop_ = false;
  std::atomic<bool> cancel_{false};
  std::thread thread_;
};

}  // namespace llmhost
