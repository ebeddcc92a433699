// Embeddings per second of a BERT encoder of the bge-small shape (hidden
// 384, 12 layers, 12 heads, FFN 1536, vocab 30522, 512 positions; f32
// weights, as BAAI/bge-small-en-v1.5 ships them) with random weights, on the
// CPU backend with every core (ThreadPool::Default()) or a GPU (--device), for batches of
// 32-token inputs (batch 1, 8, 32) through EmbeddingModel::Embed, at each
// precision asked for.
//
// The model is written to a temporary directory (config.json, random f32
// model.safetensors, CLS pooling; the tokenizer of ../shared's
// bert-tiny-embed, which Embed never calls: inputs are random token ids)
// and loaded by LoadEncoder as a real one would be. Each figure is the best
// of --reps timed runs (the machine is shared); the load average is printed.
//
// Usage: embed_bench [--reps N (5)] [--precisions auto,fast,f32] [--tokens N (32)]
//                    [--device cpu|cuda|cuda:N (cpu)]
//                    [--shared DIR (LLMHOST_SHARED_DIR, else ../shared beside the source tree)]
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/device.h"
#include "bench_util.h"
#include "formats/safetensors_writer.h"
#include "model/encoder_model.h"
#include "util/file.h"
#include "util/thread_pool.h"

namespace llmhost {
namespace {

constexpr int64_t kHidden = 384, kLayers = 12, kHeads = 12, kInter = 1536, kVocab = 30522, kPositions = 512;

struct Tensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> data;
};

// The tensors of BertModel at the bge-small shape: matrices ~ U(-0.05, 0.05),
// LayerNorm weights 1 and biases 0 (so activations stay in range).
std::vector<Tensor> RandomBert(uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-0.05f, 0.05f);
  std::vector<Tensor> t;
  auto add = [&](const std::string& name, std::vector<int64_t> shape, float fill = NAN) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = std::isnan(fill) ? u(rng) : fill;
    t.push_back({name, std::move(shape), std::move(v)});
  };
  auto norm = [&](const std::string& base) {
    add(base + ".weight", {kHidden}, 1.0f);
    add(base + ".bias", {kHidden}, 0.0f);
  };
  auto linear = [&](const std::string& base, int64_t out, int64_t in) {
    add(base + ".weight", {out, in});
    add(base + ".bias", {out});
  };
  add("embeddings.word_embeddings.weight", {kVocab, kHidden});
  add("embeddings.position_embeddings.weight", {kPositions, kHidden});
  add("embeddings.token_type_embeddings.weight", {2, kHidden});
  norm("embeddings.LayerNorm");
  for (int64_t l = 0; l < kLayers; ++l) {
    const std::string b = "encoder.layer." + std::to_string(l) + ".";
    linear(b + "attention.self.query", kHidden, kHidden);
    linear(b + "attention.self.key", kHidden, kHidden);
    linear(b + "attention.self.value", kHidden, kHidden);
    linear(b + "attention.output.dense", kHidden, kHidden);
    norm(b + "attention.output.LayerNorm");
    linear(b + "intermediate.dense", kInter, kHidden);
    linear(b + "output.dense", kHidden, kInter);
    norm(b + "output.LayerNorm");
  }
  return t;
}

Status WriteModel(const std::string& dir, const std::string& tokenizer_json) {
  const std::string config =
      R"({"architectures": ["BertModel"], "model_type": "bert", "hidden_act": "gelu", "hidden_size": 384,
          "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 1536,
          "vocab_size": 30522, "max_position_embeddings": 512, "type_vocab_size": 2,
          "layer_norm_eps": 1e-12, "pad_token_id": 0, "position_embedding_type": "absolute"})";
  RETURN_IF_ERROR(WriteFileAtomic(JoinPath(dir, "config.json"), config));
  RETURN_IF_ERROR(WriteFileAtomic(JoinPath(dir, "pooling_config.json"), R"({"pooling_mode_cls_token": true})"));
  ASSIGN_OR_RETURN(std::string tok, ReadFileToString(tokenizer_json));
  RETURN_IF_ERROR(WriteFileAtomic(JoinPath(dir, "tokenizer.json"), tok));
  const std::vector<Tensor> tensors = RandomBert(1);
  std::vector<SafetensorsWriteTensor> w;
  for (const Tensor& t : tensors) {
    w.push_back({t.name, DType::kF32, t.shape,
                 std::string_view(reinterpret_cast<const char*>(t.data.data()), t.data.size() * sizeof(float))});
  }
  return WriteSafetensorsFile(JoinPath(dir, "model.safetensors"), w, {});
}

Precision ParsePrecision(const std::string& s) {
  if (s == "f32") return Precision::kReference;
  if (s == "fast") return Precision::kFast;
  if (s == "fast-int8") return Precision::kFastInt8;
  if (s == "fast-bf16") return Precision::kFastBf16;
  return Precision::kAuto;
}

int Run(int argc, char** argv) {
  int reps = 5;
  int64_t tokens = 32;
  std::string precisions = "auto,fast,f32";
  std::string device = "cpu";
  const char* shared_env = std::getenv("LLMHOST_SHARED_DIR");
  std::string shared = shared_env ? shared_env : std::string(LLMHOST_SOURCE_DIR) + "/../shared";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--reps") reps = std::atoi(argv[i + 1]);
    else if (a == "--precisions") precisions = argv[i + 1];
    else if (a == "--tokens") tokens = std::atoll(argv[i + 1]);
    else if (a == "--shared") shared = argv[i + 1];
    else if (a == "--device") device = argv[i + 1];
  }
  char tmpl[] = "/tmp/embed_bench_XXXXXX";
  if (!::mkdtemp(tmpl)) return 1;
  const std::string dir = tmpl;
  if (Status s = WriteModel(dir, shared + "/reference/models/bert-tiny-embed/tokenizer.json"); !s.ok()) {
    std::fprintf(stderr, "embed_bench: %s\n", s.ToString().c_str());
    return 1;
  }
  auto spec = ParseDevice(device);
  if (!spec.ok()) {
    std::fprintf(stderr, "embed_bench: --device: %s\n", spec.status().ToString().c_str());
    return 1;
  }
  std::printf("bge-small shape (BERT 384x12, FFN 1536, f32 weights), %lld-token inputs, device %s, %d threads, load %s\n",
              static_cast<long long>(tokens), device.c_str(), ThreadPool::Default().size(), bench::LoadAverage().c_str());
  std::printf("%-10s %6s %14s %12s\n", "precision", "batch", "embeddings/s", "ms/batch");
  std::mt19937 rng(7);
  std::uniform_int_distribution<int32_t> id(5, static_cast<int32_t>(kVocab - 1));
  size_t at = 0;
  while (at <= precisions.size()) {
    const size_t comma = std::min(precisions.find(',', at), precisions.size());
    const std::string name = precisions.substr(at, comma - at);
    at = comma + 1;
    auto backend = MakeBackend(*spec, ParsePrecision(name), &ThreadPool::Default());
    if (!backend.ok()) {
      std::fprintf(stderr, "embed_bench: %s: %s\n", device.c_str(), backend.status().ToString().c_str());
      return 1;
    }
    auto model = LoadEncoder(dir, backend->get());
    if (!model.ok()) {
      std::fprintf(stderr, "embed_bench: %s\n", model.status().ToString().c_str());
      return 1;
    }
    for (int64_t batch : {1, 8, 32}) {
      std::vector<EmbeddingInput> inputs(static_cast<size_t>(batch));
      for (EmbeddingInput& in : inputs) {
        in.ids = {2};
        while (static_cast<int64_t>(in.ids.size()) < tokens - 1) in.ids.push_back(id(rng));
        in.ids.push_back(3);
      }
      double best = 1e30;
      for (int r = 0; r <= reps; ++r) {  // the first run warms up
        const double t0 = bench::Now();
        auto v = (*model)->Embed(inputs);
        const double dt = bench::Now() - t0;
        if (!v.ok()) {
          std::fprintf(stderr, "embed_bench: %s\n", v.status().ToString().c_str());
          return 1;
        }
        if (r > 0) best = std::min(best, dt);
      }
      std::printf("%-10s %6lld %14.1f %12.2f\n", name.c_str(), static_cast<long long>(batch), batch / best,
                  best * 1e3);
    }
  }
  std::printf("load at end %s\n", bench::LoadAverage().c_str());
  for (const char* f : {"config.json", "pooling_config.json", "tokenizer.json", "model.safetensors"}) {
    std::remove(JoinPath(dir, f).c_str());
  }
  ::rmdir(dir.c_str());
  return 0;
}

}  // namespace
}  // namespace llmhost

int main(int argc, char** argv) { return llmhost::Run(argc, argv); }
