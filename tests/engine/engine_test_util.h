// Helpers of the engine tests: a scripted StepModel (logits chosen by the
// test, with a gate that can hold the executor inside a step), a fixture
// model loader, result helpers.
#pragma once

#include <gtest/gtest.h>

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/device.h"
#include "engine/engine.h"
#include "engine/event_stream.h"
#include "engine/scheduler.h"
#include "engine/step_model.h"
#include "model/generate.h"
#include "model/model.h"
#include "model/model_test_util.h"

namespace llmhost::testing {

// Logits rows are one-hot (10 at the chosen id, 0 elsewhere) at
// next(position of the row's token, that token). Keeps Model::Forward's
// contract on blocks: all-or-nothing reservation, lengths advanced.
class ScriptedModel : public StepModel {
 public:
  using NextFn = std::function<int32_t(int64_t position, int32_t token)>;
  ScriptedModel(int64_t vocab, NextFn next) : vocab_(vocab), next_(std::move(next)) {}

  int64_t vocab_size() const override { return vocab_; }

  Status Forward(std::span<const ForwardItem> items, KvCache& cache, ForwardOutput* out) override {
    {
      std::unique_lock<std::mutex> lk(mu_);
      ++entered_;
      cv_.notify_all();
      cv_.wait(lk, [this] { return !held_ || allowed_ > 0; });
      if (held_) --allowed_;
      std::vector<int64_t> sizes;
      for (const ForwardItem& it : items) sizes.push_back(static_cast<int64_t>(it.tokens.size()));
      calls_.push_back(sizes);
      if (!fail_.ok()) return fail_;
    }
    int64_t need = 0;
    for (const ForwardItem& it : items) {
      need += cache.BlocksNeeded(*it.seq, it.seq->length + static_cast<int64_t>(it.tokens.size()));
    }
    if (need > cache.allocator().free_blocks()) return Status::ResourceExhausted("scripted: no blocks");
    out->vocab = vocab_;
    out->logits.clear();
    out->first_row.clear();
    out->n_rows.clear();
    for (const ForwardItem& it : items) {
      const int64_t n = static_cast<int64_t>(it.tokens.size());
      RETURN_IF_ERROR(cache.Reserve(it.seq, it.seq->length + n));
      if (it.logits == LogitsRows::kNone) {
        out->first_row.push_back(-1);
        out->n_rows.push_back(0);
      } else {
        out->first_row.push_back(static_cast<int64_t>(out->logits.size()) / vocab_);
        out->n_rows.push_back(1);
        const size_t base = out->logits.size();
        out->logits.resize(base + static_cast<size_t>(vocab_));  // zeros
        out->logits[base + static_cast<size_t>(next_(it.seq->length + n - 1, it.tokens.back()))] = 10.0f;
      }
      it.seq->length += n;
    }
    return Status::OK();
  }

  // Holds every later Forward at its start until Open().
  void Hold() {
    std::lock_guard<std::mutex> lk(mu_);
    held_ = true;
  }
  void Open() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      held_ = false;
    }
    cv_.notify_all();
  }
  // While held, lets `n` more Forward calls through.
  void Allow(int n) {
    {
      std::lock_guard<std::mutex> lk(mu_);
      allowed_ += n;
    }
    cv_.notify_all();
  }
  // Waits until `n` Forward calls have started.
  void WaitEntered(int n) {
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait(lk, [&] { return entered_ >= n; });
  }
  void FailWith(Status st) {
    std::lock_guard<std::mutex> lk(mu_);
    fail_ = std::move(st);
  }
  // Per Forward call: the token count of each item.
  std::vector<std::vector<int64_t>> calls() {
    std::lock_guard<std::mutex> lk(mu_);
    return calls_;
  }

 private:
  int64_t vocab_;
  NextFn next_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool held_ = false;
  int allowed_ = 0;  // Forward calls let through while held
  int entered_ = 0;
  Status fail_;
  std::vector<std::vector<int64_t>> calls_;
};

// A scheduler over a ScriptedModel with a cache of `blocks` blocks of `bs`.
inline std::unique_ptr<Scheduler> ScriptedScheduler(ScriptedModel** model_out, int64_t vocab,
                                                    ScriptedModel::NextFn next, int64_t blocks,
                                                    int64_t bs, SchedulerOptions opt,
                                                    const Tokenizer* tokenizer = nullptr) {
  static CpuBackend backend(nullptr);
  auto model = std::make_unique<ScriptedModel>(vocab, std::move(next));
  *model_out = model.get();
  auto cache = KvCache::Create(&backend, 1, 1, bs, blocks);
  EXPECT_TRUE(cache.ok());
  Sha256Digest fp{};
  return std::make_unique<Scheduler>(std::move(model), std::move(cache).value(), fp, tokenizer,
                                     std::move(opt));
}

struct Fixture {
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tokenizer;
};

// Loads a fixture model (kFast precision unless asked) with its tokenizer, on
// the CPU or the first GPU (the caller skips where there is none).
inline bool LoadFixture(const std::string& name, Fixture* f, DeviceKind device = DeviceKind::kCpu,
                        Precision precision = Precision::kFast) {
  const std::string path = ModelsRoot() + "/" + name;
  if (!FileExists(path)) return false;
  DeviceSpec spec;
  spec.kind = device;
  auto b = MakeBackend(spec, precision, &ThreadPool::Default());
  EXPECT_TRUE(b.ok()) << b.status().ToString();
  if (!b.ok()) return false;
  f->backend = std::move(b).value();
  auto m = Model::Load(path, f->backend.get());
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  if (!m.ok()) return false;
  f->model = std::move(m).value();
  auto t = Tokenizer::FromPath(path);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  if (!t.ok()) return false;
  f->tokenizer = std::move(t).value();
  return true;
}

// Deterministic pseudo-random prompt ids in [3, vocab - 13).
inline std::vector<int32_t> PromptIds(int64_t vocab, int n, uint32_t seed) {
  std::vector<int32_t> v;
  uint32_t x = seed * 2654435761u + 1;
  for (int i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    v.push_back(static_cast<int32_t>((x >> 8) % static_cast<uint32_t>(vocab - 16)) + 3);
  }
  return v;
}

// Greedy ids by the plain generation loop (model/generate.h): the reference.
inline std::vector<int32_t> ReferenceGreedy(Model& m, const std::vector<int32_t>& prompt, int n) {
  GenerateOptions o;
  o.max_tokens = n;
  o.temperature = 0;
  auto r = Generate(m, prompt, o, nullptr);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : std::vector<int32_t>{};
}

struct Outcome {
  std::vector<int32_t> ids;
  std::string text;
  std::vector<RequestEvent> events;
  RequestEvent final_event;
};

inline Outcome Collect(const std::shared_ptr<EventStream>& s) {
  Outcome o;
  o.events = s->WaitAll();
  for (const RequestEvent& e : o.events) {
    o.ids.insert(o.ids.end(), e.token_ids.begin(), e.token_ids.end());
    o.text += e.text;
  }
  if (!o.events.empty()) o.final_event = o.events.back();
  return o;
}

// A greedy request that ignores EOS (fixed length), with its stream.
inline GenerationRequest Greedy(const std::vector<int32_t>& prompt, int64_t max_tokens,
                                std::shared_ptr<EventStream>* stream) {
  GenerationRequest r;
  r.prompt = prompt;
  r.sampling.temperature = 0;
  r.max_tokens = max_tokens;
  r.ignore_eos = true;
  *stream = std::make_shared<EventStream>();
  r.on_event = (*stream)->Callback();
  return r;
}

}  // namespace llmhost::testing
