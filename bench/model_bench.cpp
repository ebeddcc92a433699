// End-to-end speed of a Llama-1B-shaped model (synthesized by
// bench/run_model_bench.sh: hidden 2048, 16 layers, 32 heads, 8 KV heads,
// FFN 8192, vocab 32000, tied embeddings) through Model::Forward on the CPU
// backend with every core (ThreadPool::Default()), per weight format and
// precision (auto: serve's default; fast; fast-int8 for quantized weights;
// fast-bf16 where the CPU has AMX):
//
//   prefill  tok/s of one 512-token prompt (one Forward call, last logits)
//   decode   tok/s at batch 1 (one sequence, one token per Forward) and at
//            batch 8 (8 sequences, one Forward per step with 8 items), after
//            a 16-token prompt each; greedy next tokens
//   long     with --long-context N: decode tok/s at batch 1 after an N-token
//            prompt, where attention over the context is a share of each step
//   efficiency = weight bytes read per token (Model::weight_bytes()) x
//            decode tok/s / the machine's read bandwidth (measured in the
//            same run); at batch 8 per step (the weights are read once for 8)
//   ratios against llama.cpp's CPU figures on this machine kind (issue 3):
//            bf16 vs BF16, mlx8 vs Q8_0, mlx4 g64 vs Q4_0 (same bytes/weight)
//   memory   growth of the resident set from before loading to after loading
//            (weights are mapped, not read: small) and to after the run (the
//            mapped weights paged in, the KV cache, the activation workspace),
//            next to the weight bytes
//
// Every figure is the best of --reps timed repetitions (the machine is
// shared); the load average is printed at start and end. A second table
// gives the same rates by process CPU time x threads, an estimate of what
// the run would give on an unshared machine.
//
// Usage: model_bench --models DIR [--formats bf16,mlx8,mlx4] [--reps N]
//                    [--prefill-reps N] [--prefill-tokens N (512; <= 4096, the models' context)]
//                    [--steps N] [--no-int8] [--long-context N (0: skipped)]
//                    [--precisions auto,fast,fast-int8,fast-bf16 (this order, every format)]
//                    [--device cpu|cuda|cuda:N (default cpu)] [--tensor-parallel N (1: the
//                    model split over N GPUs from --device)]
//                    [--prefix NAME (llama1b)] [--batch N (8)] [--prompt N (16: decode runs' prompts)]
//                    [--kv-dtype auto|f32|bf16|f16|fp8 (auto: the model's 16-bit type, as serve's)]
//                    [--phases decode1,decode-batch,long,prefill (all; fewer for a profiler)]
//                    [--host-argmax (decode steps copy their logits; the host picks)]
//                    [--top-p P (decode steps draw at temperature 1 with top_p P; greedy by default)]
//   DIR holds NAME-bf16, NAME-mlx8, NAME-mlx4 (run_model_bench.sh writes llama1b-*).
//        model_bench --random-config CONFIG.json [--arch llama] [--seed N (1)] [--group-size G (64)] ...
//   instead of --models / --prefix: each format's model generated in memory at
//   load (model/random_model.h), the same weights synth-model writes with these
//   options; no files.
//
// On a GPU (--device cuda) the bound is the GPU's own: its device-to-device
// copy bandwidth (bytes read + written per second, 1 GiB copies, best of 5)
// measured in the same run, and the llama.cpp ratios (CPU figures) are left
// out.
#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_features.h"
#include "backend/cpu/row_draw.h"
#include "backend/cpu/vec_math.h"
#include "backend/device.h"
#include "bench_util.h"
#include "model/model.h"
#include "model/random_model.h"
#include "util/file.h"
#include "util/thread_pool.h"

namespace llmhost {
namespace {

using bench::Now;

struct LlamaCppFigures {
  const char* name;
  double prefill, decode;  // tok/s, 2 threads, this machine kind (issue 3)
};

struct Format {
  std::string name;  // directory suffix
  LlamaCppFigures ref;
  bool by_default = true;  // run without --formats
};

const std::vector<Format>& Formats() {
  static const std::vector<Format> kFormats = {
      {"bf16", {"BF16", 68, 8.6}}, {"mlx8", {"Q8_0", 156, 22}}, {"mlx4", {"Q4_0", 151, 38}},
      // The Hugging Face layouts GPU servers load, against llama.cpp's formats of their bytes.
      {"fp8", {"Q8_0", 156, 22}, false},  {"gptq4", {"Q4_0", 151, 38}, false}, {"awq4", {"Q4_0", 151, 38}, false}};
  return kFormats;
}

struct Options {
  std::string models;
  std::string only;  // ",bf16,mlx4," or "" for all
  std::vector<std::string> precisions;  // in this order; empty: each format's default list
  std::string device = "cpu";
  int reps = 3;
  int prefill_reps = 2;
  int steps = 12;
  int prefill = 512;
  int prompt = 16;
  int long_context = 0;
  int batch = 8;
  int tensor_parallel = 1;  // --tensor-parallel N: the model split over N devices from --device
  std::string kv_dtype = "auto";  // --kv-dtype: the KV cache's type (auto: the model's 16-bit type, as serve's)
  bool int8 = true;
  std::string prefix = "llama1b";
  std::string random_config;  // --random-config: models generated at load instead of --models
  std::string arch = "llama";
  uint64_t seed = 1;
  int group_size = 64;
  bool matmul_shapes = false;
  bool host_argmax = false;  // --host-argmax: decode steps copy their logits and pick on the host (the old way)
  double top_p = 0;          // --top-p P: decode steps draw at temperature 1 with top_p P (0: greedy)
  std::string phases = "decode1,decode-batch,long,prefill";  // --phases: which runs (a profiler's window)
};

bool RunsPhase(const Options& o, const char* phase) {
  return ("," + o.phases + ",").find(std::string(",") + phase + ",") != std::string::npos;
}

// Tokens per second by the wall clock (best run), and by process CPU time
// x threads (best run): what the run would give with the cores to itself,
// as long as the pool keeps every thread busy (idle workers sleep, so they
// add no CPU time). The second is an estimate for a loaded machine.
struct Rate {
  double wall = 0, cpu = 0;
  void Add(double tokens, double wall_s, double cpu_s, int threads) {
    wall = std::max(wall, tokens / wall_s);
    cpu = std::max(cpu, tokens * threads / cpu_s);
  }
};

double CpuSeconds() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + 1e-6 * (u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

struct Figures {
  Rate prefill, decode1, decode8, decode_long;
  Rate long_prompt;  // the long-context run's prompt pass: prefill of --long-context tokens in one Forward
  uint64_t weight_bytes = 0, rss_load = 0, rss_end = 0, rss_before = 0;
  double load_s = 0;  // Model::Load (generation included for a random-weights model)
  ModelSpec spec;  // of the model run (--matmul-shapes takes its shapes)
};

uint64_t Mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xFF51AFD7ED558CCDull;
  x ^= x >> 33;
  return x;
}

// Deterministic prompt ids in [0, vocab - 3) (no special tokens).
std::vector<int32_t> PromptIds(int64_t n, int64_t vocab, uint64_t salt) {
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    ids[static_cast<size_t>(i)] = static_cast<int32_t>(Mix(salt * 1000003 + i) % (vocab - 3));
  }
  return ids;
}

int32_t ArgMax(const float* v, int64_t n) {
  const int64_t id = cpu::FiniteArgMax(v, n);
  return static_cast<int32_t>(id < 0 ? 0 : id);
}

// The decode steps' picks: greedy, or a draw at temperature 1 with --top-p
// at each sequence's next uniform (a generator per sequence, as a request's).
void NextPicks(const Options& o, std::vector<std::mt19937_64>& rngs, std::vector<RowPick>* picks) {
  for (size_t b = 0; b < picks->size(); ++b) {
    RowPick& p = (*picks)[b];
    if (o.top_p <= 0) continue;
    p.temperature = 1;
    p.top_p = o.top_p;
    p.u = static_cast<double>(rngs[b]() >> 11) * 0x1.0p-53;
  }
}

// A decode step's tokens as the engine takes them: where the step brought
// back its rows' picked tokens (ForwardOutput::picks, as the engine asks for
// plain rows), those; otherwise the host's draw from each row (cpu::RowDraw,
// the sampler's), on the pool's threads a row at a time, as the engine's
// sample pool draws a step. (std::max_element a row on one thread took
// ~15 ms a step at 128 rows of a 128K vocabulary: the benchmark's own cost,
// not the server's.)
void TakeTokens(const ForwardOutput& out, const std::vector<RowPick>& picks, std::vector<int32_t>* next) {
  const auto rows = static_cast<int64_t>(next->size());
  if (out.picked.size() == next->size()) {
    std::copy(out.picked.begin(), out.picked.end(), next->begin());
    return;
  }
  ThreadPool::Default().ParallelFor(rows, 1, [&](int64_t begin, int64_t end) {
    thread_local cpu::RowDraw draw;
    for (int64_t b = begin; b < end; ++b) {
      const auto row = static_cast<size_t>(b);
      (*next)[row] = draw.Pick(out.Row(row, 0), out.vocab, picks[row]);
    }
  });
}

void Check(const Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "model_bench: %s: %s\n", what, s.ToString().c_str());
    std::exit(1);
  }
}

// The most prompt tokens Decode runs in one Forward.
constexpr int64_t kPromptPassTokens = 16384;

// `batch` sequences, each prefilled with its own `prompt`-token prompt, then
// `reps` timed runs of `steps` decode steps (one Forward per step with every
// sequence); the best run's tokens per second.
Rate Decode(Model& model, KvCache& cache, int batch, int prompt, const Options& o, Rate* prompt_rate = nullptr) {
  const int64_t vocab = model.vocab_size();
  std::vector<KvSequence> seqs(static_cast<size_t>(batch));
  std::vector<std::vector<int32_t>> prompts;
  std::vector<int32_t> next(static_cast<size_t>(batch));
  std::vector<ForwardItem> items;
  ForwardOutput out;
  out.reused = true;  // as an engine's: one output for every step
  for (int b = 0; b < batch; ++b) prompts.push_back(PromptIds(prompt, vocab, 100 + b));
  for (int b = 0; b < batch; ++b) items.push_back({&seqs[b], prompts[b], LogitsRows::kLast, prompt});
  const double p0 = Now(), pc0 = CpuSeconds();
  if (static_cast<int64_t>(batch) * prompt <= kPromptPassTokens) {
    Check(model.Forward(items, cache, &out), "decode prompt");
    for (int b = 0; b < batch; ++b) next[b] = ArgMax(out.Row(b, 0), out.vocab);
  } else {
    // Many long prompts: passes of at most kPromptPassTokens (a pass's
    // activations grow with its tokens), as the engine chunks prefill.
    for (int b = 0; b < batch; ++b) {
      for (int at = 0; at < prompt; at += kPromptPassTokens) {
        const int len = std::min<int>(prompt - at, kPromptPassTokens);
        const ForwardItem piece{&seqs[b], std::span<const int32_t>(prompts[b]).subspan(at, len), LogitsRows::kLast,
                                prompt};
        Check(model.Forward({&piece, 1}, cache, &out), "decode prompt");
      }
      next[b] = ArgMax(out.Row(0, 0), out.vocab);
    }
  }
  if (prompt_rate) prompt_rate->Add(static_cast<double>(batch) * prompt, Now() - p0, CpuSeconds() - pc0, ThreadPool::Default().size());
  bool first = true;
  std::vector<RowPick> picks(static_cast<size_t>(batch));
  std::vector<std::mt19937_64> rngs;
  for (int b = 0; b < batch; ++b) rngs.emplace_back(1000 + b);
  auto step = [&] {
    if (!first) TakeTokens(out, picks, &next);
    first = false;
    NextPicks(o, rngs, &picks);
    out.picks.clear();  // decode steps: tokens, not logits, as the engine's plain rows (unless --host-argmax)
    if (!o.host_argmax) out.picks.assign(picks.begin(), picks.end());
    for (int b = 0; b < batch; ++b) items[b].tokens = {&next[b], 1};
    Check(model.Forward(items, cache, &out), "decode step");
  };
  step();  // warm-up (scratch sizes of this batch)
  Rate best;
  for (int rep = 0; rep < o.reps; ++rep) {
    const double t0 = Now(), c0 = CpuSeconds();
    for (int s = 0; s < o.steps; ++s) step();
    best.Add(batch * o.steps, Now() - t0, CpuSeconds() - c0, ThreadPool::Default().size());
  }
  for (KvSequence& s : seqs) cache.Release(&s);
  return best;
}

Rate Prefill(Model& model, KvCache& cache, const Options& o) {
  const std::vector<int32_t> ids = PromptIds(o.prefill, model.vocab_size(), 7);
  ForwardOutput out;
  Rate best;
  for (int rep = 0; rep < o.prefill_reps; ++rep) {
    KvSequence seq;
    ForwardItem item{&seq, ids, LogitsRows::kLast};
    const double t0 = Now(), c0 = CpuSeconds();
    Check(model.Forward({&item, 1}, cache, &out), "prefill");
    best.Add(o.prefill, Now() - t0, CpuSeconds() - c0, ThreadPool::Default().size());
    cache.Release(&seq);
  }
  return best;
}

// A GPU's device-to-device copy rate: bytes read + written per second over
// 1 GiB copies, the best of `reps` (0 when the device cannot be used).
double DeviceCopyBandwidthGBs(const std::string& device, int reps) {
  auto spec = ParseDevice(device);
  if (!spec.ok()) return 0;
  auto backend = MakeBackend(*spec, Precision::kReference, nullptr);
  if (!backend.ok()) return 0;
  Backend& b = **backend;
  const size_t size = size_t{1} << 30;
  auto src = b.Allocate(size, "bench copy source");
  auto dst = b.Allocate(size, "bench copy destination");
  double best = 0;
  if (src.ok() && dst.ok()) {
    b.CopyDeviceToDevice(*dst, 0, *src, 0, size);  // warm-up
    Check(b.Synchronize(), "copy bandwidth");
    for (int i = 0; i < reps; ++i) {
      const double t0 = Now();
      b.CopyDeviceToDevice(*dst, 0, *src, 0, size);
      Check(b.Synchronize(), "copy bandwidth");
      best = std::max(best, 2.0 * static_cast<double>(size) / (Now() - t0) / 1e9);
    }
  }
  if (src.ok()) b.Free(*src);
  if (dst.ok()) b.Free(*dst);
  return best;
}

// With --matmul-shapes on a GPU: each MatMul shape of the model alone
// (random weights, bf16 and MLX 4-bit g64), at one generated row (GB/s of
// weight read, against the copy bandwidth) and at 512 prompt rows (TFLOP/s),
// best of 20 launches.
void MatMulShapes(const ModelSpec& spec, Precision precision, const std::string& device, double copy_gbs,
                  bool mlx4) {
  auto dspec = ParseDevice(device);
  Check(dspec.status(), "--device");
  auto backend = MakeBackend(*dspec, precision, nullptr);
  Check(backend.status(), device.c_str());
  Backend& b = **backend;
  const struct {
    const char* name;
    int64_t rows, cols;
  } shapes[] = {{"q / o", spec.q_dim(), spec.hidden}, {"k / v", spec.kv_dim(), spec.hidden},
                {"gate / up", spec.intermediate, spec.hidden}, {"down", spec.hidden, spec.intermediate},
                {"head", spec.vocab, spec.hidden}};
  std::printf("\n%s MatMul shapes alone (%s, best of 20):\n\n", mlx4 ? "MLX 4-bit g64" : "bf16",
              PrecisionName(precision));
  std::printf("| matrix | rows x cols | 1 generated row: us | GB/s | of copy bw | 512 prompt rows: us | TFLOP/s |\n");
  std::printf("|---|---|---|---|---|---|---|\n");
  std::mt19937 rng(3);
  for (const auto& sh : shapes) {
    if (sh.rows <= 0 || sh.cols <= 0) continue;
    // bf16: |w| in [2^-7, 2^-6); MLX 4-bit: random nibbles, bf16 scales and biases of that size.
    const int64_t groups = sh.cols / 64;
    std::vector<uint16_t> host(static_cast<size_t>(mlx4 ? 2 * sh.rows * groups : sh.rows * sh.cols));
    for (uint16_t& v : host) v = static_cast<uint16_t>((0x3C00 + (rng() & 0x7F)) | ((rng() & 1) << 15));
    std::vector<uint32_t> packed(static_cast<size_t>(mlx4 ? sh.rows * sh.cols / 8 : 0));
    for (uint32_t& v : packed) v = static_cast<uint32_t>(rng());
    WeightMatrix hw;
    hw.rows = sh.rows;
    hw.cols = sh.cols;
    if (mlx4) {
      hw.format = WeightFormat::kMlxAffine;
      hw.bits = 4;
      hw.group_size = 64;
      hw.data = packed.data();
      hw.scales = host.data();
      hw.biases = host.data() + sh.rows * groups;
      hw.scale_dtype = DType::kBF16;
    } else {
      hw.format = WeightFormat::kBF16;
      hw.data = host.data();
    }
    auto w = b.PrepareWeight(hw);
    Check(w.status(), "matmul shapes: weight");
    const int64_t n_max = 512;
    auto x = b.Allocate(static_cast<size_t>(n_max * sh.cols) * 4, "bench x");
    auto y = b.Allocate(static_cast<size_t>(n_max * sh.rows) * 4, "bench y");
    Check(x.status(), "matmul shapes: x");
    Check(y.status(), "matmul shapes: y");
    std::vector<float> xs(static_cast<size_t>(n_max * sh.cols));
    for (float& v : xs) v = static_cast<float>(static_cast<int>(rng() % 2001) - 1000) / 1000.0f;
    b.CopyToDevice(*x, 0, xs.data(), xs.size() * 4);
    auto time = [&](int64_t n, RowKind kind) {
      b.MatMul(*w, x->as<float>(), n, y->as<float>(), kind);  // warm-up (plans, scratch)
      Check(b.Synchronize(), "matmul shapes");
      double best = 1e30;
      for (int r = 0; r < 20; ++r) {
        const double t0 = Now();
        b.MatMul(*w, x->as<float>(), n, y->as<float>(), kind);
        Check(b.Synchronize(), "matmul shapes");
        best = std::min(best, Now() - t0);
      }
      return best;
    };
    const double t1 = time(1, RowKind::kGenerated), t512 = time(n_max, RowKind::kPrompt);
    const double bytes = mlx4 ? static_cast<double>(sh.rows * sh.cols) / 2 + 4.0 * static_cast<double>(sh.rows * groups)
                              : 2.0 * static_cast<double>(sh.rows * sh.cols);
    std::printf("| %s | %lld x %lld | %.1f | %.0f | %.0f%% | %.1f | %.1f |\n", sh.name,
                static_cast<long long>(sh.rows), static_cast<long long>(sh.cols), t1 * 1e6, bytes / t1 / 1e9,
                100 * bytes / t1 / 1e9 / copy_gbs, t512 * 1e6,
                2.0 * static_cast<double>(n_max * sh.rows * sh.cols) / t512 / 1e12);
    b.Free(*x);
    b.Free(*y);
    b.ReleaseWeight(*w);
  }
  std::fflush(stdout);
}

Figures Run(const std::string& dir, Precision precision, const Options& o) {
  Figures f;
  auto spec = ParseDevice(o.device);
  Check(spec.status(), "--device");
  auto backends = MakeBackends(*spec, o.tensor_parallel, precision, &ThreadPool::Default());
  Check(backends.status(), o.device.c_str());
  std::vector<Backend*> ranks;
  for (auto& b : *backends) ranks.push_back(b.get());
  f.rss_before = ResidentBytes();
  const double t0 = Now();
  auto model = Model::Load(dir, std::span<Backend* const>(ranks));
  Check(model.status(), dir.c_str());
  f.load_s = Now() - t0;
  f.rss_load = ResidentBytes();
  f.weight_bytes = (*model)->weight_bytes();
  f.spec = (*model)->spec();
  const int64_t per_seq = o.prompt + 2 + int64_t{o.reps} * o.steps;
  const int64_t long_seq = o.long_context + 2 + int64_t{o.reps} * o.steps;
  const int64_t blocks = std::max<int64_t>(
      {(o.prefill + kDefaultKvBlockSize - 1) / kDefaultKvBlockSize,
       o.batch * ((per_seq + kDefaultKvBlockSize - 1) / kDefaultKvBlockSize),
       (long_seq + kDefaultKvBlockSize - 1) / kDefaultKvBlockSize});
  auto kv = ParseKvDtype(o.kv_dtype);
  Check(kv.status(), "--kv-dtype");
  auto cache = (*model)->CreateKvCache(blocks, kDefaultKvBlockSize, kv->value_or((*model)->Native16BitType()));
  Check(cache.status(), "kv cache");
  // Decode first: its prompt pass also faults the mapped weights in.
  if (RunsPhase(o, "decode1")) f.decode1 = Decode(**model, **cache, 1, o.prompt, o);
  if (RunsPhase(o, "decode-batch")) f.decode8 = Decode(**model, **cache, o.batch, o.prompt, o);
  if (o.long_context > 0 && RunsPhase(o, "long")) f.decode_long = Decode(**model, **cache, 1, o.long_context, o, &f.long_prompt);
  if (RunsPhase(o, "prefill")) f.prefill = Prefill(**model, **cache, o);
  f.rss_end = ResidentBytes();
  return f;
}

int Main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--models") {
      o.models = value();
    } else if (a == "--formats") {
      o.only.clear();  // ",a,b," (push_back: GCC 12 warns falsely on "," + string)
      o.only.push_back(',');
      o.only.append(value());
      o.only.push_back(',');
    } else if (a == "--reps") {
      o.reps = std::max(1, std::atoi(value().c_str()));
    } else if (a == "--prefill-reps") {
      o.prefill_reps = std::max(1, std::atoi(value().c_str()));
    } else if (a == "--prefill-tokens") {
      o.prefill = std::max(1, std::atoi(value().c_str()));
    } else if (a == "--phases") {
      o.phases = value();
    } else if (a == "--steps") {
      o.steps = std::max(1, std::atoi(value().c_str()));
    } else if (a == "--precisions") {
      const std::string list = value();
      for (size_t b = 0; b <= list.size();) {
        const size_t e = std::min(list.find(',', b), list.size());
        if (e > b) o.precisions.push_back(list.substr(b, e - b));
        b = e + 1;
      }
    } else if (a == "--kv-dtype") {
      o.kv_dtype = value();
    } else if (a == "--prompt") {
      o.prompt = std::max(1, std::atoi(value().c_str()));
    } else if (a == "--long-context") {
      o.long_context = std::max(0, std::atoi(value().c_str()));
    } else if (a == "--device") {
      o.device = value();
    } else if (a == "--tensor-parallel") {
      o.tensor_parallel = std::max(1, std::atoi(value().c_str()));
    } else if (a == "--prefix") {
      o.prefix = value();
    } else if (a == "--random-config") {
      o.random_config = value();
    } else if (a == "--arch") {
      o.arch = value();
    } else if (a == "--seed") {
      o.seed = std::strtoull(value().c_str(), nullptr, 10);
    } else if (a == "--group-size") {
      o.group_size = std::atoi(value().c_str());
    } else if (a == "--batch") {
      o.batch = std::max(1, std::atoi(value().c_str()));
    } else if (a == "--matmul-shapes") {
      o.matmul_shapes = true;
    } else if (a == "--no-int8") {
      o.int8 = false;
    } else if (a == "--host-argmax") {
      o.host_argmax = true;
    } else if (a == "--top-p") {
      o.top_p = std::atof(value().c_str());
    } else {
      std::fprintf(stderr,
                   "usage: model_bench --models DIR [--formats bf16,mlx8,mlx4 (also fp8, gptq4, awq4)] [--reps N] "
                   "[--prefill-reps N] [--prefill-tokens N] [--steps N] [--no-int8] "
                   "[--long-context N] [--precisions LIST] [--device cpu|cuda|cuda:N] [--tensor-parallel N] [--prefix NAME] "
                   "[--batch N] [--prompt N] [--kv-dtype auto|f32|bf16|f16|fp8] [--matmul-shapes] [--host-argmax] [--top-p P]\n"
                   "       model_bench --random-config CONFIG.json [--arch llama] [--seed N] [--group-size G] "
                   "[the options above but --models, --prefix]\n");
      return 1;
    }
  }
  // The same switch from the environment, for scripts that vary only it (bench/gpu/batch_ab.sh's VARIANTS).
  if (const char* v = std::getenv("LLMHOST_BENCH_HOST_ARGMAX"); v != nullptr && std::strcmp(v, "on") == 0) {
    o.host_argmax = true;
  }
  if (const char* v = std::getenv("LLMHOST_BENCH_TOP_P")) o.top_p = std::atof(v);
  if (o.models.empty() == o.random_config.empty()) {
    std::fprintf(stderr, "model_bench: give --models DIR (see bench/run_model_bench.sh) or --random-config FILE\n");
    return 1;
  }
  ThreadPool& pool = ThreadPool::Default();
  std::printf("CPU: %s; kernels: %s; threads: %d\n", DetectedCpuFeatures().Describe().c_str(),
              CpuIsaName(ActiveCpuIsa()), pool.size());
  std::printf("load average at start: %s\n", bench::LoadAverage().c_str());
  const bool gpu = o.device != "cpu";
  auto bandwidth = [&] { return gpu ? DeviceCopyBandwidthGBs(o.device, 5) : bench::ReadBandwidthGBs(pool.size(), 5); };
  const double bw0 = bandwidth();
  if (gpu) {
    std::printf("%s copy bandwidth at start (1 GiB device to device, read + write, best of 5): %.1f GB/s\n",
                o.device.c_str(), bw0);
  } else {
    std::printf("read bandwidth at start (1 GiB, %d threads, best of 5): %.1f GB/s\n", pool.size(), bw0);
  }
  std::printf("prefill %d tokens (best of %d); decode after a %d-token prompt, %d steps (best of %d); "
              "batch 1 and %d; K/V %s\n\n",
              o.prefill, o.prefill_reps, o.prompt, o.steps, o.reps, o.batch, o.kv_dtype.c_str());
  std::fflush(stdout);

  struct Row {
    std::string label;
    const Format* format;
    Figures f;
  };
  std::vector<Row> rows;
  for (const Format& fmt : Formats()) {
    if (o.only.empty() ? !fmt.by_default : o.only.find("," + fmt.name + ",") == std::string::npos) continue;
    const std::string dir =
        o.random_config.empty() ? JoinPath(o.models, o.prefix + "-" + fmt.name)
                                : RandomModelSpecString(o.arch, fmt.name, o.group_size, o.random_config, o.seed);
    std::vector<Precision> precisions = {Precision::kAuto, Precision::kFast};
    if (fmt.name != "bf16" && o.int8) precisions.push_back(Precision::kFastInt8);
    if (HasBf16Matmul(BestCpuIsa())) precisions.push_back(Precision::kFastBf16);
    if (!o.precisions.empty()) {
      precisions.clear();
      for (const std::string& name : o.precisions) {
        if (name == "auto") {
          precisions.push_back(Precision::kAuto);
        } else if (name == "fast") {
          precisions.push_back(Precision::kFast);
        } else if (name == "fast-int8") {
          precisions.push_back(Precision::kFastInt8);
        } else if (name == "fast-bf16") {
          precisions.push_back(Precision::kFastBf16);
        } else {
          std::fprintf(stderr, "model_bench: --precisions: '%s' (expected auto, fast, fast-int8, fast-bf16)\n",
                       name.c_str());
          return 1;
        }
      }
    }
    for (Precision p : precisions) {
      const char* label = p == Precision::kFastInt8   ? " fast-int8"
                          : p == Precision::kFastBf16 ? " fast-bf16"
                          : p == Precision::kAuto     ? " auto (serve's default)"
                                                      : " fast";
      Row r{fmt.name + label, &fmt, Run(dir, p, o)};
      std::printf("%s: prefill %.1f, decode b1 %.2f, b%d %.2f tok/s (by CPU time x threads: %.1f, "
                  "%.2f, %.2f); RSS before load %.0f, after load %.0f, after the run %.0f MiB "
                  "(weights %.0f MiB, loaded in %.1f s); load avg %s\n",
                  r.label.c_str(), r.f.prefill.wall, r.f.decode1.wall, o.batch, r.f.decode8.wall,
                  r.f.prefill.cpu, r.f.decode1.cpu, r.f.decode8.cpu, r.f.rss_before / 1048576.0,
                  r.f.rss_load / 1048576.0, r.f.rss_end / 1048576.0, r.f.weight_bytes / 1048576.0,
                  r.f.load_s, bench::LoadAverage().c_str());
      if (o.long_context > 0) {
        std::printf("%s: decode b1 after a %d-token prompt %.2f tok/s (by CPU time x threads: %.2f); that "
                    "prompt's prefill %.1f tok/s (one pass, cold)\n",
                    r.label.c_str(), o.long_context, r.f.decode_long.wall, r.f.decode_long.cpu,
                    r.f.long_prompt.wall);
      }
      std::fflush(stdout);
      rows.push_back(std::move(r));
    }
    if (o.matmul_shapes && gpu && fmt.name == "bf16") {
      for (Precision p : precisions) {
        for (bool mlx4 : {false, true}) MatMulShapes(rows.back().f.spec, p, o.device, bw0, mlx4);
      }
    }
  }
  const double bw1 = bandwidth();
  const double bw = std::max(bw0, bw1);
  std::printf("\n%s bandwidth at end: %.1f GB/s; efficiency below uses the best, %.1f GB/s%s\n", gpu ? "copy" : "read",
              bw1, bw, gpu && o.tensor_parallel > 1 ? " (one GPU's: the bound is one GPU's share of the weights)" : "");
  std::printf("load average at end: %s\n\n", bench::LoadAverage().c_str());

  std::printf("| format (precision) | weight MiB | prefill tok/s | vs llama.cpp | decode b1 tok/s | "
              "vs llama.cpp | decode b1 efficiency | decode b%d tok/s | b%d weight-read efficiency | "
              "RSS growth after load / after run MiB |\n",
              o.batch, o.batch);
  std::printf("|---|---|---|---|---|---|---|---|---|---|\n");
  auto ratio = [&](double v, const char* name, double ref) {
    char out[64];
    // The anchors are CPU figures of run_model_bench.sh's 1B models.
    if (gpu || o.prefix != "llama1b" || !o.random_config.empty()) return std::string("–");
    std::snprintf(out, sizeof(out), "%.2fx %s %.1f", v / ref, name, ref);
    return std::string(out);
  };
  for (const Row& r : rows) {
    const LlamaCppFigures& ref = r.format->ref;
    const double all_bytes = static_cast<double>(r.f.weight_bytes);
    // Split over GPUs, each reads its share at once: the bound is one share per step.
    const double bytes = all_bytes / o.tensor_parallel;
    std::printf("| %s | %.0f | %.1f | %s | %.2f | %s | %.0f%% | %.2f | %.0f%% | %.0f / %.0f |\n",
                r.label.c_str(), all_bytes / 1048576.0, r.f.prefill.wall,
                ratio(r.f.prefill.wall, ref.name, ref.prefill).c_str(), r.f.decode1.wall,
                ratio(r.f.decode1.wall, ref.name, ref.decode).c_str(),
                100 * bytes * r.f.decode1.wall / (bw * 1e9), r.f.decode8.wall,
                100 * bytes * (r.f.decode8.wall / o.batch) / (bw * 1e9),
                (static_cast<double>(r.f.rss_load) - r.f.rss_before) / 1048576.0,
                (static_cast<double>(r.f.rss_end) - r.f.rss_before) / 1048576.0);
  }
  if (gpu) return 0;  // CPU time says nothing of a GPU's work
  std::printf("\nBy process CPU time x %d threads (an estimate of the unshared machine; optimistic where "
              "threads wait on each other):\n\n",
              pool.size());
  std::printf("| format (precision) | prefill tok/s | vs llama.cpp | decode b1 tok/s | vs llama.cpp | "
              "decode b%d tok/s |\n|---|---|---|---|---|---|\n",
              o.batch);
  for (const Row& r : rows) {
    const LlamaCppFigures& ref = r.format->ref;
    std::printf("| %s | %.1f | %s | %.2f | %s | %.2f |\n", r.label.c_str(), r.f.prefill.cpu,
                ratio(r.f.prefill.cpu, ref.name, ref.prefill).c_str(), r.f.decode1.cpu,
                ratio(r.f.decode1.cpu, ref.name, ref.decode).c_str(), r.f.decode8.cpu);
  }
  return 0;
}

}  // namespace
}  // namespace llmhost

int main(int argc, char** argv) { return llmhost::Main(argc, argv); }
