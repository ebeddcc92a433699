// libFuzzer target: GgufFile::Parse on arbitrary bytes, then every metadata
// key read through every getter and every tensor's data range touched; the
// same bytes as a file name for the split-part parser (a parsed name must
// spell back to itself).
#include <cstddef>
#include <cstdint>

#include "formats/gguf.h"
#include "formats/gguf_split.h"

using namespace llmhost;

static volatile size_t g_sink;  // keeps the reads from being optimized away

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view name(reinterpret_cast<const char*>(data), size);
  if (auto split = ParseGgufSplitName(name)) {
    if (split->no < 1 || split->no > split->count || split->count > kMaxGgufSplitParts) __builtin_trap();
    auto again = ParseGgufSplitName(GgufSplitPartPath(split->prefix, split->no, split->count));
    if (!again || again->prefix != split->prefix || again->no != split->no || again->count != split->count) {
      __builtin_trap();
    }
  }
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
