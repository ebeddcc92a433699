#include "server/generation_relay.h"

#include <algorithm>

#include "util/log.h"

namespace llmhost::server {

namespace {

// A client that stops reading: its queue is dropped past this.
constexpr size_t kMaxPendingBytes = 16u << 20;

HeaderList SseHeaders() {
  return {{"Cache-Control", "no-cache"}, {"X-Accel-Buffering", "no"}};
}

// Why an aborted request stopped, as the client hears it.
ApiError AbortError(AbortReason reason, bool tokens_sent) {
  if (reason == AbortReason::kModelUnloaded) {
    ApiError e = ErrorWithStatus(503, "the model was unloaded while this request ran; retry", "model_unloaded");
    e.retry_after_s = 1;
    return e;
  }
  if (reason == AbortReason::kMemoryPressure) {
    if (!tokens_sent) {
      return ErrorWithStatus(400,
                             "The request was stopped during prefill: the server's memory limit was reached "
                             "while processing it. Retry later, free memory or shorten the context.",
                             "prefill_memory_aborted");
    }
    ApiError e = ErrorWithStatus(503, "the request was stopped: the server's memory limit was reached",
                                 "memory_pressure");
    e.retry_after_s = 5;
    return e;
  }
  return ErrorWithStatus(503, "the request was aborted (the server is shutting down)");
}

// A synchronous refusal by the engine, as the client hears it.
ApiError SubmitError(const Status& st) {
  if (st.code() == StatusCode::kResourceExhausted) {
    ApiError e = ErrorWithStatus(503, "the server is busy: " + st.message() + "; retry shortly");
    e.retry_after_s = 1;
    return e;
  }
  if (st.code() == StatusCode::kInvalidArgument) return BadRequest(st.message());
  return ErrorWithStatus(500, st.message());
}

}  // namespace

std::shared_ptr<GenerationRelay> GenerationRelay::Create(
    std::shared_ptr<ResponseWriter> writer, std::unique_ptr<ResponseFormatter> formatter,
    std::shared_ptr<ModelLease> lease, KeepAliveMode keepalive, ApiFlavor flavor,
    std::function<void(const GenerationRelay*, const RelayStats&)> on_done, OutputPlan plan) {
  std::shared_ptr<GenerationRelay> r(new GenerationRelay());
  r->writer_ = std::move(writer);
  r->formatter_ = std::move(formatter);
  r->lease_ = std::move(lease);
  r->model_ = r->lease_->served();
  r->engine_ = r->model_->engine.get();
  r->keepalive_ = keepalive;
  r->flavor_ = flavor;
  r->on_done_ = std::move(on_done);
  r->plan_ = std::move(plan);
  return r;
}

MaybeError GenerationRelay::Submit(GenerationRequest request) {
  std::weak_ptr<GenerationRelay> weak = weak_from_this();
  // Set before the engine sees the request: a short one can finish, and
  // Finish release lease_, before this function returns. An abort that
  // arrives before the request is submitted is recorded and checked below.
  lease_->SetAbortHandler([weak](AbortReason reason) {
    if (auto self = weak.lock()) self->Abort(reason);
  });
  // The engine holds the callback (and so this relay) until the final event.
  // The executor only hands the event over: formatting, writing and the
  // lease's release run on the connection's transport thread (in order).
  request.on_event = [self = shared_from_this()](RequestEvent ev) {
    ResponseWriter* w = self->writer_.get();
    w->Post([self, ev = std::move(ev)]() mutable { self->OnEvent(std::move(ev)); });
  };
  {
    // Held across Submit and the stream's start: an early event waits for it.
    std::lock_guard<std::mutex> lock(mu_);
    choices_.resize(static_cast<size_t>(std::max(1, request.choices)));
    for (Choice& c : choices_) c.output = std::make_unique<ChoiceOutput>(plan_);
    if (abort_reason_ != AbortReason::kNone) {
      done_ = true;
      return AbortError(abort_reason_, false);
    }
    Result<uint64_t> id = engine_->Submit(std::move(request));
    if (!id.ok()) {
      done_ = true;
      return SubmitError(id.status());
    }
    engine_id_ = *id;
    submitted_ = true;
    last_write_ = std::chrono::steady_clock::now();
    if (formatter_->streaming()) {
      writer_->StartStream(200, formatter_->content_type(), SseHeaders());
      // One keep-alive at once: proxies and clients see the stream is alive
      // before a long prompt is prefilled.
      writer_->Write(formatter_->KeepAlive(keepalive_));
    }
  }
  writer_->OnClose([weak] {
    if (auto self = weak.lock()) self->Cancel();
  });
  return std::nullopt;
}

void GenerationRelay::Abort(AbortReason reason) {
  uint64_t id = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (done_) return;
    abort_reason_ = reason;
    if (!submitted_) return;  // Submit sees abort_reason_ and does not submit
    id = engine_id_;
  }
  engine_->Cancel(id);
}

void GenerationRelay::Cancel() {
  uint64_t id = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!submitted_ || done_) return;
    id = engine_id_;
  }
  engine_->Cancel(id);
}

bool GenerationRelay::done() const {
  std::lock_guard<std::mutex> lock(mu_);
  return done_;
}

void GenerationRelay::Tick(std::chrono::steady_clock::time_point now) {
  std::lock_guard<std::mutex> lock(mu_);
  if (done_ || !submitted_ || !formatter_->streaming() || keepalive_ == KeepAliveMode::kOff) return;
  if (now - last_write_ < kKeepAliveInterval) return;
  writer_->Write(formatter_->KeepAlive(keepalive_));
  last_write_ = now;
}

std::vector<TokenLogprob> GenerationRelay::ConvertLogprobs(const RequestEvent& ev) const {
  std::vector<TokenLogprob> out;
  const Tokenizer& tok = *model_->tokenizer;
  auto text = [&](int32_t id) {
    const int32_t one[1] = {id};
    return tok.Decode(one, /*skip_special=*/false);
  };
  for (const SampledToken& s : ev.logprobs) {
    TokenLogprob t;
    t.token = text(s.id);
    t.logprob = s.logprob;
    for (const auto& alt : s.top) t.top.push_back({text(alt.id), alt.logprob});
    out.push_back(std::move(t));
  }
  return out;
}

void GenerationRelay::OnEvent(RequestEvent ev) {
  std::lock_guard<std::mutex> lock(mu_);
  if (done_ || ev.choice < 0 || static_cast<size_t>(ev.choice) >= choices_.size()) return;
  const int index = ev.choice;
  Choice& c = choices_[static_cast<size_t>(index)];
  if (ev.finish == FinishReason::kAbort || ev.finish == FinishReason::kError) {
    // Client gone: nothing reaches it. Otherwise (shutdown, memory pressure,
    // a failed step) it learns why; the request's other choices end too.
    c.done = true;
    engine_->Cancel(engine_id_);
    return Fail(ev.finish == FinishReason::kAbort ? AbortError(abort_reason_, tokens_sent_ > 0)
                                                  : ErrorWithStatus(500, "generation failed: " + ev.error.message()),
                FinishReasonName(ev.finish));
  }
  if (index == 0 && !c.started) {
    usage_.prompt_tokens = ev.usage.prompt_tokens;
    usage_.cached_tokens = ev.usage.cached_tokens;
  }
  std::string out;
  if (!c.started) {
    out += formatter_->Start(index, GenerationUsage{ev.usage.prompt_tokens, ev.usage.cached_tokens, 0});
    c.started = true;
    if (!first_token_at_) first_token_at_ = std::chrono::steady_clock::now();
  }
  tokens_sent_ += static_cast<int64_t>(ev.token_ids.size());
  std::vector<OutputEvent> events = c.output->Feed(ev.text);
  if (ev.finish != FinishReason::kNone) {
    for (OutputEvent& e : c.output->Finish()) events.push_back(std::move(e));
  }
  if (!events.empty() || !ev.logprobs.empty()) out += formatter_->Events(index, events, ConvertLogprobs(ev));
  c.completion_tokens = ev.usage.completion_tokens;
  if (ev.finish != FinishReason::kNone) {
    c.done = true;
    c.finish = ev.finish;
    out += formatter_->FinishChoice(index, ev.finish, ev.stop_string);
  }
  if (!out.empty() && formatter_->streaming()) {
    writer_->Write(std::move(out));
    last_write_ = std::chrono::steady_clock::now();
  }
  if (std::all_of(choices_.begin(), choices_.end(), [](const Choice& x) { return x.done; })) return Finish();
  if (writer_->pending_bytes() > kMaxPendingBytes) {
    LOG_WARN("http: a client stopped reading (" << writer_->pending_bytes()
                                                << " bytes queued): request cancelled");
    engine_->Cancel(engine_id_);
  }
}

void GenerationRelay::Fail(const ApiError& e, const char* finish) {
  done_ = true;
  // The engine is done with the request, or will be once the cancellations
  // land: the model may be evicted from now on (released before the client
  // hears back, so that what it sees next, /api/status included, reflects it).
  lease_.reset();
  if (!writer_->closed()) {
    if (formatter_->streaming()) {
      writer_->Write(formatter_->StreamError(e));
      writer_->End();
    } else {
      writer_->Send(ErrorResponse(e, flavor_));
    }
  }
  int64_t completion = 0;
  for (const Choice& c : choices_) completion += c.completion_tokens;
  if (on_done_) on_done_(this, RelayStats{usage_.prompt_tokens, usage_.cached_tokens, completion, finish, first_token_at_});
}

void GenerationRelay::Finish() {
  done_ = true;
  lease_.reset();  // as in Fail; model_ keeps the tokenizer alive
  GenerationUsage total = usage_;
  total.completion_tokens = 0;
  for (const Choice& c : choices_) total.completion_tokens += c.completion_tokens;
  std::string body = formatter_->End(total);
  if (formatter_->streaming()) {
    writer_->Write(std::move(body));
    writer_->End();
  } else {
    HttpResponse r;
    r.body = std::move(body);
    writer_->Send(std::move(r));
  }
  if (on_done_) {
    on_done_(this, RelayStats{total.prompt_tokens, total.cached_tokens, total.completion_tokens,
                              FinishReasonName(choices_[0].finish), first_token_at_});
  }
}

}  // namespace llmhost::server
