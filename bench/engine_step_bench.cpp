// Host work per decode step (issue 14): what serving one stream adds to the
// forward pass. On a model directory (any device; a tiny hidden size on the CPU
// makes the forward pass cheap, so the host's share shows), one sequence with a
// --prompt-token prompt decodes --tokens tokens three ways:
//   bare    Model::Forward one token at a time and a host argmax (model_bench's loop)
//   sched   the Scheduler stepping one request (sampler, detokenizer, stop checks,
//           prefix index, events), driven on this thread
//   engine  the Engine: its executor thread, events through an EventStream read here
// Per generated token (after kWarmSteps untimed ones): wall ms, the forward
// pass's ms inside it (timed around StepModel::Forward), and the host's µs
// outside the forward pass; "vs bare" is the step minus bare's. Each figure is
// the best of --reps runs. Settings: greedy, and temperature 1 with top_p 0.95
// (seeded). --store attaches a hot-only
// block store of 4 GiB, as serve's default hot tier: the prompt's full blocks are
// then copied out of the cache by the block saver while the decode steps run
// (each run's prompt is new, so every run saves).
//
// With --sequences N > 1, N requests decode together and the figures are per
// step of N tokens: "sched" (the rows drawn one after another on the stepping
// thread) against "sched+pool" (drawn over ThreadPool::Default(), as serve's
// scheduler does: SchedulerOptions::sample_pool).
//
// The backend computes at Precision::kAuto, serve's default; the KV cache holds the
// model's 16-bit type, as serve's does.
//
// Usage: engine_step_bench --model DIR [--device cpu|cuda] [--prompt-tokens 512]
//                          [--tokens 128] [--reps 3] [--store] [--sequences 1]
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/device.h"
#include "bench_util.h"
#include "engine/engine.h"
#include "engine/event_stream.h"
#include "engine/scheduler.h"
#include "engine/step_model.h"
#include "kv/fingerprint.h"
#include "kv/tiered_block_store.h"
#include "model/generate.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"
#include "util/thread_pool.h"

namespace llmhost {
namespace {

using bench::Now;

struct Options {
  std::string model, device = "cpu";
  int prompt = 512, tokens = 128, reps = 3, sequences = 1;
  bool store = false;
};

void Check(const Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "engine_step_bench: %s: %s\n", what, s.ToString().c_str());
    std::exit(1);
  }
}

// Decode steps left out of the timing: the first steps of a new cache run as plain
// launches and record the device graphs (backend/cuda/graph_cache.h).
constexpr int kWarmSteps = 3;

// The model's forward pass, timed: call 0 is the prompt (and samples token 1),
// call k samples token k + 1; calls after kWarmSteps add to decode_s.
class TimedStep : public StepModel {
 public:
  explicit TimedStep(Model* m) : inner_(m) {}
  int64_t vocab_size() const override { return inner_.vocab_size(); }
  Status Forward(std::span<const ForwardItem> items, KvCache& cache, ForwardOutput* out) override {
    const double t0 = Now();
    Status s = inner_.Forward(items, cache, out);
    if (calls_++ > kWarmSteps) decode_s_.store(decode_s_.load() + (Now() - t0));
    return s;
  }
  double decode_seconds() const { return decode_s_.load(); }
  // Every later call is timed (from the calling thread, between steps).
  void TimeFromNow() {
    decode_s_.store(0);
    calls_ = kWarmSteps + 1;
  }

 private:
  ModelStep inner_;
  int calls_ = 0;
  std::atomic<double> decode_s_{0};
};

struct PerToken {
  double step_s = std::numeric_limits<double>::infinity();  // wall per generated token
  double forward_s = 0;                                    // of which the forward pass
  void Keep(double step, double forward) {
    if (step < step_s) step_s = step, forward_s = forward;
  }
};

std::vector<int32_t> Prompt(int n, int64_t vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> pick(3, static_cast<int32_t>(vocab - 4));
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (int32_t& id : ids) id = pick(rng);
  return ids;
}

struct Bench {
  Model* model;
  const Tokenizer* tokenizer;
  const Options& o;
  std::shared_ptr<BlockStore> store;  // null: none
  mutable uint32_t prompts = 0;       // a new prompt per run: nothing is found cached

  std::vector<int32_t> NextPrompt() const { return Prompt(o.prompt, model->vocab_size(), 7 + prompts++); }

  std::unique_ptr<KvCache> Cache() const {
    const int64_t blocks =
        ((o.prompt + o.tokens + 2 + kDefaultKvBlockSize - 1) / kDefaultKvBlockSize + 1) * o.sequences;
    auto cache = model->CreateKvCache(blocks, kDefaultKvBlockSize, model->Native16BitType());
    Check(cache.status(), "kv cache");
    return std::move(*cache);
  }

  // A scheduler as Engine::Create builds one for serve (prefix caching on; the block store with --store).
  std::unique_ptr<Scheduler> MakeScheduler(TimedStep** timed, bool pooled = false) const {
    auto step = std::make_unique<TimedStep>(model);
    *timed = step.get();
    auto fp = SampledModelFingerprint(*model, kDefaultKvBlockSize);
    Check(fp.status(), "fingerprint");
    SchedulerOptions so;
    so.eos_token_ids = EosTokenIds(*model, tokenizer);
    so.max_running = o.sequences;
    if (pooled) so.sample_pool = &ThreadPool::Default();
    if (store) {
      so.block_store = store;
      so.model_id = "bench";
      so.store_fingerprint = [f = *fp] { return PrefixCache::StoreFingerprint{false, f}; };
    }
    return std::make_unique<Scheduler>(std::move(step), Cache(), *fp, tokenizer, std::move(so));
  }

  GenerationRequest Request(const SamplingParams& p) const {
    GenerationRequest r;
    r.prompt = NextPrompt();
    r.sampling = p;
    r.max_tokens = o.tokens;
    r.ignore_eos = true;
    return r;
  }

  PerToken Bare() const {
    PerToken best;
    for (int rep = 0; rep < o.reps; ++rep) {
      std::unique_ptr<KvCache> cache = Cache();
      KvSequence seq;
      ForwardOutput out;
      const std::vector<int32_t> prompt = NextPrompt();
      ForwardItem item{&seq, prompt, LogitsRows::kLast, static_cast<int64_t>(prompt.size())};
      Check(model->Forward({&item, 1}, *cache, &out), "prompt");
      int32_t next = 0;
      double t0 = Now();
      for (int i = 1; i < o.tokens; ++i) {
        if (i == kWarmSteps + 1) t0 = Now();
        const float* row = out.Row(0, 0);
        next = static_cast<int32_t>(std::max_element(row, row + out.vocab) - row);
        item.tokens = {&next, 1};
        Check(model->Forward({&item, 1}, *cache, &out), "decode");
      }
      const double per = (Now() - t0) / (o.tokens - 1 - kWarmSteps);
      best.Keep(per, per);
      cache->Release(&seq);
    }
    return best;
  }

  // Per token with one sequence; per step of o.sequences tokens with more.
  PerToken Sched(const SamplingParams& p, bool pooled = false) const {
    PerToken best;
    const int64_t seqs = o.sequences;
    for (int rep = 0; rep < o.reps; ++rep) {
      TimedStep* timed = nullptr;
      std::unique_ptr<Scheduler> s = MakeScheduler(&timed, pooled);
      int64_t generated = 0;
      for (int64_t q = 0; q < seqs; ++q) {
        GenerationRequest r = Request(p);
        r.on_event = [&](RequestEvent ev) { generated += static_cast<int64_t>(ev.token_ids.size()); };
        s->Enqueue(static_cast<uint64_t>(q + 1), std::move(r));
      }
      // The prompts, the first tokens, the warm steps.
      while (generated < (kWarmSteps + 1) * seqs) s->Step();
      const int64_t first = generated;
      timed->TimeFromNow();
      const double t0 = Now();
      while (s->HasWork()) s->Step();
      const double n = static_cast<double>(generated - first) / static_cast<double>(seqs);
      best.Keep((Now() - t0) / n, timed->decode_seconds() / n);
    }
    return best;
  }

  PerToken Threaded(const SamplingParams& p) const {
    PerToken best;
    for (int rep = 0; rep < o.reps; ++rep) {
      TimedStep* timed = nullptr;
      std::unique_ptr<Engine> e = Engine::Start(MakeScheduler(&timed), 32);
      auto stream = std::make_shared<EventStream>();
      GenerationRequest r = Request(p);
      r.on_event = stream->Callback();
      Check(e->Submit(std::move(r)).status(), "submit");
      double t0 = 0, t1 = 0;
      int64_t generated = 0, first = 0;
      while (auto ev = stream->Next()) {
        generated += static_cast<int64_t>(ev->token_ids.size());
        if (t0 == 0 && generated >= kWarmSteps + 1) t0 = Now(), first = generated;
        t1 = Now();
      }
      e->Shutdown();
      const double n = static_cast<double>(generated - first);
      best.Keep((t1 - t0) / n, timed->decode_seconds() / n);
    }
    return best;
  }
};

void Row(const char* setting, const char* path, const PerToken& t, const PerToken& bare) {
  std::printf("| %s | %s | %.3f | %.3f | %.1f | %+.1f |\n", setting, path, t.step_s * 1e3, t.forward_s * 1e3,
              (t.step_s - t.forward_s) * 1e6, (t.step_s - bare.step_s) * 1e6);
}

int Run(const Options& o) {
  auto spec = ParseDevice(o.device);
  Check(spec.status(), "--device");
  auto backend = MakeBackend(*spec, Precision::kAuto, &ThreadPool::Default());
  Check(backend.status(), o.device.c_str());
  auto model = Model::Load(o.model, backend->get());
  Check(model.status(), o.model.c_str());
  auto tok = Tokenizer::FromPath(o.model);
  Check(tok.status(), "tokenizer");
  Bench b{model->get(), tok->get(), o, nullptr};
  if (o.store) {
    TieredStoreOptions so;
    so.mode = CacheMode::kHotOnly;
    so.hot_max_bytes = uint64_t{4} << 30;
    auto store = TieredBlockStore::Open(so);
    Check(store.status(), "block store");
    b.store = std::move(*store);
  }
  std::printf("engine_step_bench: %s, vocab %lld, hidden %lld, %s, %d prompt tokens, %d generated, best of %d%s, "
              "%d sequence(s), %d threads\n\n",
              o.model.c_str(), static_cast<long long>((*model)->vocab_size()),
              static_cast<long long>((*model)->spec().hidden), o.device.c_str(), o.prompt, o.tokens, o.reps,
              o.store ? ", hot block store" : "", o.sequences, ThreadPool::Default().size());
  SamplingParams greedy;
  greedy.temperature = 0;
  SamplingParams top_p;
  top_p.temperature = 1;
  top_p.top_p = 0.95;
  top_p.seed = 1;
  if (o.sequences > 1) {
    std::printf("| setting | path | ms / step | forward ms | host µs outside forward | µs vs sched |\n");
    std::printf("|---|---|---|---|---|---|\n");
    for (const auto& [name, p] : {std::pair{"greedy", greedy}, std::pair{"T=1 top_p=0.95", top_p}}) {
      const PerToken alone = b.Sched(p);
      Row(name, "sched", alone, alone);
      Row(name, "sched+pool", b.Sched(p, true), alone);
    }
    return 0;
  }
  std::printf("| setting | path | ms / token | forward ms | host µs outside forward | µs vs bare |\n");
  std::printf("|---|---|---|---|---|---|\n");
  const PerToken bare = b.Bare();
  Row("greedy", "bare", bare, bare);
  for (const auto& [name, p] : {std::pair{"greedy", greedy}, std::pair{"T=1 top_p=0.95", top_p}}) {
    Row(name, "sched", b.Sched(p), bare);
    Row(name, "engine", b.Threaded(p), bare);
  }
  return 0;
}

}  // namespace
}  // namespace llmhost

int main(int argc, char** argv) {
  llmhost::Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "engine_step_bench: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--model") o.model = value();
    else if (a == "--device") o.device = value();
    else if (a == "--prompt-tokens") o.prompt = std::atoi(value().c_str());
    else if (a == "--tokens") o.tokens = std::atoi(value().c_str());
    else if (a == "--reps") o.reps = std::max(1, std::atoi(value().c_str()));
    else if (a == "--store") o.store = true;
    else if (a == "--sequences") o.sequences = std::max(1, std::atoi(value().c_str()));
    else {
      std::fprintf(stderr, "engine_step_bench: unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  if (o.model.empty() || o.prompt < 1 || o.tokens < llmhost::kWarmSteps + 3) {
    std::fprintf(stderr, "usage: engine_step_bench --model DIR [--device cpu|cuda] [--prompt-tokens 512] "
                         "[--tokens 128 (>= 6)] [--reps 3] [--store] [--sequences 1]\n");
    return 2;
  }
  return llmhost::Run(o);
}
