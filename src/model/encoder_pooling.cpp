#include "model/encoder_pooling.h"

#include <algorithm>
#include <span>
#include <cmath>

#include "util/file.h"
#include "util/json.h"

namespace llmhost {
namespace {

constexpr size_t kMaxConfigBytes = 1 << 20;

Result<nlohmann::json> ReadJson(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadFileToString(path, kMaxConfigBytes));
  return ParseJson(text, path, kMaxConfigBytes);
}

// The mode of a Pooling module's config (1_Pooling/config.json's keys).
Result<PoolingMode> ParseMode(const nlohmann::json& j, const std::string& path) {
  if (!j.is_object()) return Status::InvalidArgument(path + ": not a JSON object");
  struct Key {
    const char* name;
    PoolingMode mode;
    bool supported;
  };
  const Key keys[] = {{"pooling_mode_cls_token", PoolingMode::kCls, true},
                      {"pooling_mode_mean_tokens", PoolingMode::kMean, true},
                      {"pooling_mode_lasttoken", PoolingMode::kLastToken, true},
                      {"pooling_mode_max_tokens", PoolingMode::kCls, false},
                      {"pooling_mode_mean_sqrt_len_tokens", PoolingMode::kCls, false},
                      {"pooling_mode_weightedmean_tokens", PoolingMode::kCls, false}};
  std::vector<const Key*> set;
  for (const Key& k : keys) {
    auto it = j.find(k.name);
    if (it != j.end() && it->is_boolean() && it->get<bool>()) set.push_back(&k);
  }
  if (set.size() != 1) {
    return Status::NotSupported(path + ": " + std::to_string(set.size()) +
                                " pooling modes are set (exactly one of cls_token, mean_tokens, lasttoken)");
  }
  if (!set[0]->supported) return Status::NotSupported(path + ": " + set[0]->name + " is not supported");
  return set[0]->mode;
}

}  // namespace

Result<EncoderPooling> LoadEncoderPooling(const std::string& dir) {
  EncoderPooling p;
  const std::string modules_path = JoinPath(dir, "modules.json");
  if (FileExists(modules_path)) {
    ASSIGN_OR_RETURN(nlohmann::json modules, ReadJson(modules_path));
    if (!modules.is_array()) return Status::InvalidArgument(modules_path + ": not a JSON array");
    p.normalize = false;
    std::string pooling_dir;
    for (const nlohmann::json& m : modules) {
      const std::string type = m.is_object() ? m.value("type", "") : "";
      if (type.ends_with(".Pooling")) {
        pooling_dir = m.value("path", "");
      } else if (type.ends_with(".Normalize")) {
        p.normalize = true;
      } else if (!type.ends_with(".Transformer")) {  // a Dense projection would change the vectors
        return Status::NotSupported(modules_path + ": module type '" + type +
                                    "' is not supported (Transformer, Pooling, Normalize)");
      }
    }
    if (pooling_dir.empty()) return p;
    const std::string path = JoinPath(JoinPath(dir, pooling_dir), "config.json");
    ASSIGN_OR_RETURN(nlohmann::json j, ReadJson(path));
    ASSIGN_OR_RETURN(p.mode, ParseMode(j, path));
    if (auto it = j.find("include_prompt"); it != j.end() && !it->is_null()) {
      if (!it->is_boolean()) return Status::InvalidArgument(path + ": 'include_prompt' is not true or false");
      p.include_prompt = it->get<bool>();
    }
    return p;
  }
  const std::string standin = JoinPath(dir, "pooling_config.json");
  if (FileExists(standin)) {
    ASSIGN_OR_RETURN(nlohmann::json j, ReadJson(standin));
    ASSIGN_OR_RETURN(p.mode, ParseMode(j, standin));
  }
  return p;
}

std::vector<float> PoolStates(std::span<const float> states, int64_t len, int64_t dim,
                              const EncoderPooling& pooling, int64_t mean_from) {
  std::vector<float> v(static_cast<size_t>(dim), 0.0f);
  switch (pooling.mode) {
    case PoolingMode::kCls:
      std::copy(states.begin(), states.begin() + dim, v.begin());
      break;
    case PoolingMode::kLastToken:
      std::copy(states.begin() + (len - 1) * dim, states.begin() + len * dim, v.begin());
      break;
    case PoolingMode::kMean:
      if (mean_from >= len) break;
      for (int64_t c = 0; c < dim; ++c) {
        double sum = 0;
        for (int64_t t = mean_from; t < len; ++t) sum += states[t * dim + c];
        v[c] = static_cast<float>(sum / static_cast<double>(len - mean_from));
      }
      break;
  }
  if (pooling.normalize) {
    double ss = 0;
    for (float x : v) ss += static_cast<double>(x) * x;
    const double norm = std::max(std::sqrt(ss), 1e-12);
    for (float& x : v) x = static_cast<float>(x / norm);
  }
  return v;
}

}  // namespace llmhost
