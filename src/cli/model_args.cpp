#include "cli/model_args.h"

#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "backend/device.h"

namespace llmhost::cli {

Result<std::vector<int32_t>> ParseIdList(const std::string& text) {
  std::vector<int32_t> ids;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const size_t b = item.find_first_not_of(" \t");
    const size_t e = item.find_last_not_of(" \t");
    if (b == std::string::npos) continue;
    item = item.substr(b, e - b + 1);
    char* end = nullptr;
    const long long v = std::strtoll(item.c_str(), &end, 10);
    if (end == item.c_str() || *end != '\0' || v < 0 || v > INT32_MAX) {
      return Status::InvalidArgument("--ids: '" + item + "' is not a token id (expected e.g. 1,2,3)");
    }
    ids.push_back(static_cast<int32_t>(v));
  }
  if (ids.empty()) return Status::InvalidArgument("--ids: no token ids given");
  return ids;
}

Result<Precision> ParsePrecision(const std::string& text) {
  if (text == "f32" || text == "reference") return Precision::kReference;
  if (text == "fast") return Precision::kFast;
  if (text == "fast-int8") return Precision::kFastInt8;
  if (text == "fast-bf16") return Precision::kFastBf16;
  if (text == "auto") return Precision::kAuto;
  return Status::InvalidArgument("--precision: '" + text + "' (expected auto, f32, fast, fast-int8 or fast-bf16)");
}

Result<LoadedModel> LoadModelForCli(const std::string& path, Precision precision, const std::string& device,
                                    bool verbose, int tensor_parallel) {
  LoadedModel lm;
  ASSIGN_OR_RETURN(DeviceSpec spec, ParseDevice(device));
  ASSIGN_OR_RETURN(std::vector<std::unique_ptr<Backend>> backends,
                   MakeBackends(spec, tensor_parallel, precision, &ThreadPool::Default()));
  std::vector<Backend*> ranks;
  for (auto& b : backends) ranks.push_back(b.get());
  lm.backend = std::move(backends[0]);
  for (size_t r = 1; r < backends.size(); ++r) lm.ranks.push_back(std::move(backends[r]));
  const uint64_t rss_before = ResidentBytes();
  ASSIGN_OR_RETURN(lm.model, Model::Load(path, std::span<Backend* const>(ranks)));
  if (verbose) {
    const ModelSpec& s = lm.model->spec();
    const MemoryStats m = lm.backend->memory_stats();
    std::fprintf(stderr,
                 "llmhost: %s on %s: %s, %lld layers, hidden %lld, vocab %lld; weights %.1f MiB "
                 "(mapped, zero-copy %.1f MiB); device buffers %.1f MiB; resident %.1f MiB "
                 "(%.1f MiB before loading)\n",
                 path.c_str(), lm.backend->name().c_str(), s.arch.c_str(), static_cast<long long>(s.n_layers),
                 static_cast<long long>(s.hidden), static_cast<long long>(s.vocab),
                 lm.model->weight_bytes() / 1048576.0, m.mapped_weight_bytes / 1048576.0,
                 m.bytes_in_use / 1048576.0, ResidentBytes() / 1048576.0, rss_before / 1048576.0);
  }
  return lm;
}

}  // namespace llmhost::cli
