// A fixed team of threads that each run their part of every call: one thread
// per rank of a tensor-parallel model (a GPU's launches come from one thread,
// so each device keeps its current context and its stream's order).
//
//   ThreadTeam team(2);
//   team.Run([&](int rank) { ... });   // both ranks at once; returns when both are done
//
// Run is called by one thread at a time (the model's caller); the function
// runs on thread `rank` for each rank, never on the caller's.
#pragma once

#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace llmhost {

class ThreadTeam {
 public:
  explicit ThreadTeam(int size);
  ~ThreadTeam();
  ThreadTeam(const ThreadTeam&) = delete;
  ThreadTeam& operator=(const ThreadTeam&) = delete;

  int size() const { return static_cast<int>(threads_.size()); }
  // Runs fn(rank) on every member's thread and waits for all of them; an
  // exception a part throws is thrown here once every part has ended.
  void Run(const std::function<void(int rank)>& fn);

 private:
  void Loop(int rank);

  std::mutex mu_;
  std::condition_variable start_, done_;
  const std::function<void(int)>* fn_ = nullptr;
  uint64_t round_ = 0;
  int running_ = 0;
  std::exception_ptr error_;  // the first part's exception this round
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace llmhost
