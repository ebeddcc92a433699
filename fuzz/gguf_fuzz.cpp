// libFuzzer target: GgufFile::Parse on arbitrary bytes, then every metadata
// key read through every getter and every tensor's data range touched.
#include <cstddef>
#include <cstdint>

#include "formats/gguf.h"

using namespace llmhost;

static volatile size_t g_sink;  // keeps the reads from being optimized away

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto r = GgufFile::Parse(data, size, "fuzz.gguf");
  if (!r.ok()) return 0;
  const GgufFile& g = **r;
  size_t sink = 0;
  for (const std::string& key : g.Keys()) {
    if (!g.Has(key) || !g.TypeOf(key)) __builtin_trap();
    sink += g.ArrayElementType(key).has_value();
    sink += g.DescribeValue(key).size();
    if (auto s = g.GetString(key); s.ok()) sink += s->size();
    if (auto i = g.GetInt(key); i.ok()) sink += static_cast<size_t>(*i);
    if (auto d = g.GetFloat(key); d.ok()) sink += *d > 0;
    if (auto b = g.GetBool(key); b.ok()) sink += *b;
    if (auto a = g.GetStringArray(key); a.ok()) sink += a->size();
    if (auto a = g.GetIntArray(key); a.ok()) sink += a->size();
    if (auto a = g.GetFloatArray(key); a.ok()) sink += a->size();
  }
  for (const GgufTensorInfo& t : g.tensors()) {
    if (g.FindTensor(t.name) != &t) __builtin_trap();
    if (!GgmlTypeInfo(static_cast<uint32_t>(t.type))) __builtin_trap();
    const uint8_t* p = g.TensorData(t);
    if (p < data || p + t.n_bytes > data + size) __builtin_trap();
    if (t.n_bytes > 0) sink += p[0] + p[t.n_bytes - 1];
  }
  g_sink = sink;
  return 0;
}
