#include "engine/sequence.h"

#include <algorithm>
#include <utility>

namespace llmhost {

const char* FinishReasonName(FinishReason r) {
  switch (r) {
    case FinishReason::kNone: return "";
    case FinishReason::kStop:
    case FinishReason::kStopString: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kAbort: return "abort";
    case FinishReason::kError: return "error";
  }
  return "";
}

Sequence::Sequence(uint64_t id, GenerationRequest request, int64_t vocab, int64_t max_new,
                   const Tokenizer* tokenizer, const std::vector<int32_t>* eos, int choice)
    : id_(id),
      choice_(choice),
      req_(std::move(request)),
      max_new_(max_new),
      eos_(eos),
      tokenizer_(tokenizer),
      prompt_tokens_(static_cast<int64_t>(req_.prompt.size())),
      sampler_(req_.sampling, req_.prompt, vocab),
      stops_(req_.stop) {
  cs_.tokens = req_.prompt;
  if (req_.constraint) constraint_.emplace(*req_.constraint);
  if (tokenizer) {
    decoder_ = std::make_unique<StreamDecoder>(*tokenizer, req_.skip_special_tokens, req_.keep_special_ids);
    if (req_.reasoning_budget) reasoning_.emplace(*req_.reasoning_budget);
  }
}

bool Sequence::IsStopToken(int32_t id) const {
  if (std::find(req_.stop_token_ids.begin(), req_.stop_token_ids.end(), id) !=
      req_.stop_token_ids.end()) {
    return true;
  }
  return !req_.ignore_eos && std::find(eos_->begin(), eos_->end(), id) != eos_->end();
}

RequestEvent Sequence::NewEvent() const {
  RequestEvent ev;
  ev.request_id = id_;
  ev.choice = choice_;
  ev.usage.prompt_tokens = prompt_tokens_;
  ev.usage.cached_tokens = cached_tokens_;
  ev.usage.completion_tokens = generated_;
  return ev;
}

ConstraintTracker* Sequence::MaskJob() {
  if (!constraint_ || !forced_.empty() || generated_ >= max_new_) return nullptr;
  return &*constraint_;
}

void Sequence::Fail(RequestEvent* ev, Status error) {
  ev->finish = FinishReason::kError;
  ev->error = std::move(error);
  ev->text.clear();  // held-back text of a failed choice is not flushed
}

void Sequence::Send(RequestEvent ev) {
  if (req_.on_event) req_.on_event(std::move(ev));
}

void Sequence::Drain(RequestEvent* ev) {
  if (decoder_) ev->text += stops_.Add(decoder_->Finish());
  ev->text += stops_.Flush();
  if (stops_.stopped()) {
    ev->finish = FinishReason::kStopString;
    ev->stop_string = stops_.matched();
  }
}

std::vector<RequestEvent> Sequence::OnLogits(const float* logits) {
  std::vector<RequestEvent> events;
  if (generated_ >= max_new_) {  // max_tokens 0: the prompt ran, nothing to sample
    RequestEvent ev = NewEvent();
    ev.finish = FinishReason::kLength;
    Drain(&ev);
    finished_ = true;
    events.push_back(std::move(ev));
    return events;
  }
  std::span<const uint32_t> allowed;
  if (ConstraintTracker* t = MaskJob()) {
    t->PrepareMask();
    if (!t->mask_status().ok()) {
      RequestEvent ev = NewEvent();
      Fail(&ev, t->mask_status());
      finished_ = true;
      events.push_back(std::move(ev));
      return events;
    }
    allowed = t->mask();
  }
  SampledToken tok;
  if (forced_.empty()) {
    tok = sampler_.Sample(logits, allowed);
  } else {
    tok = sampler_.Force(logits, forced_.front());
    forced_.pop_front();
  }
  return OnDrawn(std::move(tok));
}

bool Sequence::PlainDraw() const { return generated_ < max_new_ && !constraint_ && forced_.empty(); }

SampledToken Sequence::Draw(const float* logits) { return sampler_.Sample(logits, {}); }

bool Sequence::Pickable() const { return PlainDraw() && sampler_.pickable(); }

RowPick Sequence::Pick() { return sampler_.Pick(); }

SampledToken Sequence::TakePicked(int32_t id) { return sampler_.TakePicked(id); }

std::vector<RequestEvent> Sequence::OnDrawn(SampledToken tok) {
  std::vector<RequestEvent> events;
  events.push_back(Emit(std::move(tok), req_.sampling.logprobs || req_.sampling.top_logprobs > 0));
  if (!finished_) FastForward(&events);
  return events;
}

void Sequence::FastForward(std::vector<RequestEvent>* events) {
  if (!constraint_ || !tokenizer_ || !forced_.empty() || !req_.constraint->fast_forward) return;
  std::vector<int32_t> ids = constraint_->ForcedTokens(*tokenizer_);
  if (req_.sampling.logprobs || req_.sampling.top_logprobs > 0) {
    // One a step, through the forward pass: their logprobs are the model's.
    forced_.assign(ids.begin(), ids.end());
    return;
  }
  for (int32_t id : ids) {
    sampler_.Accept(id);
    SampledToken tok;
    tok.id = id;
    events->push_back(Emit(std::move(tok), /*logprobs=*/false));
    if (finished_) break;
  }
}

RequestEvent Sequence::Emit(SampledToken tok, bool logprobs) {
  const int32_t id = tok.id;
  if (++generated_ == 1) first_token_ = std::chrono::steady_clock::now();
  cs_.tokens.push_back(id);
  RequestEvent ev = NewEvent();
  ev.token_ids.push_back(id);
  if (logprobs) ev.logprobs.push_back(std::move(tok));
  if (constraint_) {
    if (Status st = constraint_->AcceptToken(id); !st.ok()) {
      Fail(&ev, std::move(st));
      finished_ = true;
      return ev;
    }
  }
  if (IsStopToken(id)) {
    // The stop id's text is not part of the output.
    Drain(&ev);
    if (ev.finish == FinishReason::kNone) {
      ev.finish = FinishReason::kStop;
      ev.stop_token = id;
    }
  } else {
    if (decoder_) {
      const std::string piece = decoder_->Add(id);
      if (reasoning_) {
        for (int32_t f : reasoning_->OnToken(piece)) forced_.push_back(f);
      }
      if (constraint_) {
        if (Status st = constraint_->OnText(piece); !st.ok()) {
          Fail(&ev, std::move(st));
          finished_ = true;
          return ev;
        }
      }
      ev.text = stops_.Add(piece);
    }
    if (stops_.stopped()) {
      ev.finish = FinishReason::kStopString;
      ev.stop_string = stops_.matched();
    } else if (constraint_ && constraint_->terminated()) {
      // The grammar is complete and nothing may follow: as at EOS.
      Drain(&ev);
      if (ev.finish == FinishReason::kNone) ev.finish = FinishReason::kStop;
    } else if (generated_ >= max_new_) {
      ev.finish = FinishReason::kLength;
      Drain(&ev);
    }
  }
  finished_ = ev.finish != FinishReason::kNone;
  return ev;
}

void Sequence::Finish(FinishReason reason, Status error) {
  if (finished_) return;
  for (auto& f : forks_) f->Finish(reason, error);
  forks_.clear();
  RequestEvent ev = NewEvent();
  ev.finish = reason;
  ev.error = std::move(error);
  finished_ = true;
  Send(std::move(ev));
}

}  // namespace llmhost
