// libFuzzer target: a model directory's config.json (Hugging Face fields,
// RoPE dicts, MLX quantization, GPTQ / AWQ / FP8 quantization_config) on
// arbitrary bytes, then the loader's view of it (BuildModelSpec). Errors are
// fine; crashes, hangs and unbounded allocations are not.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "formats/hf_config.h"
#include "model/arch.h"

using namespace llmhost;

static volatile uint64_t g_sink;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  Result<ModelConfig> c = ParseModelConfig(text, "fuzz/config.json");
  if (!c.ok()) return 0;
  g_sink = c->hidden_size + c->quant_method.size();
  if (c->hf_quantization) g_sink = c->hf_quantization->Describe().size();
  Result<ModelSpec> s = BuildModelSpec(*c);
  if (s.ok()) g_sink = static_cast<uint64_t>(s->n_layers);
  return 0;
}
