// EmbedExecutor with a fake EmbeddingModel: concurrent jobs share one call,
// the token budget splits batches (and jobs), results reach the right job,
// errors fail the jobs of their call, Stop fails waiting jobs.
#include "engine/embed_executor.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace llmhost::embed_executor_test {
namespace {

// Embeds an input as {first id, size}; scores it as its first id. The first
// call can be held until Release() so that jobs pile up behind it.
class FakeModel final : public EmbeddingModel {
 public:
  EmbeddingKind kind() const override { return EmbeddingKind::kEmbedder; }
  int64_t dim() const override { return 2; }
  int64_t max_tokens() const override { return 1000; }
  int64_t vocab() const override { return 1000; }
  bool normalized() const override { return false; }
  EmbeddingInput Tokenize(std::string_view, bool) const override { return {}; }
  EmbeddingInput TokenizePair(std::string_view, std::string_view) const override { return {}; }

  Result<std::vector<std::vector<float>>> Embed(std::span<const EmbeddingInput> inputs) override {
    RETURN_IF_ERROR(Enter(inputs));
    std::vector<std::vector<float>> out;
    for (const EmbeddingInput& in : inputs) {
      out.push_back({static_cast<float>(in.ids[0]), static_cast<float>(in.ids.size())});
    }
    return out;
  }
  Result<std::vector<float>> Score(std::span<const EmbeddingInput> inputs) override {
    RETURN_IF_ERROR(Enter(inputs));
    std::vector<float> out;
    for (const EmbeddingInput& in : inputs) out.push_back(static_cast<float>(in.ids[0]));
    return out;
  }

  void Hold() { held_ = true; }
  void WaitUntilHeld() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return waiting_; });
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    held_ = false;
    cv_.notify_all();
  }
  std::vector<size_t> call_sizes() {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }
  int fail_id = -1;  // an input starting with this id fails its call

 private:
  Status Enter(std::span<const EmbeddingInput> inputs) {
    std::unique_lock<std::mutex> lock(mu_);
    calls_.push_back(inputs.size());
    waiting_ = true;
    cv_.notify_all();
    cv_.wait(lock, [&] { return !held_; });
    waiting_ = false;
    for (const EmbeddingInput& in : inputs) {
      if (in.ids[0] == fail_id) return Status::InvalidArgument("bad input");
    }
    return Status::OK();
  }
  std::mutex mu_;
  std::condition_variable cv_;
  bool held_ = false, waiting_ = false;
  std::vector<size_t> calls_;
};

EmbeddingInput Input(int32_t first, size_t tokens) {
  EmbeddingInput in;
  in.ids.assign(tokens, first);
  return in;
}

TEST(EmbedExecutorTest, ConcurrentJobsShareOneCall) {
  FakeModel model;
  EmbedExecutor ex(&model, {});
  model.Hold();
  auto first = ex.Embed({Input(1, 3)});
  model.WaitUntilHeld();  // the first call runs alone; two more jobs wait behind it
  auto second = ex.Embed({Input(2, 4), Input(3, 5)});
  auto third = ex.Embed({Input(4, 6)});
  EXPECT_EQ(ex.active_jobs(), 3);
  model.Release();
  auto a = first.get(), b = second.get(), c = third.get();
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(model.call_sizes(), (std::vector<size_t>{1, 3}));
  EXPECT_EQ(*a, (std::vector<std::vector<float>>{{1, 3}}));
  EXPECT_EQ(*b, (std::vector<std::vector<float>>{{2, 4}, {3, 5}}));
  EXPECT_EQ(*c, (std::vector<std::vector<float>>{{4, 6}}));
  EXPECT_EQ(ex.active_jobs(), 0);
}

TEST(EmbedExecutorTest, TheTokenBudgetSplitsBatchesAndJobs) {
  FakeModel model;
  EmbedExecutor ex(&model, {.max_batch_tokens = 10});
  model.Hold();
  auto first = ex.Embed({Input(1, 1)});
  model.WaitUntilHeld();
  // 6 + 6 > 10: the job's inputs go in two calls; 20 exceeds the budget alone.
  auto split = ex.Embed({Input(2, 6), Input(3, 6)});
  auto big = ex.Embed({Input(4, 20)});
  model.Release();
  auto s = split.get(), b = big.get();
  ASSERT_TRUE(s.ok() && b.ok());
  EXPECT_EQ(*s, (std::vector<std::vector<float>>{{2, 6}, {3, 6}}));
  EXPECT_EQ(*b, (std::vector<std::vector<float>>{{4, 20}}));
  EXPECT_EQ(model.call_sizes(), (std::vector<size_t>{1, 1, 1, 1}));
}

// With a granularity (a decoder's KV block), an input costs whole blocks: 1
// token costs 64, so a budget of 128 takes two one-token inputs a call.
TEST(EmbedExecutorTest, InputsCostWholeGranules) {
  FakeModel model;
  EmbedExecutor ex(&model, {.max_batch_tokens = 128, .token_granularity = 64});
  model.Hold();
  auto first = ex.Embed({Input(1, 1)});
  model.WaitUntilHeld();
  auto five = ex.Embed({Input(2, 1), Input(3, 1), Input(4, 1), Input(5, 1), Input(6, 65)});
  model.Release();
  auto f = five.get();
  ASSERT_TRUE(first.get().ok() && f.ok());
  // 64 + 64; 64 + 64; then 65 tokens cost 128: alone.
  EXPECT_EQ(model.call_sizes(), (std::vector<size_t>{1, 2, 2, 1}));
  EXPECT_EQ(f->size(), 5u);
}

TEST(EmbedExecutorTest, ScoreJobsBatchApartFromEmbedJobs) {
  FakeModel model;
  EmbedExecutor ex(&model, {});
  model.Hold();
  auto first = ex.Score({Input(7, 2)});
  model.WaitUntilHeld();
  auto embed = ex.Embed({Input(1, 2)});
  auto score = ex.Score({Input(8, 2), Input(9, 2)});
  model.Release();
  auto f = first.get(), s = score.get();
  ASSERT_TRUE(f.ok() && s.ok() && embed.get().ok());
  EXPECT_EQ(*f, std::vector<float>{7});
  EXPECT_EQ(*s, (std::vector<float>{8, 9}));
  EXPECT_EQ(model.call_sizes(), (std::vector<size_t>{1, 1, 2}));
}

TEST(EmbedExecutorTest, AnErrorFailsTheJobsOfItsCallOnly) {
  FakeModel model;
  model.fail_id = 5;
  EmbedExecutor ex(&model, {});
  model.Hold();
  auto first = ex.Embed({Input(1, 1)});
  model.WaitUntilHeld();
  auto good = ex.Embed({Input(2, 1)});
  auto bad = ex.Embed({Input(5, 1)});
  model.Release();
  EXPECT_TRUE(first.get().ok());
  EXPECT_FALSE(good.get().ok()) << "shared the failed call";
  auto b = bad.get();
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kInvalidArgument);
  auto later = ex.Embed({Input(3, 1)}).get();
  EXPECT_TRUE(later.ok());
  EXPECT_EQ(ex.active_jobs(), 0);
}

TEST(EmbedExecutorTest, StopFailsWaitingJobsAndLaterOnes) {
  FakeModel model;
  auto ex = std::make_unique<EmbedExecutor>(&model, EmbedExecutorOptions{});
  model.Hold();
  auto running = ex->Embed({Input(1, 1)});
  model.WaitUntilHeld();
  auto waiting = ex->Score({Input(2, 1)});
  std::thread stopper([&] { ex->Stop(); });
  // The waiting job fails while the running call still holds the thread.
  auto w = waiting.get();
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find("unloaded"), std::string::npos);
  model.Release();
  stopper.join();
  EXPECT_TRUE(running.get().ok()) << "the running call finishes";
  EXPECT_FALSE(ex->Embed({Input(3, 1)}).get().ok());
  EXPECT_EQ(ex->active_jobs(), 0);
  ex.reset();
}

TEST(EmbedExecutorTest, AnEmptyJobResolvesAtOnce) {
  FakeModel model;
  EmbedExecutor ex(&model, {});
  auto r = ex.Embed({}).get();
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->empty());
  EXPECT_TRUE(model.call_sizes().empty());
}

}  // namespace
}  // namespace llmhost::embed_executor_test
