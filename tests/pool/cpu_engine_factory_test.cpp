// The real engine factory through the pool: tiny models of tests/data load
// onto the CPU backend, generate, report their sizes, and unload.
#include "pool/cpu_engine_factory.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "engine/event_stream.h"
#include "model/synth_model.h"
#include "pool/embedding_loader.h"
#include "pool/engine_pool.h"
#include "test_util.h"
#include "util/file.h"

namespace llmhost::cpu_engine_factory_test {
namespace {

std::unique_ptr<EnginePool> MakePool(EngineOptions eo = {}) {
  PoolOptions o;
  o.model_dirs = {testing::TestDataDir() + "/models"};
  CpuEngineFactoryOptions fo;
  fo.engine = eo;
  fo.precision = Precision::kReference;
  auto pool = EnginePool::Create(o, std::make_unique<CpuEngineFactory>(fo), std::make_shared<LinuxMemoryProbe>());
  EXPECT_TRUE(pool.ok()) << pool.status().ToString();
  return pool.ok() ? std::move(*pool) : nullptr;
}

const DiscoveredModel* Find(const std::vector<DiscoveredModel>& v, const std::string& id) {
  for (const auto& m : v) {
    if (m.id == id) return &m;
  }
  return nullptr;
}

TEST(CpuEngineFactory, ShapesAndEstimates) {
  auto models = DiscoverModels({testing::TestDataDir() + "/models"});
  const DiscoveredModel* q = Find(models, "qwen3-tiny");
  const DiscoveredModel* g = Find(models, "llama-tiny-gguf/llama-tiny-q4_0");
  ASSERT_TRUE(q && g);
  auto qs = ReadModelShape(*q);
  ASSERT_TRUE(qs.ok()) << qs.status().ToString();
  EXPECT_GT(qs->n_layers, 0);
  EXPECT_GT(qs->n_kv_heads, 0);
  EXPECT_GT(qs->head_dim, 0);
  auto gs = ReadModelShape(*g);
  ASSERT_TRUE(gs.ok()) << gs.status().ToString();
  EXPECT_GT(gs->n_layers, 0);
  EXPECT_GT(gs->hidden, 0);
  EXPECT_GT(gs->vocab, 0);
  // KV pool as Engine::Create sizes it: 2 × layers × kv_dim × block × 4 bytes per block.
  EngineOptions eo;
  eo.kv_blocks = 3;
  eo.block_size = 16;
  EXPECT_EQ(KvPoolBytes(*qs, eo), 3ull * 2 * qs->n_layers * qs->n_kv_heads * qs->head_dim * 16 * 4);
  CpuEngineFactory f({});
  const BudgetBytes est = f.ResidentEstimate(*q, ModelSettings());
  EXPECT_GT(est[0], q->estimated_bytes);  // weights + KV pool + workspace
  EXPECT_EQ(est[1], 0u);                  // nothing on a GPU
  ModelSettings shorter;
  shorter.max_context_window = 64;
  EXPECT_LT(f.ResidentEstimate(*q, shorter)[0], est[0]);  // a smaller KV pool
  // A model's device setting moves its price between the host and a GPU.
  ModelSettings gpu;
  gpu.device = "cuda:1";
  const BudgetBytes on_gpu = f.ResidentEstimate(*q, gpu);
  EXPECT_EQ(on_gpu[0], 0u);
  EXPECT_GT(on_gpu[BudgetIndex(Budget::kDevice)], 0u);
  CpuEngineFactoryOptions cuda_server;
  cuda_server.device = DeviceSpec{DeviceKind::kCuda, 0};
  ModelSettings cpu;
  cpu.device = "cpu";
  const BudgetBytes on_cpu = CpuEngineFactory(cuda_server).ResidentEstimate(*q, cpu);
  EXPECT_GT(on_cpu[0], 0u);
  EXPECT_EQ(on_cpu[BudgetIndex(Budget::kDevice)], 0u);
  // On a GPU the workspace holds bigger prompt chunks (gpu_prefill_chunk_tokens); the CPU's is unchanged.
  CpuEngineFactoryOptions chunk512;
  chunk512.gpu_prefill_chunk_tokens = 512;
  const uint64_t gpu512 = CpuEngineFactory(chunk512).ResidentEstimate(*q, gpu)[BudgetIndex(Budget::kDevice)];
  EngineOptions w512, wgpu;
  w512.prefill_chunk_tokens = 512;
  wgpu.prefill_chunk_tokens = kGpuPrefillChunkTokens;
  EXPECT_GT(WorkspaceBytes(*qs, wgpu), WorkspaceBytes(*qs, w512));
  EXPECT_EQ(on_gpu[BudgetIndex(Budget::kDevice)] - gpu512, WorkspaceBytes(*qs, wgpu) - WorkspaceBytes(*qs, w512));
  EXPECT_EQ(CpuEngineFactory(chunk512).ResidentEstimate(*q, ModelSettings())[0], est[0]);
}

TEST(CpuEngineFactory, LoadsGeneratesReportsAndUnloads) {
  EngineOptions eo;
  eo.kv_blocks = 8;
  eo.block_size = 16;
  auto pool = MakePool(eo);
  ASSERT_NE(pool, nullptr);
  AcquireResult r = pool->Acquire("qwen3-tiny");
  ASSERT_TRUE(r.ok()) << r.error.message;
  const std::shared_ptr<ServedModel>& m = r.lease->served();
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->entry.id, "qwen3-tiny");
  ASSERT_NE(m->engine, nullptr);
  ASSERT_NE(m->tokenizer, nullptr);
  EXPECT_TRUE(m->chat_template.has_value());
  EXPECT_GT(r.lease->engine().DeviceActiveBytes()[0], 0u);  // the KV pool and workspace
  const PrefillDims d = r.lease->engine().prefill_dims();
  EXPECT_TRUE(d.valid());
  EXPECT_TRUE(d.kv_preallocated);
  EXPECT_GT(d.priced_workspace_bytes, 0u);  // ResidentEstimate priced its workspace
  // A greedy generation through the leased engine.
  auto events = std::make_shared<EventStream>();
  GenerationRequest g;
  g.prompt = m->tokenizer->Encode("Hello", true);
  g.sampling.temperature = 0;
  g.max_tokens = 3;
  g.ignore_eos = true;
  g.on_event = events->Callback();
  ASSERT_TRUE(m->engine->Submit(std::move(g)).ok());
  std::vector<RequestEvent> all = events->WaitAll();
  ASSERT_FALSE(all.empty());
  EXPECT_EQ(all.back().finish, FinishReason::kLength);
  EXPECT_EQ(all.back().usage.completion_tokens, 3);
  EXPECT_TRUE(pool->CheckPrefill(*r.lease, 10, 0).ok());
  for (const ModelStatus& s : pool->ModelStatuses()) {
    if (s.id != "qwen3-tiny") continue;
    EXPECT_TRUE(s.loaded);
    EXPECT_GT(s.memory_bytes, s.weight_bytes);
    EXPECT_EQ(*s.max_context_window, m->engine->context_length());
  }
  EXPECT_EQ(pool->Unload("qwen3-tiny").outcome, UnloadOutcome::kPending);  // leased
  r.lease.reset();
  UnloadResult again = pool->Unload("qwen3-tiny");
  EXPECT_TRUE(again.ok());
  // The GGUF model too.
  AcquireResult gg = pool->Acquire("llama-tiny-q4_0");  // the last path component resolves
  ASSERT_TRUE(gg.ok()) << gg.error.message;
  EXPECT_TRUE(gg.lease->served()->entry.gguf());
}

// A random-weights spec as a --model-dir root: one model named by its config's
// stem, priced at the weights synth-model would write, that loads, knows its
// chat template and stop ids, and generates.
TEST(CpuEngineFactory, ServesARandomWeightsModel) {
  const std::string dir = testing::MakeTempDir();
  const nlohmann::ordered_json config = {{"hidden_size", 64},       {"num_hidden_layers", 2},
                                         {"num_attention_heads", 4}, {"num_key_value_heads", 2},
                                         {"intermediate_size", 128}, {"vocab_size", 300}};
  ASSERT_TRUE(WriteFileAtomic(dir + "/shape.json", config.dump()).ok());
  SynthOptions so;
  so.arch = "qwen3";
  so.config = config;
  so.dtype = SynthDType::kMlx8;
  so.group_size = 32;
  so.seed = 2;
  so.out_dir = dir + "/files";
  auto written = SynthesizeModel(so);
  ASSERT_TRUE(written.ok()) << written.status().ToString();

  PoolOptions o;
  o.model_dirs = {"random:qwen3:mlx8-g32:" + dir + "/shape.json:2"};
  CpuEngineFactoryOptions fo;
  fo.engine.kv_blocks = 8;
  fo.engine.block_size = 16;
  fo.precision = Precision::kReference;
  auto pool = EnginePool::Create(o, std::make_unique<CpuEngineFactory>(fo), std::make_shared<LinuxMemoryProbe>());
  ASSERT_TRUE(pool.ok()) << pool.status().ToString();
  const std::vector<DiscoveredModel> models = (*pool)->Models();
  ASSERT_EQ(models.size(), 1u);
  EXPECT_EQ(models[0].id, "shape");
  EXPECT_TRUE(models[0].random());
  EXPECT_EQ(models[0].weight_bytes, written->weight_bytes);
  EXPECT_EQ(models[0].model_type, "qwen3");
  auto shape = ReadModelShape(models[0]);
  ASSERT_TRUE(shape.ok()) << shape.status().ToString();
  EXPECT_EQ(shape->n_layers, 2);
  EXPECT_EQ(shape->vocab, 300);

  AcquireResult r = (*pool)->Acquire("shape");
  ASSERT_TRUE(r.ok()) << r.error.message;
  const std::shared_ptr<ServedModel>& m = r.lease->served();
  EXPECT_TRUE(m->chat_template.has_value());
  EXPECT_EQ(m->model->weight_bytes(), written->weight_bytes);
  EXPECT_EQ(m->engine->eos_token_ids(), (std::vector<int32_t>{299, 297}));  // generation_config.json's
  auto events = std::make_shared<EventStream>();
  GenerationRequest g;
  g.prompt = m->tokenizer->Encode("<|im_start|>user\nhello<|im_end|>", true);
  g.sampling.temperature = 0;
  g.max_tokens = 3;
  g.ignore_eos = true;
  g.on_event = events->Callback();
  ASSERT_TRUE(m->engine->Submit(std::move(g)).ok());
  std::vector<RequestEvent> all = events->WaitAll();
  ASSERT_FALSE(all.empty());
  EXPECT_EQ(all.back().usage.completion_tokens, 3);
  r.lease.reset();
  pool->reset();
  std::filesystem::remove_all(dir);
}

TEST(CpuEngineFactory, AnEmbeddingKindLoadsAnEmbedderWithoutAnEngine) {
  auto models = DiscoverModels({testing::TestDataDir() + "/models"});
  const DiscoveredModel* q = Find(models, "qwen3-tiny");
  ASSERT_TRUE(q);
  ModelSettings embedding;
  embedding.kind = ModelKind::kEmbedding;
  CpuEngineFactoryOptions fo;
  fo.precision = Precision::kReference;
  CpuEngineFactory f(fo);
  // Priced by its weights and one batch, not a chat KV pool.
  const auto shape = ReadModelShape(*q);
  ASSERT_TRUE(shape.ok());
  EXPECT_EQ(f.ResidentEstimate(*q, embedding)[0], q->estimated_bytes + EmbeddingRuntimeBytes(*shape));

  std::atomic<bool> abort{false};
  auto loaded = f.Load(*q, embedding, abort, nullptr, -1);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  std::shared_ptr<ServedModel> served = (*loaded)->served();
  ASSERT_TRUE(served);
  EXPECT_FALSE(served->engine) << "no chat engine";
  ASSERT_TRUE(served->embedding && served->embed_executor);
  EXPECT_EQ(served->embedding->kind(), EmbeddingKind::kEmbedder);
  EXPECT_EQ(served->embedding->dim(), shape->hidden);
  EXPECT_EQ((*loaded)->context_length(), shape->context);
  auto vectors = served->embed_executor->Embed({served->embedding->Tokenize("hello", false)}).get();
  ASSERT_TRUE(vectors.ok()) << vectors.status().ToString();
  EXPECT_EQ((*vectors)[0].size(), static_cast<size_t>(shape->hidden));
  EXPECT_EQ((*loaded)->ActiveRequests(), 0);
  (*loaded)->Stop();
  EXPECT_FALSE(served->embed_executor->Embed({served->embedding->Tokenize("hello", false)}).get().ok())
      << "stopped: jobs fail";

  ModelSettings rerank;
  rerank.kind = ModelKind::kRerank;
  auto reranker = f.Load(*q, rerank, abort, nullptr, -1);
  ASSERT_TRUE(reranker.ok()) << reranker.status().ToString();
  EXPECT_EQ((*reranker)->served()->embedding->kind(), EmbeddingKind::kReranker);
  EXPECT_EQ((*reranker)->served()->embedding->dim(), 0);
}

}  // namespace
}  // namespace llmhost::cpu_engine_factory_test
