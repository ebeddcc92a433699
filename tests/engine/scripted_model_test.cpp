// The scripted test model (model/scripted_model.h) through the engine:
// output is the script's text whatever the sampling, chosen per prompt,
// across the prefix cache and concurrent requests; the think block's budget
// is closed by the engine (ReasoningBudget), and markup special tokens
// survive skip_special_tokens when kept (keep_special_ids).
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>

#include "backend/cpu/cpu_backend.h"
#include "engine/engine.h"
#include "engine/event_stream.h"
#include "engine/reasoning_limiter.h"
#include "model/model.h"
#include "model/scripted_model.h"
#include "model/synth_model.h"
#include "test_util.h"
#include "tokenizer/tokenizer.h"

namespace llmhost::scripted_model_test {
namespace {

const char* kScript = R"({"replies": [
  {"when": "weather", "text": "<think>\nThe user wants the weather. I should call the tool.\n</think>\n\nChecking.<|im_start|>"},
  {"when": "sunny", "text": "It is sunny in Paris."},
  {"text": "Hello there!"}]})";

struct Fixture {
  std::string dir;
  std::unique_ptr<CpuBackend> backend;
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tokenizer;
  std::unique_ptr<Engine> engine;

  explicit Fixture(DType kv = DType::kBF16) {
    dir = testing::MakeTempDir();
    auto s = SynthesizeScriptedModel(dir, kScript);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    backend = std::make_unique<CpuBackend>();
    auto m = Model::Load(dir, backend.get());
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    model = std::move(*m);
    auto t = Tokenizer::FromPath(dir);
    EXPECT_TRUE(t.ok());
    tokenizer = std::move(*t);
    EngineOptions o;
    o.kv_dtype = kv;
    o.block_size = 16;  // histories span several blocks
    auto e = Engine::Create(model.get(), tokenizer.get(), o);
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    engine = std::move(*e);
  }
  ~Fixture() {
    engine.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }

  std::string Generate(const std::string& prompt, GenerationRequest r = {}, FinishReason* finish = nullptr) {
    r.prompt = tokenizer->Encode(prompt, false);
    r.sampling.temperature = 1.0;  // any sampling gives the script
    r.sampling.seed = 7;
    auto stream = std::make_shared<EventStream>();
    r.on_event = stream->Callback();
    auto id = engine->Submit(std::move(r));
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    std::string text;
    for (const RequestEvent& ev : stream->WaitAll()) {
      text += ev.text;
      if (ev.finish != FinishReason::kNone && finish) *finish = ev.finish;
    }
    return text;
  }
};

std::string Chat(const std::string& user) { return "<|im_start|>user\n" + user + "<|im_end|>\n<|im_start|>assistant\n"; }

TEST(ScriptedModelEngine, RepliesFollowTheLatestWhenInThePrompt) {
  for (DType kv : {DType::kF32, DType::kBF16, DType::kF16, DType::kF8_E4M3}) {
    Fixture f(kv);
    FinishReason finish = FinishReason::kNone;
    EXPECT_EQ(f.Generate(Chat("hi")), "Hello there!");
    EXPECT_EQ(f.Generate(Chat("What is the weather?") + "<tool_call>..." + Chat("sunny"), {}, &finish),
              "It is sunny in Paris.");
    EXPECT_EQ(finish, FinishReason::kStop);
    // The same prompt again comes from the prefix cache: the history is read
    // back from the cached blocks.
    EXPECT_EQ(f.Generate(Chat("hi")), "Hello there!");
  }
}

TEST(ScriptedModelEngine, MarkupSpecialTokensAreKeptOnlyWhenAsked) {
  Fixture f;
  // The weather reply ends with a special token (<|im_start|>).
  const std::string full = "<think>\nThe user wants the weather. I should call the tool.\n</think>\n\nChecking.";
  EXPECT_EQ(f.Generate(Chat("weather")), full);
  GenerationRequest keep;
  keep.keep_special_ids = {*f.tokenizer->TokenToId("<|im_start|>")};
  EXPECT_EQ(f.Generate(Chat("weather"), keep), full + "<|im_start|>");
}

TEST(ScriptedModelEngine, TheEngineClosesAThinkBlockAtItsBudget) {
  Fixture f;
  GenerationRequest r;
  ReasoningBudget b;
  b.budget_tokens = 3;
  b.open = "<think>";
  b.close = "</think>";
  b.close_ids = f.tokenizer->Encode("\n</think>\n\n", false);
  r.reasoning_budget = b;
  const std::string out = f.Generate(Chat("weather"), r);
  // Three tokens of thinking, the forced close, then the script goes on
  // after its own close.
  ASSERT_EQ(out.rfind("<think>\n", 0), 0u) << out;
  const size_t close = out.find("\n</think>\n\n");
  ASSERT_NE(close, std::string::npos) << out;
  EXPECT_LT(close, std::string("<think>\nThe user wants").size()) << out;
  EXPECT_EQ(out.substr(close), "\n</think>\n\nChecking.") << out;
  // A budget larger than the block changes nothing.
  b.budget_tokens = 1000;
  r.reasoning_budget = b;
  EXPECT_EQ(f.Generate(Chat("weather"), r),
            "<think>\nThe user wants the weather. I should call the tool.\n</think>\n\nChecking.");
}

TEST(ReasoningLimiterTest, CountsTokensInsideTheBlockOnly) {
  ReasoningBudget b;
  b.budget_tokens = 2;
  b.open = "<think>";
  b.close = "</think>";
  b.close_ids = {9};
  ReasoningLimiter l(b);
  EXPECT_TRUE(l.OnToken("\n<thi").empty());
  EXPECT_FALSE(l.inside());
  EXPECT_TRUE(l.OnToken("nk>").empty());
  EXPECT_TRUE(l.inside());
  EXPECT_TRUE(l.OnToken("a").empty());
  EXPECT_EQ(l.OnToken("b"), std::vector<int32_t>{9});
  EXPECT_TRUE(l.OnToken("c").empty()) << "forced once";

  ReasoningLimiter closed(b);
  closed.OnToken("<think>");
  closed.OnToken("x</thi");
  EXPECT_TRUE(closed.OnToken("nk>").empty()) << "a close split across tokens ends the block";
  EXPECT_FALSE(closed.inside());

  ReasoningLimiter none(b);
  EXPECT_TRUE(none.OnToken("Hello").empty());
  EXPECT_FALSE(none.inside()) << "output that does not start with the block is never limited";

  b.starts_open = true;
  ReasoningLimiter open(b);
  EXPECT_TRUE(open.inside());
  EXPECT_TRUE(open.OnToken("a").empty());
  EXPECT_EQ(open.OnToken("b"), std::vector<int32_t>{9});
}

TEST(ScriptTest, ParseChooseAndResync) {
  EXPECT_FALSE(ParseScript("[]").ok());
  EXPECT_FALSE(ParseScript(R"({"replies": [{"when": "x"}]})").ok());
  EXPECT_FALSE(ParseScript(R"({"replies": [{"when": "", "text": "a"}]})").ok());
  auto s = ParseScript(R"({"replies": [{"when": "a", "text": "A"}, {"when": "b", "text": "B"}, {"text": "D"}]})");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(ChooseReply(*s, "..a..b..")->text, "B");
  EXPECT_EQ(ChooseReply(*s, "..b..a..")->text, "A");
  EXPECT_EQ(ChooseReply(*s, "nothing")->text, "D");
  EXPECT_EQ(ScriptPosition("hello world", "hello"), 5u);
  EXPECT_EQ(ScriptPosition("<think>abcdef</think>\n\nok", "<think>ab\n</think>\n\n"), 23u);
  EXPECT_EQ(ScriptPosition("hello", "zzzz"), std::string::npos);
}

}  // namespace
}  // namespace llmhost::scripted_model_test
