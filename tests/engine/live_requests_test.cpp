// The engine's snapshot of the requests it holds (the status page's live
// requests), stepped one Forward at a time through the scripted model's gate.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "engine/engine_test_util.h"

namespace llmhost::live_requests_test {
namespace {

using testing::Collect;
using testing::ScriptedModel;

int32_t Successor(int64_t, int32_t tok) { return (tok + 1) % 50; }

GenerationRequest Plain(std::vector<int32_t> prompt, int64_t max_tokens, std::string request_id,
                        std::shared_ptr<EventStream>* s) {
  GenerationRequest r;
  r.prompt = std::move(prompt);
  r.sampling.temperature = 0;
  r.max_tokens = max_tokens;
  r.request_id = std::move(request_id);
  *s = std::make_shared<EventStream>();
  r.on_event = (*s)->Callback();
  return r;
}

const LiveRequest* Find(const LiveRequests& live, uint64_t id) {
  for (const LiveRequest& r : live.requests) {
    if (r.id == id) return &r;
  }
  return nullptr;
}

TEST(LiveRequestsTest, ShowPrefillProgressThenDecodeSpeedThenGo) {
  ScriptedModel* model = nullptr;
  SchedulerOptions so;
  so.max_running = 1;
  so.prefill_chunk_tokens = 4;
  auto engine = Engine::Start(testing::ScriptedScheduler(&model, 50, Successor, 64, 4, so), 8);
  model->Hold();
  std::shared_ptr<EventStream> sa, sb;
  auto a = engine->Submit(Plain(std::vector<int32_t>(10, 7), 20, "req-a", &sa));
  ASSERT_TRUE(a.ok());
  model->WaitEntered(1);  // A's first chunk runs (held)
  auto b = engine->Submit(Plain({1, 2, 3}, 2, "", &sb));
  ASSERT_TRUE(b.ok());

  LiveRequests live = engine->Live();
  EXPECT_EQ(live.total, 2);
  ASSERT_EQ(live.requests.size(), 2u);
  const LiveRequest* ra = Find(live, *a);
  const LiveRequest* rb = Find(live, *b);
  ASSERT_TRUE(ra && rb);
  EXPECT_EQ(ra->request_id, "req-a");
  EXPECT_EQ(ra->state, LiveState::kPrefilling);
  EXPECT_EQ(ra->prompt_tokens, 10);
  EXPECT_EQ(ra->prompt_done, 0);
  EXPECT_EQ(rb->state, LiveState::kQueued);  // max_running 1
  EXPECT_EQ(rb->prompt_tokens, 3);
  EXPECT_EQ(rb->request_id, "");

  model->Allow(1);  // chunk 1 done: 4 of 10 in
  model->WaitEntered(2);
  live = engine->Live();
  ra = Find(live, *a);
  ASSERT_TRUE(ra);
  EXPECT_EQ(ra->state, LiveState::kPrefilling);
  EXPECT_EQ(ra->prompt_done, 4);
  EXPECT_EQ(ra->generated, 0);
  EXPECT_FALSE(ra->TtftSeconds());
  EXPECT_EQ(ra->DecodeTokensPerSecond(LiveRequest::Clock::now()), 0);

  model->Allow(2);  // chunks 2 and 3: the prompt is in, the first token sampled
  model->WaitEntered(4);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  model->Allow(3);  // three decode steps
  model->WaitEntered(7);
  live = engine->Live();
  ra = Find(live, *a);
  ASSERT_TRUE(ra);
  EXPECT_EQ(ra->state, LiveState::kGenerating);
  EXPECT_EQ(ra->prompt_done, 10);
  EXPECT_EQ(ra->generated, 4);
  EXPECT_EQ(ra->decode_tokens, 3);
  ASSERT_TRUE(ra->TtftSeconds());
  const auto now = LiveRequest::Clock::now();
  EXPECT_GE(ra->AgeSeconds(now), *ra->TtftSeconds());
  // 3 tokens over at least the 20 ms slept after the first one.
  const double tps = ra->DecodeTokensPerSecond(now);
  EXPECT_GT(tps, 0);
  EXPECT_LE(tps, 3 / 0.02);

  model->Open();
  EXPECT_EQ(Collect(sa).ids.size(), 20u);
  EXPECT_EQ(Collect(sb).ids.size(), 2u);
  engine->WaitIdle();
  live = engine->Live();
  EXPECT_EQ(live.total, 0);
  EXPECT_TRUE(live.requests.empty());
}

TEST(LiveRequestsTest, ChoicesShareOneEntryAndTheListIsCapped) {
  ScriptedModel* model = nullptr;
  auto sched = testing::ScriptedScheduler(&model, 50, Successor, 64, 4, SchedulerOptions{});
  std::shared_ptr<EventStream> s1, s2, s3;
  GenerationRequest three = Plain({1, 2}, 5, "", &s1);
  three.choices = 3;
  sched->Enqueue(1, std::move(three));
  sched->Enqueue(2, Plain({4}, 5, "", &s2));
  sched->Enqueue(3, Plain({5}, 5, "", &s3));
  sched->Step();  // every prompt in, a first token each (and each choice)
  sched->Step();

  std::vector<LiveRequest> out;
  EXPECT_EQ(sched->CollectLive(&out, 10), 3);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].id, 1u);
  EXPECT_EQ(out[0].generated, 3 * 2);
  EXPECT_EQ(out[0].decode_tokens, 3 * 1);
  EXPECT_EQ(out[1].generated, 2);

  // Capped at 2: the count still covers all three, once each.
  EXPECT_EQ(sched->CollectLive(&out, 2), 3);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].id, 2u);
  EXPECT_EQ(sched->CollectLive(&out, 0), 3);
  EXPECT_TRUE(out.empty());
}

TEST(LiveRequestsTest, StateNames) {
  EXPECT_STREQ(LiveStateName(LiveState::kQueued), "queued");
  EXPECT_STREQ(LiveStateName(LiveState::kPrefilling), "prefilling");
  EXPECT_STREQ(LiveStateName(LiveState::kGenerating), "generating");
}

}  // namespace
}  // namespace llmhost::live_requests_test
