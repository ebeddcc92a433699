#include "grammar/matcher.h"

#include <algorithm>

#include "grammar/compiled_grammar.h"
#include "grammar/mask_cache.h"
#include "grammar/parse_stacks.h"
#include "grammar/token_trie.h"
#include "grammar/token_walk.h"

namespace llmhost::grammar {
namespace {

// Longest run ForcedBytes reports (a grammar may force a long literal).
constexpr size_t kMaxForcedBytes = 4096;
// Callers' states a cached context of escape tokens holds at most.
constexpr size_t kMaxCallerDepth = 4;

void SortUnique(std::vector<int32_t>* v) {
  std::sort(v->begin(), v->end());
  v->erase(std::unique(v->begin(), v->end()), v->end());
}

}  // namespace

struct Matcher::State {
  std::shared_ptr<const CompiledGrammar> g;
  StackArena arena;
  std::vector<int32_t> tops;  // closed, sorted
  bool can_end = false;
  bool terminated = false;
  Status broken;  // a failed first step: every call reports it

  // Follows `bytes` from `from`; false when no stack survives them.
  Result<bool> RunBytes(std::span<const int32_t> from, std::string_view bytes, std::vector<int32_t>* tops_out,
                        bool* can_end_out) {
    StackStepper stepper(*g, &arena);
    std::vector<int32_t> cur(from.begin(), from.end()), raw, next;
    bool end = can_end;
    for (char c : bytes) {
      raw.clear();
      next.clear();
      stepper.StepByte(cur, static_cast<uint8_t>(c), &raw);
      CloseResult r;
      RETURN_IF_ERROR(stepper.Close(raw, &next, &r));
      if (next.empty() && !r.can_end) return false;
      cur.swap(next);
      end = r.can_end;
    }
    SortUnique(&cur);
    *tops_out = std::move(cur);
    *can_end_out = end;
    return true;
  }

  // Walks the subtrees of `entry`'s escapes whose first byte the frames
  // `below` (closed) can take, setting the tokens they allow in `mask`.
  Status WalkEscapes(const MaskEntry& entry, std::span<const int32_t> below, std::span<uint32_t> mask, bool* escaped) {
    std::array<uint64_t, 4> next_bytes{};
    for (int32_t b : below)
      for (int w = 0; w < 4; ++w) next_bytes[w] |= g->byte_set(arena.frame(b).state)[w];
    const auto& escapes = entry.escapes;
    for (int w = 0; w < 4; ++w) {
      for (uint64_t bits = next_bytes[w]; bits != 0; bits &= bits - 1) {
        uint8_t byte = static_cast<uint8_t>(w * 64 + __builtin_ctzll(bits));
        auto it = std::lower_bound(escapes.begin(), escapes.end(), std::pair<uint8_t, int32_t>{byte, -1});
        for (; it != escapes.end() && it->first == byte; ++it)
          RETURN_IF_ERROR(WalkSubtree(*g, &arena, below, it->second, mask, escaped));
      }
    }
    return Status::OK();
  }

  // The tokens `entry`'s escapes allow through the context (MaskCache::
  // CallerTokens: the callers' states over kOutside, or over kBottom where
  // the context ends with it). Leaves the arena as it was.
  Result<MaskCache::CallerTokens> CallerTokens(const MaskEntry& entry, const std::vector<int32_t>& context) {
    size_t mark = arena.size();
    bool to_bottom = context.back() == kBottom;
    int32_t frame = to_bottom ? kBottom : kOutside;
    for (size_t i = context.size() - (to_bottom ? 1 : 0); i-- > 1;) frame = arena.Intern(context[i], frame);
    StackStepper stepper(*g, &arena);
    std::vector<int32_t> raw = {frame}, below;
    CloseResult closed;
    Status st = stepper.Close(raw, &below, &closed);
    bool escaped = closed.escaped;
    std::vector<uint32_t> scratch;
    if (st.ok() && !escaped) {
      scratch.assign(MaskWords(g->vocab().size()), 0u);
      st = WalkEscapes(entry, below, scratch, &escaped);
    }
    arena.Truncate(mark);
    RETURN_IF_ERROR(st);
    MaskCache::CallerTokens out;
    out.valid = !escaped;
    if (out.valid)
      for (size_t w = 0; w < scratch.size(); ++w)
        for (uint32_t bits = scratch[w]; bits != 0; bits &= bits - 1)
          out.ids.push_back(static_cast<int32_t>(w * 32 + __builtin_ctz(bits)));
    return out;
  }

  // Adds the tokens `entry`'s escapes allow under `top`'s callers from the
  // cache (computing what it lacks) where a context of at most
  // kMaxCallerDepth callers decides them; false where none does.
  Result<bool> AddCallerTokens(const MaskEntry& entry, StackArena::Frame top, std::span<uint32_t> mask) {
    MaskCache& cache = g->cache();
    std::vector<int32_t> context = {top.state};
    for (int32_t f = top.parent; context.size() <= kMaxCallerDepth;) {
      context.push_back(arena.frame(f).state);
      f = arena.frame(f).parent;
      if (f == kBottom) context.push_back(kBottom);
      std::shared_ptr<const MaskCache::CallerTokens> known = cache.FindCallerTokens(context);
      if (known == nullptr) {
        ASSIGN_OR_RETURN(MaskCache::CallerTokens tokens, CallerTokens(entry, context));
        known = cache.PutCallerTokens(context, std::move(tokens));
      }
      if (known->valid) {
        for (int32_t id : known->ids) mask[static_cast<size_t>(id) >> 5] |= 1u << (id & 31);
        return true;
      }
      if (f < 0) break;
    }
    return false;
  }

  // Rebuilds the arena with only the frames the tops reach, so that it
  // stays small (and copies cheap) over a long generation.
  void Compact() {
    StackArena fresh;
    std::vector<int32_t> remap(arena.size(), -1), chain;
    for (int32_t& top : tops) {
      chain.clear();
      for (int32_t f = top; f >= 0 && remap[f] < 0; f = arena.frame(f).parent) chain.push_back(f);
      for (size_t i = chain.size(); i-- > 0;) {
        const StackArena::Frame& fr = arena.frame(chain[i]);
        int32_t parent = fr.parent < 0 ? fr.parent : remap[fr.parent];
        remap[chain[i]] = fresh.Intern(fr.state, parent);
      }
      top = remap[top];
    }
    SortUnique(&tops);
    arena = std::move(fresh);
  }
};

Matcher::Matcher(std::shared_ptr<const CompiledGrammar> grammar) : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.g = std::move(grammar);
  StackStepper stepper(*s.g, &s.arena);
  std::vector<int32_t> raw = {s.arena.Intern(s.g->start(), kBottom)};
  CloseResult r;
  s.broken = stepper.Close(raw, &s.tops, &r);
  s.can_end = r.can_end;
  SortUnique(&s.tops);
}

Matcher::Matcher(const Matcher& other) : state_(std::make_unique<State>(*other.state_)) {}
Matcher& Matcher::operator=(const Matcher& other) {
  if (this != &other) state_ = std::make_unique<State>(*other.state_);
  return *this;
}
Matcher::Matcher(Matcher&&) noexcept = default;
Matcher& Matcher::operator=(Matcher&&) noexcept = default;
Matcher::~Matcher() = default;

const CompiledGrammar& Matcher::grammar() const { return *state_->g; }

Status Matcher::FillNextTokenMask(std::span<uint32_t> mask) {
  State& s = *state_;
  RETURN_IF_ERROR(s.broken);
  const TokenVocab& vocab = s.g->vocab();
  if (mask.size() < MaskWords(vocab.size()))
    return Status::InvalidArgument("grammar: mask has " + std::to_string(mask.size()) + " words, the vocabulary needs " +
                                   std::to_string(MaskWords(vocab.size())));
  std::fill(mask.begin(), mask.end(), 0u);
  if (s.terminated) return Status::InvalidArgument("grammar: the matcher has terminated");
  MaskCache& cache = s.g->cache();

  // Each top contributes its state's cached sets; where its rule can finish
  // inside a token, the frames below (closed from its parent) walk the
  // subtrees under that point whose first byte they can take: once per
  // context of up to kMaxCallerDepth callers' states where the frames below
  // them never matter, else on the real stacks at every mask.
  size_t mark = s.arena.size();
  StackStepper stepper(*s.g, &s.arena);
  std::vector<int32_t> below, raw;
  Status status;
  for (int32_t f : s.tops) {
    StackArena::Frame frame = s.arena.frame(f);
    Result<const MaskEntry*> entry = cache.Get(*s.g, frame.state);
    if (!entry.ok()) {
      status = entry.status();
      break;
    }
    (*entry)->AddAccepted(mask, cache.trie_tokens());
    for (const CompiledGrammar::TokenEdge& e : s.g->token_edges(frame.state)) mask[e.token >> 5] |= 1u << (e.token & 31);
    if ((*entry)->escapes.empty() || frame.parent < 0) continue;
    Result<bool> done = s.AddCallerTokens(**entry, frame, mask);
    if (!done.ok()) {
      status = done.status();
      break;
    }
    if (*done) continue;
    below.clear();
    raw.assign(1, frame.parent);
    CloseResult closed;
    status = stepper.Close(raw, &below, &closed);
    if (!status.ok()) break;
    status = s.WalkEscapes(**entry, below, mask, nullptr);
    if (!status.ok()) break;
  }
  s.arena.Truncate(mark);
  RETURN_IF_ERROR(status);
  if (s.can_end)
    for (TokenId id : vocab.eos_ids()) mask[id >> 5] |= 1u << (id & 31);
  for (uint32_t w : mask)
    if (w != 0) return Status::OK();
  return Status::InvalidArgument("grammar: no token of the vocabulary can continue the text here");
}

Status Matcher::AcceptToken(TokenId id) {
  State& s = *state_;
  RETURN_IF_ERROR(s.broken);
  const TokenVocab& vocab = s.g->vocab();
  if (s.terminated) return Status::InvalidArgument("grammar: the matcher has terminated");
  if (id < 0 || static_cast<size_t>(id) >= vocab.size())
    return Status::InvalidArgument("grammar: token " + std::to_string(id) + " is not in the vocabulary");
  size_t mark = s.arena.size();
  StackStepper stepper(*s.g, &s.arena);
  std::vector<int32_t> raw, tops;
  CloseResult by_token;
  stepper.StepToken(s.tops, id, &raw);
  Status st = stepper.Close(raw, &tops, &by_token);
  bool can_end = by_token.can_end;
  std::string_view bytes = vocab.bytes(id);
  if (st.ok() && !bytes.empty() && !vocab.is_special(id) && !vocab.is_eos(id)) {
    std::vector<int32_t> by_bytes;
    bool bytes_end = false;
    Result<bool> ok = s.RunBytes(s.tops, bytes, &by_bytes, &bytes_end);
    if (!ok.ok()) st = ok.status();
    else if (*ok) {
      tops.insert(tops.end(), by_bytes.begin(), by_bytes.end());
      can_end = can_end || bytes_end;
    }
  }
  if (!st.ok()) {
    s.arena.Truncate(mark);
    return st;
  }
  if (tops.empty() && !can_end) {
    s.arena.Truncate(mark);
    if (vocab.is_eos(id) && s.can_end) {
      s.terminated = true;
      return Status::OK();
    }
    return Status::InvalidArgument("grammar: token " + std::to_string(id) + " is not allowed here");
  }
  SortUnique(&tops);
  s.tops = std::move(tops);
  s.can_end = can_end;
  s.Compact();
  return Status::OK();
}

bool Matcher::AcceptBytes(std::string_view bytes) {
  State& s = *state_;
  if (!s.broken.ok() || s.terminated) return false;
  if (bytes.empty()) return true;
  size_t mark = s.arena.size();
  std::vector<int32_t> tops;
  bool can_end = false;
  Result<bool> ok = s.RunBytes(s.tops, bytes, &tops, &can_end);
  if (!ok.ok() || !*ok) {
    s.arena.Truncate(mark);
    return false;
  }
  s.tops = std::move(tops);
  s.can_end = can_end;
  s.Compact();
  return true;
}

bool Matcher::CanEnd() const { return state_->broken.ok() && !state_->terminated && state_->can_end; }

bool Matcher::IsTerminated() const {
  const State& s = *state_;
  return s.terminated || (s.broken.ok() && s.tops.empty() && s.can_end);
}

std::string Matcher::ForcedBytes() const {
  // Steps a scratch copy of the stacks in the arena, then truncates: the
  // observable state is unchanged.
  State& s = *state_;
  std::string out;
  if (!s.broken.ok() || s.terminated) return out;
  size_t mark = s.arena.size();
  StackStepper stepper(*s.g, &s.arena);
  std::vector<int32_t> cur = s.tops, raw;
  bool can_end = s.can_end;
  while (!can_end && out.size() < kMaxForcedBytes && !cur.empty()) {
    int only = -1;
    bool choice = false;
    for (int32_t f : cur) {
      int32_t st = s.arena.frame(f).state;
      if (!s.g->token_edges(st).empty()) choice = true;
      for (int b = 0; b < 256 && !choice; ++b) {
        if (s.g->NextOnByte(st, static_cast<uint8_t>(b)) < 0) continue;
        if (only >= 0 && only != b) choice = true;
        only = b;
      }
      if (choice) break;
    }
    if (choice || only < 0) break;
    raw.clear();
    stepper.StepByte(cur, static_cast<uint8_t>(only), &raw);
    std::vector<int32_t> next;
    CloseResult r;
    if (!stepper.Close(raw, &next, &r).ok()) break;
    out.push_back(static_cast<char>(only));
    cur = std::move(next);
    can_end = r.can_end;
  }
  s.arena.Truncate(mark);
  return out;
}

}  // namespace llmhost::grammar
