// GenerationRelay: carries one engine request's events, those of each of
// its choices (OpenAI's `n`), to its HTTP client.
//
//   auto relay = GenerationRelay::Create(writer, formatter, lease, keepalive, flavor, on_done, plan);
//   if (MaybeError e = relay->Submit(std::move(request))) → answer e
//
// The response ends when every choice has; an error or abort of any choice
// ends it at once (the request, with its other choices, is cancelled).
//
// The relay holds the model's pool lease (pool/engine_pool.h) until the
// final event has been sent: the model is not evicted under a request. When
// the pool aborts the request (a manual unload: 503 model_unloaded; memory
// pressure: 400 prefill_memory_aborted before the first token, else 503),
// the engine request is cancelled and the client gets that error, in the
// stream when it has started.
//
// Submit hands the request to the model's engine; a synchronous refusal
// (400 invalid, 503 queue full) is returned for the caller to answer with
// an HTTP status. Once accepted, a streaming response starts at once (SSE
// headers, then one keep-alive unless off), each engine event becomes
// formatter output, and the final event ends the stream (or sends the
// whole JSON body). When the client goes away, the writer's OnClose
// cancels the engine request. Tick() sends a keep-alive after 10 s of
// silence (a long prefill).
//
// Each choice's text goes through its ChoiceOutput (the output parser, per
// the request's OutputPlan) before the formatter sees it.
//
// Thread safety: the engine's executor only posts each event to the
// connection's transport thread (ResponseWriter::Post), where it is
// formatted and written and, after the final one, the lease is released;
// OnClose arrives on a transport thread, Tick on the server's ticker
// thread; a mutex orders them.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "engine/request.h"
#include "pool/engine_pool.h"
#include "server/choice_output.h"
#include "server/http_types.h"
#include "server/response_format.h"

namespace llmhost::server {

inline constexpr std::chrono::seconds kKeepAliveInterval{10};

struct RelayStats {
  int64_t prompt_tokens = 0, cached_tokens = 0, completion_tokens = 0;
  const char* finish = "";
  std::optional<std::chrono::steady_clock::time_point> first_token;  // none: nothing was generated
};

class GenerationRelay : public std::enable_shared_from_this<GenerationRelay> {
 public:
  // `on_done` runs once after the final event was handed to the writer.
  static std::shared_ptr<GenerationRelay> Create(std::shared_ptr<ResponseWriter> writer,
                                                 std::unique_ptr<ResponseFormatter> formatter,
                                                 std::shared_ptr<ModelLease> lease,
                                                 KeepAliveMode keepalive, ApiFlavor flavor,
                                                 std::function<void(const GenerationRelay*, const RelayStats&)> on_done,
                                                 OutputPlan plan = {});

  MaybeError Submit(GenerationRequest request);
  // Keep-alive when nothing was written for kKeepAliveInterval.
  void Tick(std::chrono::steady_clock::time_point now);
  // Cancels the engine request (client gone, server shutdown).
  void Cancel();
  // Cancels it because the pool aborted it (the client is told why).
  void Abort(AbortReason reason);
  bool done() const;

 private:
  struct Choice {
    std::unique_ptr<ChoiceOutput> output;
    bool started = false;  // formatter Start() sent
    bool done = false;
    int64_t completion_tokens = 0;
    FinishReason finish = FinishReason::kNone;
  };

  GenerationRelay() = default;
  void OnEvent(RequestEvent event);
  std::vector<TokenLogprob> ConvertLogprobs(const RequestEvent& event) const;
  // With mu_ held: ends the response with an error / with every choice done.
  void Fail(const ApiError& error, const char* finish);
  void Finish();

  std::shared_ptr<ResponseWriter> writer_;
  std::unique_ptr<ResponseFormatter> formatter_;
  std::shared_ptr<ModelLease> lease_;    // released after the final event
  std::shared_ptr<ServedModel> model_;  // the tokenizer, for logprob tokens
  Engine* engine_ = nullptr;             // model_->engine; outlives every event it sends
  AbortReason abort_reason_ = AbortReason::kNone;
  int64_t tokens_sent_ = 0;
  KeepAliveMode keepalive_ = KeepAliveMode::kChunk;
  ApiFlavor flavor_ = ApiFlavor::kOpenAI;
  std::function<void(const GenerationRelay*, const RelayStats&)> on_done_;
  OutputPlan plan_;

  mutable std::mutex mu_;
  uint64_t engine_id_ = 0;
  std::vector<Choice> choices_;
  GenerationUsage usage_;  // choice 0's prompt and cached tokens
  bool submitted_ = false;
  bool done_ = false;
  std::chrono::steady_clock::time_point last_write_;
  std::optional<std::chrono::steady_clock::time_point> first_token_at_;  // the first Start
};

}  // namespace llmhost::server
