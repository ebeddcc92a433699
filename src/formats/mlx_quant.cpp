#include "formats/mlx_quant.h"

namespace llmhost {

namespace {

using Json = nlohmann::json;

Status ParseParams(const Json& j, const MlxQuantParams& base, const std::string& where,
                   MlxQuantParams* out) {
  *out = base;
  if (auto it = j.find("bits"); it != j.end()) {
    if (!it->is_number_integer()) return Status::InvalidArgument(where + ": 'bits' is not an integer");
    int64_t b = it->get<int64_t>();
    if (b < 1 || b > 8) {
      return Status::InvalidArgument(where + ": bits " + std::to_string(b) + " not in 1..8");
    }
    out->bits = static_cast<int>(b);
  }
  if (auto it = j.find("group_size"); it != j.end()) {
    if (!it->is_number_integer()) {
      return Status::InvalidArgument(where + ": 'group_size' is not an integer");
    }
    int64_t g = it->get<int64_t>();
    if (g < 1 || g > 4096) {
      return Status::InvalidArgument(where + ": group_size " + std::to_string(g) +
                                     " not in 1..4096");
    }
    out->group_size = static_cast<int>(g);
  }
  if (auto it = j.find("mode"); it != j.end() && !it->is_null()) {
    if (!it->is_string()) return Status::InvalidArgument(where + ": 'mode' is not a string");
    out->mode = it->get<std::string>();
  }
  return Status::OK();
}

}  // namespace

std::optional<MlxQuantParams> MlxQuantization::ForModule(std::string_view module) const {
  constexpr std::string_view kWeight = ".weight";
  if (module.size() > kWeight.size() && module.substr(module.size() - kWeight.size()) == kWeight) {
    module.remove_suffix(kWeight.size());
  }
  auto it = overrides.find(module);
  if (it != overrides.end()) return it->second;
  return defaults;
}

Result<std::optional<MlxQuantization>> ParseMlxQuantization(const Json& config,
                                                            const std::string& name) {
  if (!config.is_object()) return std::optional<MlxQuantization>();
  const Json* q = nullptr;
  std::string key;
  if (auto it = config.find("quantization"); it != config.end() && it->is_object()) {
    q = &*it;
    key = "quantization";
  } else if (auto it2 = config.find("quantization_config");
             it2 != config.end() && it2->is_object() && !it2->contains("quant_method") &&
             it2->contains("bits")) {
    q = &*it2;
    key = "quantization_config";
  }
  if (q == nullptr) return std::optional<MlxQuantization>();

  MlxQuantization out;
  std::string where = name + ": " + key;
  RETURN_IF_ERROR(ParseParams(*q, MlxQuantParams{}, where, &out.defaults));
  for (auto it = q->begin(); it != q->end(); ++it) {
    const std::string& k = it.key();
    if (k == "bits" || k == "group_size" || k == "mode") continue;
    if (it->is_boolean()) {
      // false: not quantized; true: the defaults.
      out.overrides[k] = it->get<bool>() ? std::optional<MlxQuantParams>(out.defaults)
                                         : std::nullopt;
    } else if (it->is_object()) {
      MlxQuantParams p;
      RETURN_IF_ERROR(ParseParams(*it, out.defaults, where + "['" + k + "']", &p));
      out.overrides[k] = p;
    }
    // Other values (strings, numbers) are unknown settings: ignored.
  }
  return std::optional<MlxQuantization>(std::move(out));
}

}  // namespace llmhost
