// Fast-forward (engine/forced_tokens.h): tokens an output constraint forces
// are appended without sampling, as the tokenizer's own encoding, and only
// where that encoding cannot change with what follows. Through the
// scheduler, a scripted model that writes the canonical tokens of a JSON
// text gives the same ids and text with and without fast-forward, in fewer
// forward passes with it.
#include <gtest/gtest.h>

#include <string>

#include "engine/constraint_tracker.h"
#include "engine/engine_test_util.h"
#include "engine/forced_tokens.h"
#include "grammar/gbnf.h"
#include "grammar/matcher.h"
#include "grammar/token_vocab.h"

namespace llmhost::fast_forward_test {
namespace {

using testing::ScriptedModel;

std::unique_ptr<Tokenizer> LoadTokenizer(const std::string& name) {
  auto tok = Tokenizer::FromPath(testing::ModelsRoot() + "/" + name);
  EXPECT_TRUE(tok.ok()) << tok.status().ToString();
  return tok.ok() ? std::move(*tok) : nullptr;
}

std::shared_ptr<const grammar::CompiledGrammar> CompileGbnf(const char* text,
                                                            std::shared_ptr<const grammar::TokenVocab> vocab) {
  grammar::Grammar g;
  auto root = grammar::AddGbnf(g, text, vocab.get());
  EXPECT_TRUE(root.ok()) << root.status().ToString();
  g.SetRoot(*root);
  auto cg = grammar::Compile(g, vocab);
  EXPECT_TRUE(cg.ok()) << cg.status().ToString();
  return *cg;
}

// What fast-forward appends for the matcher's forced bytes.
std::vector<int32_t> Forced(const Tokenizer& tok, const grammar::TokenVocab& vocab, const grammar::Matcher& m) {
  std::string forced = m.ForcedBytes();
  grammar::Matcher after = m;
  EXPECT_TRUE(after.AcceptBytes(forced));
  return StableForcedTokens(tok, vocab, forced, after);
}

// The ids' bytes, joined.
std::string Spell(const grammar::TokenVocab& vocab, const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += vocab.bytes(id);
  return s;
}

TEST(FastForward, KeepsTheEncodingOfAPrefixThatNoContinuationChanges) {
  auto tok = LoadTokenizer("llama3-tiny");
  ASSERT_TRUE(tok);
  auto vocab = grammar::TokenVocab::FromTokenizer(*tok, {});
  auto cg = CompileGbnf(R"(root ::= "{\"name\": \"" [a-z]+ "\", \"kind\": \"person\"}")", vocab);
  grammar::Matcher m(cg);
  const std::string forced = m.ForcedBytes();
  ASSERT_EQ(forced, "{\"name\": \"");
  std::vector<int32_t> ids = Forced(*tok, *vocab, m);
  const std::vector<int32_t> whole = tok->Encode(forced, false);
  ASSERT_FALSE(ids.empty());
  ASSERT_LT(ids.size(), whole.size()) << "the token that reaches the open string stays out";
  EXPECT_TRUE(std::equal(ids.begin(), ids.end(), whole.begin()));
  // Whatever name follows, the tokenizer starts with these tokens.
  for (const char* name : {"a", "bob", "zed", "q"}) {
    std::vector<int32_t> with = tok->Encode(forced + name + "\", \"kind\": \"person\"}", false);
    ASSERT_GE(with.size(), ids.size());
    EXPECT_TRUE(std::equal(ids.begin(), ids.end(), with.begin())) << name;
  }
}

TEST(FastForward, ForcesEverythingWhenNothingMayFollow) {
  auto tok = LoadTokenizer("llama3-tiny");
  ASSERT_TRUE(tok);
  auto vocab = grammar::TokenVocab::FromTokenizer(*tok, {});
  auto cg = CompileGbnf(R"(root ::= "x" ( "a" | "b" ) " is the answer, and that is final.")", vocab);
  grammar::Matcher m(cg);
  ASSERT_TRUE(m.AcceptBytes("xa"));
  std::vector<int32_t> ids = Forced(*tok, *vocab, m);
  EXPECT_EQ(ids, tok->Encode(" is the answer, and that is final.", false));
  EXPECT_EQ(Spell(*vocab, ids), " is the answer, and that is final.");
  // A choice forces nothing.
  EXPECT_TRUE(Forced(*tok, *vocab, grammar::Matcher(cg)).size() <= 1u);
}

TEST(FastForward, NothingWhereTheEncodingDoesNotSpellTheBytes) {
  // Llama-2's SentencePiece tokenizer puts a space before the text it encodes.
  const std::string shared = testing::SharedDir();
  if (shared.empty()) GTEST_SKIP() << "../shared is absent";
  auto tok = Tokenizer::FromPath(shared + "/reference/tokenizers/tok_llama2.json");
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  auto vocab = grammar::TokenVocab::FromTokenizer(**tok, {});
  ASSERT_EQ(Spell(*vocab, (*tok)->Encode("hello world", false)), " hello world");
  auto cg = CompileGbnf(R"(root ::= "hello world" [a-z]*)", vocab);
  grammar::Matcher m(cg);
  ASSERT_EQ(m.ForcedBytes(), "hello world");
  EXPECT_TRUE(Forced(**tok, *vocab, m).empty());
}

// The scheduler, on a model that writes `text`'s canonical tokens one per
// position (the prompt is 3 tokens), under a grammar that forces its
// structure.
struct Outcome {
  std::vector<int32_t> ids;
  std::string text;
  std::vector<RequestEvent> events;
  std::vector<std::vector<int64_t>> calls;
  FinishReason finish = FinishReason::kNone;
};

Outcome Generate(const Tokenizer& tok, const std::string& text, const char* gbnf, bool fast_forward,
                 bool logprobs = false, int64_t max_tokens = 64) {
  const std::vector<int32_t> script = tok.Encode(text, false);
  SchedulerOptions so;
  ScriptedModel* model = nullptr;
  auto sched = testing::ScriptedScheduler(
      &model, static_cast<int64_t>(tok.VocabSize()),
      [script](int64_t pos, int32_t) {
        return script[static_cast<size_t>(std::min<int64_t>(pos - 2, static_cast<int64_t>(script.size()) - 1))];
      },
      64, 16, so, &tok);
  auto vocab = grammar::TokenVocab::FromTokenizer(tok, {});
  GenerationRequest r;
  r.sampling.temperature = 0;
  r.sampling.logprobs = logprobs;
  r.max_tokens = max_tokens;
  r.prompt = {1, 2, 3};
  OutputConstraint c;
  c.grammar = CompileGbnf(gbnf, vocab);
  c.vocab = vocab;
  c.fast_forward = fast_forward;
  r.constraint = std::move(c);
  Outcome run;
  r.on_event = [&run](RequestEvent ev) {
    EXPECT_LE(ev.token_ids.size(), 1u);
    run.ids.insert(run.ids.end(), ev.token_ids.begin(), ev.token_ids.end());
    run.text += ev.text;
    if (ev.finish != FinishReason::kNone) run.finish = ev.finish;
    run.events.push_back(std::move(ev));
  };
  EXPECT_TRUE(sched->Validate(r).ok()) << sched->Validate(r).ToString();
  sched->Enqueue(1, std::move(r));
  for (int i = 0; i < 500 && sched->HasWork(); ++i) sched->Step();
  EXPECT_FALSE(sched->HasWork());
  run.calls = model->calls();
  return run;
}

constexpr const char* kRecord =
    R"(root ::= "{\"name\": \"" [a-z]+ "\", \"kind\": \"person\", \"age\": " [0-9]+ ", \"tags\": [\"x\"]}")";
const std::string kRecordText = R"({"name": "bob", "kind": "person", "age": 42, "tags": ["x"]})";

TEST(FastForward, SameOutputAsSamplingEveryTokenInFewerSteps) {
  auto tok = LoadTokenizer("llama3-tiny");
  ASSERT_TRUE(tok);
  Outcome plain = Generate(*tok, kRecordText, kRecord, /*fast_forward=*/false);
  Outcome fast = Generate(*tok, kRecordText, kRecord, /*fast_forward=*/true);
  EXPECT_EQ(plain.text, kRecordText);
  EXPECT_EQ(plain.ids, tok->Encode(kRecordText, false)) << "the script is the canonical tokenization";
  EXPECT_EQ(fast.ids, plain.ids);
  EXPECT_EQ(fast.text, plain.text);
  EXPECT_EQ(fast.finish, FinishReason::kStop);
  EXPECT_EQ(plain.finish, FinishReason::kStop);
  // One event per token either way; fast-forward ran several of them in one item.
  EXPECT_EQ(fast.events.size(), plain.events.size());
  EXPECT_LT(fast.calls.size(), plain.calls.size());
  int64_t widest = 0;
  for (const auto& call : fast.calls) widest = std::max(widest, call[0]);
  EXPECT_GT(widest, 2) << "forced tokens run through the model with the sampled one";
  for (const auto& call : plain.calls) EXPECT_EQ(call.size(), 1u);
}

TEST(FastForward, WithLogprobsForcedTokensGoOneAStepWithTheirLogprobs) {
  auto tok = LoadTokenizer("llama3-tiny");
  ASSERT_TRUE(tok);
  Outcome plain = Generate(*tok, kRecordText, kRecord, /*fast_forward=*/false, /*logprobs=*/true);
  Outcome fast = Generate(*tok, kRecordText, kRecord, /*fast_forward=*/true, /*logprobs=*/true);
  EXPECT_EQ(fast.ids, plain.ids);
  EXPECT_EQ(fast.text, kRecordText);
  for (size_t i = 1; i < fast.calls.size(); ++i) EXPECT_EQ(fast.calls[i][0], 1) << "step " << i;
  for (const RequestEvent& ev : fast.events) {
    if (ev.token_ids.empty()) continue;
    ASSERT_EQ(ev.logprobs.size(), 1u);
    EXPECT_EQ(ev.logprobs[0].id, ev.token_ids[0]);
    // The scripted model puts all but a sliver of its mass on the script's token.
    EXPECT_GT(ev.logprobs[0].logprob, -0.1f);
  }
}

TEST(FastForward, MaxTokensCutsTheForcedRun) {
  auto tok = LoadTokenizer("llama3-tiny");
  ASSERT_TRUE(tok);
  Outcome fast = Generate(*tok, kRecordText, kRecord, /*fast_forward=*/true, /*logprobs=*/false, /*max_tokens=*/3);
  EXPECT_EQ(fast.ids.size(), 3u);
  EXPECT_EQ(fast.finish, FinishReason::kLength);
  std::vector<int32_t> canonical = tok->Encode(kRecordText, false);
  EXPECT_TRUE(std::equal(fast.ids.begin(), fast.ids.end(), canonical.begin()));
}

}  // namespace
}  // namespace llmhost::fast_forward_test
