// MaskWorker: fills the next-token masks of constrained choices on a thread
// of its own while the executor thread runs the step's forward pass, so that
// the grammar's work hides behind the model's (the forward pass does not
// read the trackers; the trackers' masks are needed only when it is done).
//
//   worker.Start(trackers);   // before Forward
//   model->Forward(...);
//   worker.Wait();            // before sampling; the trackers are the executor's again
//
// The thread starts with the first Start (an engine that never sees a
// constraint has none). Start and Wait are called by one thread (the
// executor), alternately.
#pragma once

#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/constraint_tracker.h"

namespace llmhost {

class MaskWorker {
 public:
  MaskWorker() = default;
  ~MaskWorker();
  MaskWorker(const MaskWorker&) = delete;
  MaskWorker& operator=(const MaskWorker&) = delete;

  // Hands `jobs` to the worker (nothing to do when empty). The caller must not
  // touch them until Wait returns.
  void Start(std::vector<ConstraintTracker*> jobs);
  // Returns once every job of the last Start has its mask.
  void Wait();

 private:
  void Run();

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<ConstraintTracker*> jobs_;  // guarded by mu_
  bool busy_ = false;                     // jobs_ handed over, not done
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace llmhost
