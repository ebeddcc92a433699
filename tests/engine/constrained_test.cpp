// Constrained decoding through the scheduler (engine/request.h:
// OutputConstraint): the mask overrides what the model prefers, the grammar's
// end or an allowed EOS ends the choice with kStop, every choice walks its
// own matcher, preemption keeps the matcher's state, a free think block comes
// before the constraint, and a matcher that cannot go on ends with kError.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "engine/constraint_tracker.h"
#include "engine/engine_test_util.h"
#include "engine/sampler.h"
#include "grammar/grammar.h"
#include "grammar/matcher.h"
#include "grammar/token_vocab.h"

namespace llmhost::constrained_test {
namespace {

using testing::ScriptedModel;

// Tokens: single bytes a b c x { } ", "ab", and EOS (special) last.
constexpr int32_t kA = 0, kB = 1, kC = 2, kX = 3, kAB = 7, kEos = 8;
constexpr int64_t kVocab = 12;  // the model's rows are longer than the vocabulary (padding)

std::shared_ptr<const grammar::TokenVocab> SmallVocab() {
  return grammar::TokenVocab::FromBytes({"a", "b", "c", "x", "{", "}", "\"", "ab", ""}, {kEos}, {kEos});
}

OutputConstraint Constraint(const grammar::Grammar& g, std::shared_ptr<const grammar::TokenVocab> vocab,
                            const grammar::CompileOptions& o = {}) {
  auto compiled = grammar::Compile(g, vocab, o);
  EXPECT_TRUE(compiled.ok()) << compiled.status().ToString();
  OutputConstraint c;
  c.grammar = compiled.ok() ? *compiled : nullptr;
  c.vocab = std::move(vocab);
  return c;
}

grammar::Grammar Of(const std::function<grammar::NodeId(grammar::Grammar&)>& body) {
  grammar::Grammar g;
  const grammar::RuleId root = g.AddRule("root");
  g.SetBody(root, body(g));
  g.SetRoot(root);
  return g;
}

struct Log {
  std::vector<RequestEvent> events;
  EventCallback Callback() {
    return [this](RequestEvent ev) { events.push_back(std::move(ev)); };
  }
  std::vector<int32_t> Ids(int choice = 0) const {
    std::vector<int32_t> ids;
    for (const auto& e : events) {
      if (e.choice == choice) ids.insert(ids.end(), e.token_ids.begin(), e.token_ids.end());
    }
    return ids;
  }
  std::string Text(int choice = 0) const {
    std::string t;
    for (const auto& e : events) {
      if (e.choice == choice) t += e.text;
    }
    return t;
  }
  std::vector<RequestEvent> Finals(int choice = 0) const {
    std::vector<RequestEvent> f;
    for (const auto& e : events) {
      if (e.choice == choice && e.finish != FinishReason::kNone) f.push_back(e);
    }
    return f;
  }
};

// The bytes of `ids` in the small vocabulary (EOS adds none).
std::string Spell(const std::vector<int32_t>& ids) {
  auto v = SmallVocab();
  std::string s;
  for (int32_t id : ids) s += std::string(v->bytes(id));
  return s;
}

struct Harness {
  std::unique_ptr<Scheduler> sched;
  ScriptedModel* model = nullptr;
  Log log;
};

// Runs `r` (prompt {1, 2, 3}) to the end on a model that always prefers `preferred`.
void RunToEnd(Harness* run, GenerationRequest r, int32_t preferred, int64_t blocks = 32, int64_t bs = 4) {
  SchedulerOptions so;
  so.eos_token_ids = {kEos};
  run->sched = testing::ScriptedScheduler(&run->model, kVocab, [preferred](int64_t, int32_t) { return preferred; },
                                          blocks, bs, so);
  r.prompt = {1, 2, 3};
  r.on_event = run->log.Callback();
  ASSERT_TRUE(run->sched->Validate(r).ok()) << run->sched->Validate(r).ToString();
  run->sched->Enqueue(1, std::move(r));
  for (int i = 0; i < 1000 && run->sched->HasWork(); ++i) run->sched->Step();
  ASSERT_FALSE(run->sched->HasWork());
  EXPECT_EQ(run->sched->cache().allocator().free_blocks(), blocks);
}

GenerationRequest Greedy(OutputConstraint c, int64_t max_tokens = 20) {
  GenerationRequest r;
  r.sampling.temperature = 0;
  r.max_tokens = max_tokens;
  r.constraint = std::move(c);
  return r;
}

// The model wants "x" every step; the grammar allows only "abc": greedy takes
// the lowest allowed id each step, and the grammar's end stops the choice.
TEST(ConstrainedTest, MaskOverridesTheModelAndTheGrammarsEndStops) {
  Harness run;
  RunToEnd(&run, Greedy(Constraint(Of([](auto& g) { return g.Literal("abc"); }), SmallVocab())), kX);
  EXPECT_EQ(run.log.Ids(), (std::vector<int32_t>{kA, kB, kC}));
  auto finals = run.log.Finals();
  ASSERT_EQ(finals.size(), 1u);
  EXPECT_EQ(finals[0].finish, FinishReason::kStop);
  EXPECT_FALSE(finals[0].stop_token.has_value()) << "ended by the grammar, not by an EOS";
  EXPECT_EQ(run.sched->counters().finished, 1u);
}

// Where the grammar allows what the model prefers, the model's choice stands;
// "ab" is one token of the vocabulary.
TEST(ConstrainedTest, AllowedPreferenceIsKept) {
  Harness run;
  RunToEnd(&run, Greedy(Constraint(Of([](auto& g) { return g.Alt({g.Literal("ab"), g.Literal("c")}); }), SmallVocab())),
           kAB);
  EXPECT_EQ(run.log.Ids(), (std::vector<int32_t>{kAB}));
  EXPECT_EQ(run.log.Finals()[0].finish, FinishReason::kStop);
}

// EOS is allowed only where the match can end: one "a" at least, then the
// model's EOS ends the choice as EOS does (kStop with the stop id).
TEST(ConstrainedTest, EosOnlyWhereTheMatchCanEnd) {
  Harness run;
  RunToEnd(&run, Greedy(Constraint(Of([](auto& g) { return g.Repeat(g.Literal("a"), 1, -1); }), SmallVocab())), kEos);
  EXPECT_EQ(run.log.Ids(), (std::vector<int32_t>{kA, kEos}));
  auto finals = run.log.Finals();
  ASSERT_EQ(finals.size(), 1u);
  EXPECT_EQ(finals[0].finish, FinishReason::kStop);
  EXPECT_EQ(finals[0].stop_token, kEos);
}

// Padding rows past the vocabulary are never drawn, and penalties cannot
// bring a banned token back: the model prefers a padding id (10) and "a"
// carries a +100 logit bias, yet the grammar's "b" comes out.
TEST(ConstrainedTest, PaddingAndBiasDoNotLeakPastTheMask) {
  Harness run;
  GenerationRequest r = Greedy(Constraint(Of([](auto& g) { return g.Literal("b"); }), SmallVocab()));
  r.sampling.logit_bias = {{kA, 100.0f}};
  RunToEnd(&run, std::move(r), 10);
  EXPECT_EQ(run.log.Ids(), (std::vector<int32_t>{kB}));
}

// Sampled choices each walk their own matcher: every one spells a string of
// the grammar, and they differ (their draws do).
TEST(ConstrainedTest, ChoicesHaveTheirOwnMatchers) {
  Harness run;
  GenerationRequest r;
  r.sampling.temperature = 1.0;
  r.sampling.seed = 7;
  r.max_tokens = 20;
  r.choices = 4;
  // ("a" | "b" | "c"){6}: a uniform draw among the allowed ids each step.
  r.constraint = Constraint(
      Of([](auto& g) { return g.Repeat(g.Alt({g.Literal("a"), g.Literal("b"), g.Literal("c")}), 6, 6); }), SmallVocab());
  RunToEnd(&run, std::move(r), kX);
  std::set<std::string> texts;
  for (int c = 0; c < 4; ++c) {
    const std::string s = Spell(run.log.Ids(c));
    EXPECT_EQ(s.size(), 6u) << "choice " << c << ": " << s;
    EXPECT_EQ(s.find_first_not_of("abc"), std::string::npos) << s;
    ASSERT_EQ(run.log.Finals(c).size(), 1u);
    EXPECT_EQ(run.log.Finals(c)[0].finish, FinishReason::kStop);
    texts.insert(s);
  }
  EXPECT_GT(texts.size(), 1u) << "four seeded draws of 3^6 strings should not all agree";
}

// Choices that outgrow a small pool are preempted and recompute; the
// matcher lives with the choice, so each still spells the grammar's string.
TEST(ConstrainedTest, PreemptionKeepsTheMatchersState) {
  Harness run;
  GenerationRequest r = Greedy(Constraint(Of([](auto& g) { return g.Literal("abcabcabcabc"); }), SmallVocab()), 20);
  r.choices = 4;
  RunToEnd(&run, std::move(r), kX, /*blocks=*/7, /*bs=*/4);
  EXPECT_GT(run.sched->counters().preemptions, 0u) << "the test needs the pool to run short";
  for (int c = 0; c < 4; ++c) {
    EXPECT_EQ(Spell(run.log.Ids(c)), "abcabcabcabc") << "choice " << c;
    ASSERT_EQ(run.log.Finals(c).size(), 1u);
    EXPECT_EQ(run.log.Finals(c)[0].finish, FinishReason::kStop);
  }
}

// An ambiguous grammar over a matcher allowed one parse stack: the matcher
// fails, and the choice ends with kError and the matcher's message.
TEST(ConstrainedTest, MatcherErrorEndsTheChoiceWithError) {
  Harness run;
  grammar::CompileOptions o;
  o.max_stacks = 1;
  // root ::= A | B, A ::= "a" A | "b", B ::= "a" B | "c": both rules are
  // alive at the start (recursive, so neither is inlined away).
  grammar::Grammar g;
  const grammar::RuleId root = g.AddRule("root"), a = g.AddRule("A"), b = g.AddRule("B");
  g.SetBody(a, g.Alt({g.Seq({g.Literal("a"), g.Ref(a)}), g.Literal("b")}));
  g.SetBody(b, g.Alt({g.Seq({g.Literal("a"), g.Ref(b)}), g.Literal("c")}));
  g.SetBody(root, g.Alt({g.Ref(a), g.Ref(b)}));
  g.SetRoot(root);
  GenerationRequest r = Greedy(Constraint(g, SmallVocab(), o), 20);
  RunToEnd(&run, std::move(r), kA);
  auto finals = run.log.Finals();
  ASSERT_EQ(finals.size(), 1u);
  EXPECT_EQ(finals[0].finish, FinishReason::kError);
  EXPECT_FALSE(finals[0].error.ok());
  EXPECT_FALSE(finals[0].error.message().empty());
  EXPECT_EQ(run.sched->counters().failed, 1u);
}

TEST(ConstrainedTest, ValidateRefusesAVocabularyLargerThanTheModel) {
  SchedulerOptions so;
  ScriptedModel* model = nullptr;
  auto sched = testing::ScriptedScheduler(&model, 4, [](int64_t, int32_t) { return 0; }, 8, 4, so);
  GenerationRequest r = Greedy(Constraint(Of([](auto& g) { return g.Literal("a"); }), SmallVocab()));
  r.prompt = {1};
  Status st = sched->Validate(r);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("vocabulary"), std::string::npos) << st.message();
  r.constraint->think = OutputConstraint::Think{true, "", -1, "</think>"};
  r.constraint->vocab = grammar::TokenVocab::FromBytes({"a"}, {}, {});
  st = sched->Validate(r);
  EXPECT_NE(st.message().find("tokenizer"), std::string::npos) << st.message();
}

// A think block the prompt opened stays free (the model writes what it
// wants), the constraint starts after its close; a real tokenizer decodes.
TEST(ConstrainedTest, FreeThinkBlockThenTheGrammar) {
  auto tok = Tokenizer::FromPath(testing::ModelsRoot() + "/llama3-tiny");
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  const std::vector<int32_t> script = (*tok)->Encode("I will say 7.</think>7 is it", false);
  SchedulerOptions so;
  ScriptedModel* model = nullptr;
  auto sched = testing::ScriptedScheduler(
      &model, static_cast<int64_t>((*tok)->VocabSize()),
      [script](int64_t pos, int32_t) {
        return script[static_cast<size_t>(std::min<int64_t>(pos - 2, static_cast<int64_t>(script.size()) - 1))];
      },
      64, 16, so, tok->get());
  auto vocab = grammar::TokenVocab::FromTokenizer(**tok, {});
  GenerationRequest r = Greedy(Constraint(Of([](auto& g) { return g.Literal("42"); }), vocab), 40);
  r.constraint->think = OutputConstraint::Think{true, "", -1, "</think>"};
  r.prompt = {1, 2, 3};
  Log log;
  r.on_event = log.Callback();
  ASSERT_TRUE(sched->Validate(r).ok()) << sched->Validate(r).ToString();
  sched->Enqueue(1, std::move(r));
  while (sched->HasWork()) sched->Step();
  EXPECT_EQ(log.Text(), "I will say 7.</think>42");
  ASSERT_EQ(log.Finals().size(), 1u);
  EXPECT_EQ(log.Finals()[0].finish, FinishReason::kStop);
}

// The tracker alone: the close may be split across pieces; bytes after it in
// the same piece are the grammar's first, and an error when it refuses them.
TEST(ConstrainedTest, TrackerStartsAfterTheCloseWithTheBytesThatFollowIt) {
  OutputConstraint c = Constraint(Of([](auto& g) { return g.Literal("42"); }),
                                  grammar::TokenVocab::FromBytes({"4", "2", "x"}, {}, {}));
  c.think = OutputConstraint::Think{true, "", -1, "</think>"};
  ConstraintTracker ok(c);
  EXPECT_TRUE(ok.in_think());
  ASSERT_TRUE(ok.OnText("hmm </thi").ok());
  EXPECT_TRUE(ok.in_think());
  ASSERT_TRUE(ok.OnText("nk>4").ok());
  ASSERT_FALSE(ok.in_think());
  ok.PrepareMask();
  ASSERT_TRUE(ok.mask_status().ok());
  EXPECT_EQ(ok.mask()[0] & 0b111u, 0b010u) << "only \"2\" may follow \"4\"";
  ConstraintTracker bad(c);
  Status st = bad.OnText("</think>zz");
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("zz"), std::string::npos) << st.message();
  // Without a prompt-opened block, the first token may open one (id 2 here).
  c.think = OutputConstraint::Think{false, "", 2, "</think>"};
  ConstraintTracker opening(c);
  opening.PrepareMask();
  EXPECT_EQ(opening.mask()[0] & 0b111u, 0b101u) << "\"4\" or the open id";
  ASSERT_TRUE(opening.AcceptToken(2).ok());
  EXPECT_TRUE(opening.in_think());
}

// An open marker of several tokens that shares its start with the grammar:
// both stay possible until a token settles it; the think block, once open,
// leaves the grammar at its start.
TEST(ConstrainedTest, TrackerKeepsThinkAndGrammarOpenUntilATokenDecides) {
  enum : int32_t { kLt, kTh, kInk, kLetterA, kGt };
  auto vocab = grammar::TokenVocab::FromBytes({"<", "th", "ink>", "a", ">"}, {}, {});
  OutputConstraint c = Constraint(Of([](auto& g) { return g.Literal("<a>"); }), vocab);
  c.think = OutputConstraint::Think{false, "<think>", -1, "</think>"};
  auto bits = [](const ConstraintTracker& t) { return t.mask()[0] & 0b11111u; };
  for (bool think : {true, false}) {
    ConstraintTracker t(c);
    t.PrepareMask();
    EXPECT_EQ(bits(t), 1u << kLt);
    ASSERT_TRUE(t.AcceptToken(kLt).ok());
    t.PrepareMask();
    EXPECT_EQ(bits(t), (1u << kTh) | (1u << kLetterA)) << "the marker's \"th\" or the grammar's \"a\"";
    if (!think) {
      ASSERT_TRUE(t.AcceptToken(kLetterA).ok());
      t.PrepareMask();
      EXPECT_EQ(bits(t), 1u << kGt);
      continue;
    }
    ASSERT_TRUE(t.AcceptToken(kTh).ok());
    t.PrepareMask();
    EXPECT_EQ(bits(t), 1u << kInk) << "the grammar is out: only the marker goes on";
    ASSERT_TRUE(t.AcceptToken(kInk).ok());
    ASSERT_TRUE(t.in_think());
    t.PrepareMask();
    EXPECT_EQ(bits(t), 0b11111u) << "inside the think block: any token";
    ASSERT_TRUE(t.OnText("hmm</think>").ok());
    t.PrepareMask();
    EXPECT_EQ(bits(t), 1u << kLt) << "the grammar from its start";
  }
}

// Inside the think block any token may come but EOS: the output must still
// reach the grammar after the block.
TEST(ConstrainedTest, ThinkBlockCannotEndTheOutput) {
  OutputConstraint c = Constraint(Of([](auto& g) { return g.Literal("a"); }), SmallVocab());
  c.think = OutputConstraint::Think{true, "", -1, "</think>"};
  ConstraintTracker t(c);
  t.PrepareMask();
  ASSERT_TRUE(t.mask_status().ok());
  EXPECT_EQ(t.mask()[0], (1u << kEos) - 1) << "every token of the vocabulary but EOS, nothing past it";
}

// The sampler alone: the mask bans everything it does not allow, before
// temperature; logprobs stay those of the raw row.
TEST(ConstrainedTest, SamplerMaskKeepsRawLogprobs) {
  SamplingParams p;
  p.temperature = 0;
  p.logprobs = true;
  Sampler s(p, {}, 40);
  std::vector<float> logits(40, 0.0f);
  logits[3] = 5.0f;   // the model's favourite, banned
  logits[35] = 1.0f;  // allowed, in the second word
  std::vector<uint32_t> mask(2, 0);
  mask[0] |= 1u << 1;  // id 1
  mask[1] |= 1u << 3;  // id 35
  SampledToken t = s.Sample(logits.data(), mask);
  EXPECT_EQ(t.id, 35);
  // log_softmax of the raw row at 35: 1 - log(38 + e^5 + e^1).
  const double lse = std::log(38.0 + std::exp(5.0) + std::exp(1.0));
  EXPECT_NEAR(t.logprob, 1.0 - lse, 1e-4);
}

}  // namespace
}  // namespace llmhost::constrained_test
