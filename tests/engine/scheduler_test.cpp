// Scheduling with a scripted model (logits chosen by the test): chunked
// prefill beside running decodes, stop strings / stop ids / EOS through the
// whole pipeline with a real tokenizer, the queue cap, shutdown and step
// failures.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "engine/engine_test_util.h"

namespace llmhost::scheduler_test {
namespace {

using testing::Collect;
using testing::Outcome;
using testing::ScriptedModel;

// Each row's next id is its token + 1 (mod vocab).
int32_t Successor(int64_t, int32_t tok) { return (tok + 1) % 50; }

GenerationRequest Plain(std::vector<int32_t> prompt, int64_t max_tokens,
                        std::shared_ptr<EventStream>* s) {
  GenerationRequest r;
  r.prompt = std::move(prompt);
  r.sampling.temperature = 0;
  r.max_tokens = max_tokens;
  *s = std::make_shared<EventStream>();
  r.on_event = (*s)->Callback();
  return r;
}

TEST(SchedulerTest, LongPromptIsChunkedBesideRunningDecodes) {
  ScriptedModel* model = nullptr;
  SchedulerOptions so;
  so.prefill_chunk_tokens = 128;
  auto sched = testing::ScriptedScheduler(&model, 50, Successor, 128, 16, so);
  std::atomic<int> a_tokens{0};
  GenerationRequest a;
  a.prompt = {1, 2, 3, 4};
  a.sampling.temperature = 0;
  a.max_tokens = 40;
  a.on_event = [&](RequestEvent ev) { a_tokens += static_cast<int>(ev.token_ids.size()); };
  sched->Enqueue(1, std::move(a));
  sched->Step();  // A's prompt and first token
  sched->Step();
  ASSERT_EQ(a_tokens.load(), 2);

  std::shared_ptr<EventStream> sb;
  sched->Enqueue(2, Plain(std::vector<int32_t>(1000, 7), 3, &sb));
  const size_t before = model->calls().size();
  int steps = 0;
  for (; steps < 8; ++steps) {  // B's 1000 tokens in chunks of 128
    const int tokens_before = a_tokens;
    sched->Step();
    EXPECT_EQ(sched->running(), 2);
    EXPECT_EQ(a_tokens, tokens_before + 1) << "A advances every step";
  }
  const auto calls = model->calls();
  int64_t b_prefilled = 0;
  for (size_t i = before; i < calls.size(); ++i) {
    ASSERT_EQ(calls[i].size(), 2u) << "one forward pass: A's decode and a chunk of B";
    EXPECT_EQ(calls[i][0], 1);
    EXPECT_LE(calls[i][1], 128);
    b_prefilled += calls[i][1];
  }
  EXPECT_EQ(steps, 8);
  EXPECT_EQ(b_prefilled, 1000);  // 7 chunks of 128 and one of 104
  while (sched->HasWork()) sched->Step();
  Outcome ob = Collect(sb);
  EXPECT_EQ(ob.ids, (std::vector<int32_t>{8, 9, 10}));
  EXPECT_EQ(ob.final_event.usage.prompt_tokens, 1000);
  EXPECT_EQ(sched->cache().allocator().free_blocks(), 128);
}

// Every event of a request, whatever its choice (the test steps the
// scheduler on this thread).
struct ChoiceLog {
  std::vector<RequestEvent> events;
  EventCallback Callback() {
    return [this](RequestEvent ev) { events.push_back(std::move(ev)); };
  }
  std::vector<int32_t> Ids(int choice) const {
    std::vector<int32_t> ids;
    for (const auto& e : events) {
      if (e.choice == choice) ids.insert(ids.end(), e.token_ids.begin(), e.token_ids.end());
    }
    return ids;
  }
  std::vector<FinishReason> Finishes(int choice) const {
    std::vector<FinishReason> f;
    for (const auto& e : events) {
      if (e.choice == choice && e.finish != FinishReason::kNone) f.push_back(e.finish);
    }
    return f;
  }
};

// A request of 3 choices runs its prompt once; the other two fork it when
// it is in (its blocks shared), sample that same logits row and then decode
// beside it, each to its own single final event.
TEST(SchedulerTest, ChoicesForkThePromptOnceAndShareItsBlocks) {
  ScriptedModel* model = nullptr;
  auto sched = testing::ScriptedScheduler(&model, 50, Successor, 16, 4, SchedulerOptions{});
  ChoiceLog log;
  GenerationRequest r;
  r.prompt = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};  // two full blocks of 4 and half of a third
  r.sampling.temperature = 0;
  r.max_tokens = 4;
  r.choices = 3;
  r.on_event = log.Callback();
  ASSERT_TRUE(sched->Validate(r).ok());
  sched->Enqueue(1, std::move(r));
  sched->Step();
  EXPECT_EQ(sched->running(), 3);
  ASSERT_EQ(model->calls().size(), 1u);
  EXPECT_EQ(model->calls()[0], (std::vector<int64_t>{10}));
  for (int c = 0; c < 3; ++c) EXPECT_EQ(log.Ids(c), (std::vector<int32_t>{11})) << "choice " << c;
  // 3 blocks for the prompt, shared by all three: nothing copied yet.
  EXPECT_EQ(sched->cache().allocator().free_blocks(), 16 - 3);
  while (sched->HasWork()) sched->Step();
  for (int c = 0; c < 3; ++c) {
    EXPECT_EQ(log.Ids(c), (std::vector<int32_t>{11, 12, 13, 14})) << "choice " << c;
    EXPECT_EQ(log.Finishes(c), (std::vector<FinishReason>{FinishReason::kLength})) << "choice " << c;
  }
  const auto calls = model->calls();
  for (size_t i = 1; i < calls.size(); ++i) EXPECT_EQ(calls[i], (std::vector<int64_t>{1, 1, 1})) << "step " << i;
  EXPECT_EQ(sched->counters().prefill_tokens, 10u);
  EXPECT_EQ(sched->counters().generated_tokens, 12u);
  EXPECT_EQ(sched->cache().allocator().free_blocks(), 16);
}

// Choices that outgrow the pool are preempted like any request and recompute
// what they lost: each still ends once, with the tokens a lone run gives.
TEST(SchedulerTest, ChoicesPreemptedForMemoryFinishLikeALoneRun) {
  ScriptedModel* model = nullptr;
  // 9 blocks of 4: the 3-block prompt shared, then each choice's own blocks
  // (max 12 new tokens: 3 more blocks each) cannot all fit at once.
  auto sched = testing::ScriptedScheduler(&model, 50, Successor, 9, 4, SchedulerOptions{});
  ChoiceLog log;
  GenerationRequest r;
  r.prompt = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  r.sampling.temperature = 0;
  r.max_tokens = 12;
  r.choices = 4;
  r.on_event = log.Callback();
  sched->Enqueue(1, std::move(r));
  for (int i = 0; i < 500 && sched->HasWork(); ++i) sched->Step();
  ASSERT_FALSE(sched->HasWork());
  EXPECT_GT(sched->counters().preemptions, 0u) << "the test needs the pool to run short";
  std::vector<int32_t> want;
  for (int32_t t = 11; t < 23; ++t) want.push_back(t % 50);
  for (int c = 0; c < 4; ++c) {
    EXPECT_EQ(log.Ids(c), want) << "choice " << c;
    EXPECT_EQ(log.Finishes(c), (std::vector<FinishReason>{FinishReason::kLength})) << "choice " << c;
  }
  EXPECT_EQ(sched->cache().allocator().free_blocks(), 9);
}

// Cancelling a request ends every choice: before the fork (they wait inside
// choice 0) and after it (they run beside it).
TEST(SchedulerTest, CancelEndsEveryChoice) {
  for (bool forked : {false, true}) {
    ScriptedModel* model = nullptr;
    auto sched = testing::ScriptedScheduler(&model, 50, Successor, 16, 4, SchedulerOptions{});
    ChoiceLog log;
    GenerationRequest r;
    r.prompt = {1, 2, 3};
    r.sampling.temperature = 0;
    r.max_tokens = 10;
    r.choices = 4;
    r.on_event = log.Callback();
    sched->Enqueue(7, std::move(r));
    if (forked) sched->Step();
    EXPECT_EQ(sched->running(), forked ? 4 : 0);
    sched->Cancel(7);
    EXPECT_FALSE(sched->HasWork());
    for (int c = 0; c < 4; ++c) {
      EXPECT_EQ(log.Finishes(c), (std::vector<FinishReason>{FinishReason::kAbort})) << "choice " << c << " forked " << forked;
    }
    EXPECT_EQ(sched->cache().allocator().free_blocks(), 16);
  }
}

// The scripted output is the tokenization of `text`, after a 3-token prompt.
struct ScriptedText {
  std::vector<int32_t> ids;
  ScriptedModel::NextFn next() const {
    return [ids = ids](int64_t pos, int32_t) {
      const int64_t i = std::min<int64_t>(pos - 2, static_cast<int64_t>(ids.size()) - 1);
      return ids[static_cast<size_t>(std::max<int64_t>(i, 0))];
    };
  }
};

class ScriptedTextTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto t = Tokenizer::FromPath(testing::ModelsRoot() + "/llama3-tiny");
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    tok_ = std::move(t).value();
  }
  // Runs one request whose output is `text` then `tail` ids, to the end.
  Outcome Run(const std::string& text, std::vector<int32_t> tail, GenerationRequest r,
              std::vector<int32_t> eos = {}) {
    ScriptedText script;
    script.ids = tok_->Encode(text, false);
    script.ids.insert(script.ids.end(), tail.begin(), tail.end());
    n_text_ids_ = static_cast<int64_t>(tok_->Encode(text, false).size());
    ScriptedModel* model = nullptr;
    SchedulerOptions so;
    so.eos_token_ids = std::move(eos);
    auto sched = testing::ScriptedScheduler(&model, static_cast<int64_t>(tok_->VocabSize()),
                                            script.next(), 64, 16, so, tok_.get());
    std::shared_ptr<EventStream> s = std::make_shared<EventStream>();
    r.prompt = {1, 2, 3};
    r.sampling.temperature = 0;
    r.on_event = s->Callback();
    EXPECT_TRUE(sched->Validate(r).ok()) << sched->Validate(r).ToString();
    sched->Enqueue(1, std::move(r));
    while (sched->HasWork()) sched->Step();
    EXPECT_EQ(sched->cache().allocator().free_blocks(), 64);
    return Collect(s);
  }
  std::unique_ptr<Tokenizer> tok_;
  int64_t n_text_ids_ = 0;
};

TEST_F(ScriptedTextTest, StopStringAcrossTokenBoundaries) {
  const std::string text = "The answer is 42.\nUser: and the rest";
  const std::string stop = "\nUser:";
  // The stop string spans several tokens of this vocabulary.
  const std::vector<int32_t> stop_ids = tok_->Encode(stop, false);
  ASSERT_GE(stop_ids.size(), 2u);
  GenerationRequest r;
  r.max_tokens = 100;
  r.stop = {stop};
  Outcome o = Run(text, {}, std::move(r));
  EXPECT_EQ(o.text, "The answer is 42.");
  EXPECT_EQ(o.final_event.finish, FinishReason::kStopString);
  EXPECT_EQ(o.final_event.stop_string, stop);
  EXPECT_FALSE(o.final_event.stop_token.has_value());
  // Text came out as it became final, before the end.
  int non_empty = 0;
  for (const RequestEvent& ev : o.events) {
    EXPECT_EQ(ev.text.find('\n'), std::string::npos);
    non_empty += !ev.text.empty();
  }
  EXPECT_GE(non_empty, 3);
  // Generation ended at the token that completed the stop string.
  const std::string upto = tok_->Decode(o.ids, true);
  EXPECT_NE(upto.find(stop), std::string::npos);
  std::vector<int32_t> shorter(o.ids.begin(), o.ids.end() - 1);
  EXPECT_EQ(tok_->Decode(shorter, true).find(stop), std::string::npos);
  EXPECT_EQ(o.final_event.usage.completion_tokens, static_cast<int64_t>(o.ids.size()));
}

TEST_F(ScriptedTextTest, EosEndsAndFlushesHeldBackText) {
  const int32_t eos = 5;
  GenerationRequest r;
  r.max_tokens = 100;
  r.stop = {"\nUser:"};
  // The text ends in "\nUs": held back as a possible stop, then EOS.
  Outcome o = Run("Hello there.\nUs", {eos, 9, 9}, std::move(r), {eos});
  EXPECT_EQ(o.text, "Hello there.\nUs");
  EXPECT_EQ(o.final_event.finish, FinishReason::kStop);
  EXPECT_EQ(o.final_event.stop_token, eos);
  EXPECT_EQ(o.ids.back(), eos);
  EXPECT_EQ(static_cast<int64_t>(o.ids.size()), n_text_ids_ + 1);

  // The same with ignore_eos runs on to max_tokens ("length").
  const int64_t n2 = static_cast<int64_t>(tok_->Encode("Hello there.", false).size());
  GenerationRequest r2;
  r2.max_tokens = n2 + 3;
  r2.ignore_eos = true;
  Outcome o2 = Run("Hello there.", {eos, 9, 9}, std::move(r2), {eos});
  EXPECT_EQ(o2.final_event.finish, FinishReason::kLength);
  EXPECT_EQ(static_cast<int64_t>(o2.ids.size()), n2 + 3);

  // A request's own stop id works like EOS.
  GenerationRequest r3;
  r3.max_tokens = 100;
  r3.stop_token_ids = {9};
  Outcome o3 = Run("Hi.", {9}, std::move(r3));
  EXPECT_EQ(o3.text, "Hi.");
  EXPECT_EQ(o3.final_event.stop_token, 9);
}

TEST(EngineQueueTest, FullQueueIsResourceExhausted) {
  ScriptedModel* model = nullptr;
  SchedulerOptions so;
  so.max_running = 1;
  auto engine = Engine::Start(testing::ScriptedScheduler(&model, 50, Successor, 64, 16, so),
                              /*max_queue=*/3);
  model->Hold();
  std::vector<std::shared_ptr<EventStream>> s(5);
  ASSERT_TRUE(engine->Submit(Plain({1, 2}, 5, &s[0])).ok());
  model->WaitEntered(1);  // A runs (held inside its first step)
  for (int i = 1; i <= 3; ++i) {
    auto id = engine->Submit(Plain({1, 2}, 5, &s[static_cast<size_t>(i)]));
    EXPECT_TRUE(id.ok()) << i << ": " << id.status().ToString();
  }
  auto rejected = engine->Submit(Plain({1, 2}, 5, &s[4]));
  EXPECT_EQ(rejected.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(rejected.status().message().find("queue is full"), std::string::npos);
  EngineStats st = engine->Stats();
  EXPECT_EQ(st.running, 1);
  EXPECT_EQ(st.waiting, 3);
  EXPECT_EQ(st.rejected, 1u);
  model->Open();
  for (int i = 0; i < 4; ++i) {
    Outcome o = Collect(s[static_cast<size_t>(i)]);
    EXPECT_EQ(o.ids, (std::vector<int32_t>{3, 4, 5, 6, 7})) << i;
  }
  st = engine->WaitIdle();
  EXPECT_EQ(st.counters.finished, 4u);
  EXPECT_EQ(st.submitted, 4u);
}

TEST(EngineQueueTest, ShutdownAbortsQueuedAndRunning) {
  ScriptedModel* model = nullptr;
  SchedulerOptions so;
  so.max_running = 2;
  auto engine = Engine::Start(testing::ScriptedScheduler(&model, 50, Successor, 64, 16, so), 32);
  model->Hold();
  std::vector<std::shared_ptr<EventStream>> s(5);
  for (size_t i = 0; i < s.size(); ++i) ASSERT_TRUE(engine->Submit(Plain({1, 2, 3}, 30, &s[i])).ok());
  model->WaitEntered(1);
  std::thread stopper([&] { engine->Shutdown(); });
  // Once Submit is refused the engine is stopping; let the held step end.
  std::shared_ptr<EventStream> extra;
  for (;;) {
    auto r = engine->Submit(Plain({1}, 1, &extra));
    if (!r.ok() && r.status().message().find("shutting down") != std::string::npos) break;
    std::this_thread::yield();
  }
  model->Open();
  stopper.join();
  int aborted = 0;
  for (auto& st : s) {
    Outcome o = Collect(st);
    aborted += o.final_event.finish == FinishReason::kAbort;
    EXPECT_LE(o.ids.size(), 1u);  // at most the token of the held step
  }
  EXPECT_EQ(aborted, 5);
  EXPECT_EQ(engine->Submit(Plain({1}, 1, &extra)).status().code(), StatusCode::kResourceExhausted);
  engine->Shutdown();  // idempotent
}

TEST(EngineQueueTest, FailedStepEndsItsRequestsWithError) {
  ScriptedModel* model = nullptr;
  auto engine = Engine::Start(testing::ScriptedScheduler(&model, 50, Successor, 64, 16, {}), 32);
  model->FailWith(Status::Internal("device lost"));
  std::shared_ptr<EventStream> s;
  ASSERT_TRUE(engine->Submit(Plain({1, 2}, 5, &s)).ok());
  Outcome o = Collect(s);
  EXPECT_EQ(o.final_event.finish, FinishReason::kError);
  EXPECT_EQ(o.final_event.error.code(), StatusCode::kInternal);
  EXPECT_NE(o.final_event.error.message().find("device lost"), std::string::npos);
  EXPECT_EQ(engine->WaitIdle().kv.blocks_used, 0);
  model->FailWith(Status::OK());
  ASSERT_TRUE(engine->Submit(Plain({1, 2}, 2, &s)).ok());
  EXPECT_EQ(Collect(s).ids, (std::vector<int32_t>{3, 4}));
}

}  // namespace
}  // namespace llmhost::scheduler_test
