// libFuzzer target: the safetensors header parser on arbitrary bytes, then
// every tensor view touched, and a re-serialize/re-parse round trip.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "formats/safetensors.h"
#include "formats/safetensors_writer.h"

using namespace llmhost;

static volatile uint8_t g_sink;  // keeps the reads from being optimized away

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto r = SafetensorsFile::Parse(data, size, "fuzz.safetensors");
  if (!r.ok()) return 0;
  const SafetensorsFile& f = **r;
  uint8_t sink = 0;
  std::vector<SafetensorsWriteTensor> tensors;
  for (const SafetensorsTensorInfo& t : f.tensors()) {
    TensorView v = f.View(t);
    if (v.n_bytes > 0) sink ^= v.data[0] ^ v.data[v.n_bytes - 1];  // ASan checks the range
    if (f.Find(t.name) != &t) __builtin_trap();
    tensors.push_back({t.name, t.dtype, t.shape,
                       std::string_view(reinterpret_cast<const char*>(v.data), v.n_bytes)});
  }
  g_sink = sink;
  // What parses must serialize, and parse back to the same tensors.
  auto bytes = SerializeSafetensors(tensors, f.metadata());
  if (!bytes.ok()) return 0;  // e.g. names the writer's UTF-8 check refuses
  auto again = SafetensorsFile::Parse(reinterpret_cast<const uint8_t*>(bytes->data()),
                                      bytes->size(), "again");
  if (!again.ok() || (*again)->tensors().size() != f.tensors().size() ||
      (*again)->metadata() != f.metadata()) {
    __builtin_trap();
  }
  return 0;
}
