#include "engine/scheduler.h"

#include <algorithm>
#include <limits>
#include <string>

#include "engine/forced_tokens.h"
#include "util/utf8.h"

namespace llmhost {
namespace {

std::string N(int64_t v) { return std::to_string(v); }

}  // namespace

Scheduler::Scheduler(std::unique_ptr<StepModel> model, std::unique_ptr<KvCache> cache,
                     const Sha256Digest& fingerprint, const Tokenizer* tokenizer,
                     SchedulerOptions options)
    : model_(std::move(model)),
      cache_(std::move(cache)),
      prefix_(std::make_unique<PrefixCache>(cache_.get(), fingerprint)),
      tokenizer_(tokenizer),
      options_(std::move(options)),
      vocab_(model_->vocab_size()) {
  options_.max_running = std::max(options_.max_running, 1);
  options_.prefill_chunk_tokens = std::max<int64_t>(options_.prefill_chunk_tokens, 0);
  out_.reused = true;
  if (options_.prefix_caching && options_.block_store) {
    prefix_->AttachStore(options_.block_store, options_.model_id, options_.store_fingerprint);
  }
  prefix_->set_grower([this](int64_t blocks) { return EnsureFree(blocks); });
  const int64_t pool = static_cast<int64_t>(cache_->allocator().max_blocks()) * cache_->block_size();
  context_ = options_.max_context > 0 ? std::min(options_.max_context, pool) : pool;
}

Scheduler::~Scheduler() { AbortAll(); }

int64_t Scheduler::CachedPrefixTokens(std::span<const int32_t> prompt) const {
  if (!options_.prefix_caching || prompt.empty()) return 0;
  const int64_t n = static_cast<int64_t>(prompt.size());
  const int64_t cached = prefix_->CachedPrefixBlocks(prompt) * cache_->block_size();
  return std::min(cached, n - 1);  // the last prompt token always runs
}

Status Scheduler::Validate(const GenerationRequest& r) const {
  const int64_t n = static_cast<int64_t>(r.prompt.size());
  if (n == 0) return Status::InvalidArgument("the prompt has no tokens");
  for (size_t i = 0; i < r.prompt.size(); ++i) {
    if (r.prompt[i] < 0 || r.prompt[i] >= vocab_) {
      return Status::InvalidArgument("prompt token " + N(static_cast<int64_t>(i)) + " is id " +
                                     N(r.prompt[i]) + ", outside the vocabulary [0, " + N(vocab_) + ")");
    }
  }
  if (n > context_) {
    return Status::InvalidArgument("Prompt too long: " + N(n) +
                                   " tokens exceeds max context window of " + N(context_) + " tokens");
  }
  if (n == context_) {
    return Status::InvalidArgument("Prompt too long: " + N(n) + " tokens fill the context window of " +
                                   N(context_) + " tokens, leaving no room to generate");
  }
  if (r.max_tokens && *r.max_tokens < 0) {
    return Status::InvalidArgument("max_tokens must be >= 0, got " + N(*r.max_tokens));
  }
  if (r.choices < 1 || r.choices > kMaxChoices) {
    return Status::InvalidArgument("choices (n) must be between 1 and " + N(kMaxChoices) + ", got " +
                                   N(r.choices));
  }
  RETURN_IF_ERROR(ValidateSamplingParams(r.sampling, vocab_));
  if (!r.stop.empty() && !tokenizer_) {
    return Status::InvalidArgument("stop strings need a tokenizer; this engine has none");
  }
  if (r.stop.size() > kMaxStopStrings) {
    return Status::InvalidArgument("stop: at most " + N(kMaxStopStrings) + " stop strings, got " +
                                   N(static_cast<int64_t>(r.stop.size())));
  }
  for (const std::string& s : r.stop) {
    if (s.empty()) return Status::InvalidArgument("stop: a stop string is empty");
    if (s.size() > kMaxStopStringBytes) {
      return Status::InvalidArgument("stop: a stop string is longer than " + N(kMaxStopStringBytes) +
                                     " bytes");
    }
    if (!utf8::IsValid(s)) return Status::InvalidArgument("stop: a stop string is not valid UTF-8");
  }
  if (r.reasoning_budget) {
    const ReasoningBudget& b = *r.reasoning_budget;
    if (!tokenizer_) return Status::InvalidArgument("a reasoning budget needs a tokenizer; this engine has none");
    if (b.budget_tokens < 1) return Status::InvalidArgument("reasoning budget: budget_tokens must be >= 1");
    if (b.close_ids.empty() || b.open.empty() || b.close.empty()) {
      return Status::InvalidArgument("reasoning budget: the think block's markers and close ids are required");
    }
    for (int32_t id : b.close_ids) {
      if (id < 0 || id >= vocab_) {
        return Status::InvalidArgument("reasoning budget: close id " + N(id) + " outside the vocabulary");
      }
    }
  }
  if (r.constraint) {
    const OutputConstraint& c = *r.constraint;
    if (!c.grammar || !c.vocab) return Status::InvalidArgument("output constraint: no grammar or vocabulary");
    if (static_cast<int64_t>(c.vocab->size()) > vocab_) {
      return Status::InvalidArgument("output constraint: its vocabulary has " + N(static_cast<int64_t>(c.vocab->size())) +
                                     " tokens, more than the model's " + N(vocab_));
    }
    if (c.think) {
      if (!tokenizer_) return Status::InvalidArgument("output constraint: a think block needs a tokenizer; this engine has none");
      if (c.think->close.empty()) return Status::InvalidArgument("output constraint: the think block's close marker is required");
    }
  }
  if (r.stop_token_ids.size() > kMaxStopTokenIds) {
    return Status::InvalidArgument("stop_token_ids: at most " + N(kMaxStopTokenIds) + " ids");
  }
  for (int32_t id : r.stop_token_ids) {
    if (id < 0 || id >= vocab_) {
      return Status::InvalidArgument("stop_token_ids: id " + N(id) + " outside the vocabulary [0, " +
                                     N(vocab_) + ")");
    }
  }
  return Status::OK();
}

void Scheduler::Enqueue(uint64_t id, GenerationRequest request, std::chrono::steady_clock::time_point arrived) {
  const int64_t room = context_ - static_cast<int64_t>(request.prompt.size());
  const int64_t max_new = request.max_tokens ? std::min(*request.max_tokens, room) : room;
  // Choices 1.. wait inside choice 0 until its prompt is in (Step forks them).
  std::vector<std::unique_ptr<Sequence>> forks;
  for (int c = 1; c < request.choices; ++c) {
    GenerationRequest r = request;
    if (r.sampling.seed) r.sampling.seed = *r.sampling.seed + static_cast<uint64_t>(c);
    forks.push_back(std::make_unique<Sequence>(id, std::move(r), vocab_, max_new, tokenizer_,
                                               &options_.eos_token_ids, c));
    forks.back()->set_arrived(arrived);
  }
  auto s = std::make_unique<Sequence>(id, std::move(request), vocab_, max_new, tokenizer_,
                                      &options_.eos_token_ids);
  s->set_arrived(arrived);
  s->set_forks(std::move(forks));
  auto at = std::find_if(waiting_.begin(), waiting_.end(),
                         [id](const std::unique_ptr<Sequence>& w) { return w->id() > id; });
  waiting_.insert(at, std::move(s));
}

void Scheduler::ReleaseBlocks(Sequence* s) { prefix_->Release(&s->cs()); }

bool Scheduler::EnsureFree(int64_t blocks) {
  BlockAllocator& a = cache_->allocator();
  const int64_t missing = blocks - a.free_blocks();
  if (missing <= 0) return true;
  const int64_t room = a.max_blocks() - a.total_blocks();
  if (room < missing) return false;  // beyond the reservation: only releases help
  // Grow by at least kv_grow_blocks, but settle for what is missing when
  // the larger claim is refused; whole chunks either way.
  const int64_t chunk = cache_->blocks_per_chunk();
  auto rounded = [&](int64_t n) { return std::min(room, (n + chunk - 1) / chunk * chunk); };
  for (int64_t want : {rounded(std::max(missing, options_.kv_grow_blocks)), rounded(missing)}) {
    const uint64_t bytes = static_cast<uint64_t>(want) * cache_->block_bytes();
    if (options_.kv_budget && !options_.kv_budget->Claim(bytes)) continue;
    Result<int64_t> grown = cache_->Grow(want);
    const int64_t got = grown.ok() ? *grown : 0;
    if (options_.kv_budget && got < want) {
      options_.kv_budget->Return(static_cast<uint64_t>(want - got) * cache_->block_bytes());
    }
    if (a.free_blocks() >= blocks) return true;
  }
  return false;
}

uint64_t Scheduler::ReleaseKv() {
  const int64_t released = cache_->ShrinkTo(std::max<int64_t>(options_.kv_floor_blocks, 1));
  const uint64_t bytes = static_cast<uint64_t>(released) * cache_->block_bytes();
  if (bytes > 0 && options_.kv_budget) options_.kv_budget->Return(bytes);
  return bytes;
}

void Scheduler::Cancel(uint64_t id) {
  // Every choice of the request: waiting (choice 0 with its unforked
  // choices, or preempted ones) and running.
  std::vector<std::unique_ptr<Sequence>> gone;
  auto take = [&](auto& list) {
    for (auto it = list.begin(); it != list.end();) {
      if ((*it)->id() == id) {
        gone.push_back(std::move(*it));
        it = list.erase(it);
      } else {
        ++it;
      }
    }
  };
  take(waiting_);
  take(running_);
  for (auto& s : gone) ReleaseBlocks(s.get());
  for (auto& s : gone) {
    ++counters_.aborted;
    s->Finish(FinishReason::kAbort);
  }
}

void Scheduler::AbortAll() {
  std::vector<std::unique_ptr<Sequence>> all;
  for (auto& s : running_) all.push_back(std::move(s));
  for (auto& s : waiting_) all.push_back(std::move(s));
  running_.clear();
  waiting_.clear();
  for (auto& s : all) ReleaseBlocks(s.get());
  for (auto& s : all) {
    ++counters_.aborted;
    s->Finish(FinishReason::kAbort);
  }
}

int64_t Scheduler::ReservedForPrefill() const {
  int64_t blocks = 0;
  for (const auto& r : running_) {
    const CachedSequence& cs = r->cs();
    const int64_t target = std::min<int64_t>(static_cast<int64_t>(cs.tokens.size()) + 1, context_);
    blocks += cache_->BlocksNeeded(cs.kv, target);
  }
  return blocks;
}

bool Scheduler::waiting_on_restores() const {
  if (!running_.empty() || waiting_.empty()) return false;
  for (const auto& w : waiting_) {
    if (!w->cs().restoring() || prefix_->RestoreDone(w->cs())) return false;
  }
  return true;
}

void Scheduler::Admit() {
  admit_blocked_.reset();
  prefix_->ReapRestores();
  prefix_->ReapSaves();
  size_t i = 0;
  while (i < waiting_.size() && static_cast<int>(running_.size()) < options_.max_running) {
    Sequence* s = waiting_[i].get();
    CachedSequence& cs = s->cs();
    if (options_.prefix_caching) {
      // A restore in flight holds only its own request back.
      if (cs.restoring() && !prefix_->RestoreDone(cs)) {
        ++i;
        continue;
      }
      if (cs.restoring()) {
        prefix_->FinishRestore(&cs);  // may start the next part of the run
      } else {
        prefix_->Acquire(&cs, RestoreMode::kBackground);
      }
      if (cs.restoring()) {
        ++i;
        continue;
      }
    }
    // The whole rest of the prompt and the first output position must fit
    // beside what the running requests still need: a request, once admitted,
    // is not starved halfway through its prompt by a newer one.
    // Choices join the batch when they fork: the group fits whole (or runs alone).
    const int64_t group = 1 + static_cast<int64_t>(s->forks());
    if (group > 1 && !running_.empty() &&
        static_cast<int64_t>(running_.size()) + group > options_.max_running) {
      break;
    }
    const int64_t target = std::min<int64_t>(static_cast<int64_t>(cs.tokens.size()) + 1, context_);
    // Each fork copies the prompt's last block when it first writes there.
    const int64_t need = cache_->BlocksNeeded(cs.kv, target) + (group - 1);
    if (!EnsureFree(need + ReservedForPrefill())) {
      ReleaseBlocks(s);  // restored blocks stay indexed: the next try finds them
      admit_blocked_ = s->id();
      break;
    }
    if (!s->admitted_once()) {
      if (options_.prefix_caching) prefix_->RecordLookup(cs);
      counters_.prompt_tokens += static_cast<uint64_t>(s->prompt_tokens());
      counters_.cached_tokens += static_cast<uint64_t>(cs.kv.length);
    }
    s->SetAdmitted(cs.kv.length);
    ++counters_.admitted;
    std::unique_ptr<Sequence> owned = std::move(waiting_[i]);
    waiting_.erase(waiting_.begin() + static_cast<ptrdiff_t>(i));
    const uint64_t id = owned->id();
    auto at = std::find_if(running_.begin(), running_.end(),
                           [id](const std::unique_ptr<Sequence>& r) { return r->id() > id; });
    running_.insert(at, std::move(owned));
  }
}

std::vector<Scheduler::Planned> Scheduler::Plan() const {
  std::vector<Planned> plan;
  int64_t budget = options_.prefill_chunk_tokens > 0 ? options_.prefill_chunk_tokens
                                                     : std::numeric_limits<int64_t>::max();
  for (const auto& r : running_) {
    const int64_t pending = r->pending();
    if (pending <= 0) continue;  // cannot happen: a running request always has its next input
    // A decode: the sampled token, and the tokens fast-forward appended
    // after it (at most kMaxForcedTokens), outside the prefill budget.
    const bool decoding = r->generated() > 0 && r->cs().kv.length >= r->prompt_tokens();
    if (pending == 1 || (decoding && pending <= 1 + static_cast<int64_t>(kMaxForcedTokens))) {
      plan.push_back({r.get(), pending, true, true});
      continue;
    }
    if (budget <= 0) continue;
    const int64_t n = std::min(pending, budget);
    budget -= n;
    plan.push_back({r.get(), n, n == pending, false});
  }
  return plan;
}

int64_t Scheduler::BlocksFor(const std::vector<Planned>& plan) const {
  int64_t blocks = 0;
  for (const Planned& p : plan) blocks += cache_->BlocksNeeded(p.seq->cs().kv, p.seq->cs().kv.length + p.n);
  return blocks;
}

void Scheduler::Preempt(size_t i) {
  std::unique_ptr<Sequence> s = std::move(running_[i]);
  running_.erase(running_.begin() + static_cast<ptrdiff_t>(i));
  ReleaseBlocks(s.get());
  ++counters_.preemptions;
  const uint64_t id = s->id();
  auto at = std::find_if(waiting_.begin(), waiting_.end(),
                         [id](const std::unique_ptr<Sequence>& w) { return w->id() > id; });
  waiting_.insert(at, std::move(s));
}

void Scheduler::Step() {
  Admit();
  stalled_ = running_.empty() && admit_blocked_.has_value();  // waiting for KV memory only
  if (running_.empty()) {
    if (!stalled_) {
      stalled_since_.reset();
      return;
    }
    const auto now = std::chrono::steady_clock::now();
    if (!stalled_since_) stalled_since_ = now;
    if (now - *stalled_since_ >= std::chrono::duration<double>(options_.kv_wait_seconds)) {
      auto it = std::find_if(waiting_.begin(), waiting_.end(),
                             [&](const std::unique_ptr<Sequence>& w) { return w->id() == *admit_blocked_; });
      std::unique_ptr<Sequence> s = std::move(*it);
      waiting_.erase(it);
      ReleaseBlocks(s.get());
      ++counters_.failed;
      s->Finish(FinishReason::kError, Status::ResourceExhausted(
                                          "the KV cache could not get the memory for this request's prompt"));
      stalled_since_.reset();
    }
    return;
  }
  std::vector<Planned> plan = Plan();
  while (!EnsureFree(BlocksFor(plan))) {
    if (running_.size() == 1) {
      // Alone: the cache cannot grow now. Wait for memory (a claim the pool
      // grants later), but not forever; a cache that cannot grow at all
      // cannot hold this request.
      const auto now = std::chrono::steady_clock::now();
      if (!stalled_since_) stalled_since_ = now;
      const bool can_grow = cache_->allocator().total_blocks() < cache_->allocator().max_blocks();
      if (can_grow && now - *stalled_since_ < std::chrono::duration<double>(options_.kv_wait_seconds)) {
        stalled_ = true;
        return;
      }
      std::unique_ptr<Sequence> s = std::move(running_.front());
      running_.clear();
      ReleaseBlocks(s.get());
      ++counters_.failed;
      s->Finish(FinishReason::kError,
                Status::ResourceExhausted(can_grow ? "the KV cache could not get the memory for this request"
                                                   : "the KV cache cannot hold this request"));
      stalled_since_.reset();
      return;
    }
    Preempt(running_.size() - 1);  // the newest arrival
    plan = Plan();
  }
  stalled_ = false;
  stalled_since_.reset();

  std::vector<ForwardItem> items;
  items.reserve(plan.size());
  for (const Planned& p : plan) {
    const CachedSequence& cs = p.seq->cs();
    items.push_back({&p.seq->cs().kv,
                     std::span<const int32_t>(cs.tokens).subspan(static_cast<size_t>(cs.kv.length),
                                                                 static_cast<size_t>(p.n)),
                     p.sample ? LogitsRows::kLast : LogitsRows::kNone, p.seq->prompt_tokens()});
  }
  ++counters_.steps;
  std::vector<ConstraintTracker*> masks;
  for (const Planned& p : plan) {
    if (!p.sample) continue;
    if (ConstraintTracker* t = p.seq->MaskJob()) masks.push_back(t);
  }
  masks_.Start(std::move(masks));
  PlanPicks(plan);
  const Status st = model_->Forward(items, *cache_, &out_);
  masks_.Wait();
  if (!st.ok()) {
    // Forward changed no sequence; end the requests of this step.
    for (const Planned& p : plan) {
      ReleaseBlocks(p.seq);
      ++counters_.failed;
      p.seq->Finish(FinishReason::kError, st);
    }
    running_.erase(std::remove_if(running_.begin(), running_.end(),
                                  [](const std::unique_ptr<Sequence>& r) { return r->finished(); }),
                   running_.end());
    return;
  }
  DrawPlainRows(plan);
  std::vector<std::unique_ptr<Sequence>> forked;
  for (size_t i = 0; i < plan.size(); ++i) {
    Sequence* s = plan[i].seq;
    if (!plan[i].decode || s->generated() == 0) counters_.prefill_tokens += static_cast<uint64_t>(plan[i].n);
    if (options_.prefix_caching) prefix_->Publish(&s->cs());
    if (!plan[i].sample) continue;
    if (s->forks() > 0) {
      // The prompt is in: the other choices share its blocks and sample
      // this same row with their own generators.
      for (auto& f : s->TakeForks()) {
        Fork(*s, f.get());
        std::vector<RequestEvent> events = f->OnLogits(out_.Row(i, 0));
        counters_.generated_tokens += static_cast<uint64_t>(f->generated());
        if (f->finished()) {
          ReleaseBlocks(f.get());
          ++(events.back().finish == FinishReason::kError ? counters_.failed : counters_.finished);
        }
        for (RequestEvent& ev : events) f->Send(std::move(ev));
        if (!f->finished()) forked.push_back(std::move(f));
      }
    }
    const int64_t before = s->generated();
    std::vector<RequestEvent> events =
        drawn_[i].has_value() ? s->OnDrawn(*std::move(drawn_[i])) : s->OnLogits(out_.Row(i, 0));
    counters_.generated_tokens += static_cast<uint64_t>(s->generated() - before);
    if (s->finished()) {
      ReleaseBlocks(s);
      ++(events.back().finish == FinishReason::kError ? counters_.failed : counters_.finished);
    }
    for (RequestEvent& ev : events) s->Send(std::move(ev));
  }
  running_.erase(std::remove_if(running_.begin(), running_.end(),
                                [](const std::unique_ptr<Sequence>& r) { return r->finished(); }),
                 running_.end());
  for (auto& f : forked) {
    const uint64_t id = f->id();
    auto at = std::find_if(running_.begin(), running_.end(),
                           [id](const std::unique_ptr<Sequence>& r) { return r->id() > id; });
    running_.insert(at, std::move(f));
  }
}

void Scheduler::PlanPicks(const std::vector<Planned>& plan) {
  out_.picks.clear();
  bool any = false;
  for (const Planned& p : plan) {
    if (!p.sample) continue;  // no logits row
    if (p.seq->forks() == 0 && p.seq->Pickable()) {
      out_.picks.push_back(p.seq->Pick());
      any = true;
    } else {
      out_.picks.push_back(std::nullopt);
    }
  }
  if (!any) out_.picks.clear();
}

void Scheduler::DrawPlainRows(const std::vector<Planned>& plan) {
  drawn_.assign(plan.size(), std::nullopt);
  for (size_t i = 0; i < plan.size() && !out_.picked.empty(); ++i) {
    if (!plan[i].sample) continue;
    const int32_t id = out_.picked[static_cast<size_t>(out_.first_row[i])];
    if (id < 0) continue;  // no pick: the row's logits came back
    drawn_[i] = plan[i].seq->TakePicked(id);
    ++counters_.picked_rows;
  }
  if (!options_.sample_pool || options_.sample_pool->size() < 2) return;
  // Rows whose choices fork now sample in the loop: the forks share the row.
  std::vector<size_t> rows;
  for (size_t i = 0; i < plan.size(); ++i) {
    if (plan[i].sample && !drawn_[i] && plan[i].seq->forks() == 0 && plan[i].seq->PlainDraw()) rows.push_back(i);
  }
  if (rows.size() < 2) return;
  counters_.pooled_draws += rows.size();
  options_.sample_pool->ParallelFor(static_cast<int64_t>(rows.size()), 1, [&](int64_t b, int64_t e) {
    for (int64_t j = b; j < e; ++j) {
      const size_t i = rows[static_cast<size_t>(j)];
      drawn_[i] = plan[i].seq->Draw(out_.Row(i, 0));
    }
  });
}

void Scheduler::Fork(Sequence& from, Sequence* to) {
  CachedSequence& src = from.cs();
  CachedSequence& dst = to->cs();
  dst.kv = cache_->Fork(src.kv, src.kv.length);
  dst.tokens = src.tokens;
  dst.keys = src.keys;
  dst.published = src.published;
  to->SetAdmitted(src.kv.length);
  ++counters_.admitted;
  counters_.prompt_tokens += static_cast<uint64_t>(to->prompt_tokens());
  counters_.cached_tokens += static_cast<uint64_t>(src.kv.length);
}

}  // namespace llmhost
