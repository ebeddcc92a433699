// EventStream: a thread-safe queue of one request's events, for callers that
// wait on a thread of their own (the CLI, tests) instead of reacting to the
// callback (the HTTP server).
//
//   auto stream = std::make_shared<EventStream>();
//   request.on_event = stream->Callback();
//   engine->Submit(std::move(request));
//   while (auto ev = stream->Next()) print(ev->text);
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "engine/request.h"

namespace llmhost {

class EventStream : public std::enable_shared_from_this<EventStream> {
 public:
  // A callback that keeps this stream alive and queues each event.
  EventCallback Callback() {
    std::shared_ptr<EventStream> self = shared_from_this();
    return [self](RequestEvent ev) { self->Push(std::move(ev)); };
  }

  void Push(RequestEvent ev) {
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (ev.finish != FinishReason::kNone) done_ = true;
      queue_.push_back(std::move(ev));
    }
    cv_.notify_all();
  }

  // The next event, blocking until there is one; nullopt once the final
  // event has been taken.
  std::optional<RequestEvent> Next() {
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait(lk, [this] { return !queue_.empty() || (done_ && queue_.empty()); });
    if (queue_.empty()) return std::nullopt;
    RequestEvent ev = std::move(queue_.front());
    queue_.pop_front();
    return ev;
  }

  // Blocks until the final event and returns every event not yet taken.
  std::vector<RequestEvent> WaitAll() {
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait(lk, [this] { return done_; });
    std::vector<RequestEvent> out(std::make_move_iterator(queue_.begin()),
                                  std::make_move_iterator(queue_.end()));
    queue_.clear();
    return out;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<RequestEvent> queue_;
  bool done_ = false;
};

}  // namespace llmhost
