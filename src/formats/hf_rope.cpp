// RoPE settings from either convention, normalized into RopeConfig.
//   transformers 5: "rope_parameters": {"rope_type": "llama3", "rope_theta": ..,
//     "factor": .., ...}, or per layer type: {"full_attention": {..},
//     "sliding_attention": {..}} (gemma3).
//   legacy: "rope_theta": .., "rope_scaling": {"type"|"rope_type": .., ...} or
//     null; gemma3 adds "rope_local_base_freq" for its sliding layers.
#include "formats/hf_config.h"
#include "formats/hf_config_fields.h"

namespace llmhost {

namespace {

using Json = nlohmann::json;

struct RopeName {
  const char* name;
  RopeType type;
};
constexpr RopeName kRopeNames[] = {
    {"default", RopeType::kDefault}, {"linear", RopeType::kLinear},
    {"dynamic", RopeType::kDynamic}, {"yarn", RopeType::kYarn},
    {"llama3", RopeType::kLlama3},   {"longrope", RopeType::kLongRope},
};

}  // namespace

const char* RopeTypeName(RopeType t) {
  for (const RopeName& n : kRopeNames) {
    if (n.type == t) return n.name;
  }
  return "other";
}

Result<RopeConfig> ParseRopeDict(const Json& dict, const RopeConfig& base,
                                 const std::string& where) {
  if (!dict.is_object()) return Status::InvalidArgument(where + " is not an object");
  JsonFields f(dict, where);
  RopeConfig r = base;
  std::string type;
  RETURN_IF_ERROR(f.String("rope_type", &type));
  if (type.empty()) RETURN_IF_ERROR(f.String("type", &type));
  if (!type.empty()) {
    r.type_name = type;
    r.type = RopeType::kOther;
    if (type == "su") {  // Phi-3's early name for longrope
      r.type = RopeType::kLongRope;
      r.type_name = "longrope";
    } else if (type == "mrope") {  // Qwen2-VL sections; frequencies as default
      r.type = RopeType::kDefault;
    }
    for (const RopeName& n : kRopeNames) {
      if (type == n.name) r.type = n.type;
    }
  }
  RETURN_IF_ERROR(f.Double("rope_theta", &r.theta));
  RETURN_IF_ERROR(f.Double("factor", &r.factor));
  RETURN_IF_ERROR(f.Double("partial_rotary_factor", &r.partial_rotary_factor));
  RETURN_IF_ERROR(f.Double("low_freq_factor", &r.low_freq_factor));
  RETURN_IF_ERROR(f.Double("high_freq_factor", &r.high_freq_factor));
  RETURN_IF_ERROR(f.OptInt("original_max_position_embeddings", &r.original_max_position_embeddings));
  RETURN_IF_ERROR(f.Double("beta_fast", &r.beta_fast));
  RETURN_IF_ERROR(f.Double("beta_slow", &r.beta_slow));
  RETURN_IF_ERROR(f.OptDouble("attention_factor", &r.attention_factor));
  RETURN_IF_ERROR(f.OptDouble("mscale", &r.mscale));
  RETURN_IF_ERROR(f.OptDouble("mscale_all_dim", &r.mscale_all_dim));
  RETURN_IF_ERROR(f.Bool("truncate", &r.truncate));
  RETURN_IF_ERROR(f.DoubleList("short_factor", &r.short_factor));
  RETURN_IF_ERROR(f.DoubleList("long_factor", &r.long_factor));

  // What each type cannot do without (as transformers' rope validation).
  auto need = [&](const char* key) -> Status {
    if (!f.Has(key)) {
      return Status::InvalidArgument(where + ": rope type '" + r.type_name + "' requires '" +
                                     key + "'");
    }
    return Status::OK();
  };
  switch (r.type) {
    case RopeType::kLinear:
    case RopeType::kDynamic:
    case RopeType::kYarn: RETURN_IF_ERROR(need("factor")); break;
    case RopeType::kLlama3:
      RETURN_IF_ERROR(need("factor"));
      RETURN_IF_ERROR(need("low_freq_factor"));
      RETURN_IF_ERROR(need("high_freq_factor"));
      if (!r.original_max_position_embeddings) {
        RETURN_IF_ERROR(need("original_max_position_embeddings"));
      }
      if (r.high_freq_factor <= r.low_freq_factor) {
        return Status::InvalidArgument(where + ": llama3 rope needs high_freq_factor > low_freq_factor");
      }
      break;
    case RopeType::kLongRope:
      RETURN_IF_ERROR(need("short_factor"));
      RETURN_IF_ERROR(need("long_factor"));
      break;
    default: break;
  }
  if (!(r.theta > 0)) return Status::InvalidArgument(where + ": rope_theta must be positive");
  if (!(r.factor > 0)) return Status::InvalidArgument(where + ": factor must be positive");
  if (!(r.partial_rotary_factor > 0 && r.partial_rotary_factor <= 1)) {
    return Status::InvalidArgument(where + ": partial_rotary_factor must be in (0, 1]");
  }
  if (r.original_max_position_embeddings && *r.original_max_position_embeddings <= 0) {
    return Status::InvalidArgument(where + ": original_max_position_embeddings must be positive");
  }
  return r;
}

namespace {

// {"full_attention": {...}, "sliding_attention": {...}}: every value an object
// and none of the keys a rope setting.
bool IsPerLayerTypeDict(const Json& j) {
  if (!j.is_object() || j.empty()) return false;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!it->is_object()) return false;
    const std::string& k = it.key();
    if (k == "rope_type" || k == "type" || k == "rope_theta" || k == "factor") return false;
  }
  return true;
}

}  // namespace

// Fills c->rope and c->rope_by_layer_type from `src` (the config object).
Status ParseRopeSettings(const Json& src, const std::string& name, ModelConfig* c) {
  JsonFields f(src, name);
  RopeConfig base;
  if (c->model_type == "gemma3" || c->model_type == "gemma3_text") base.theta = 1000000.0;
  RETURN_IF_ERROR(f.Double("rope_theta", &base.theta));
  RETURN_IF_ERROR(f.Double("partial_rotary_factor", &base.partial_rotary_factor));
  RETURN_IF_ERROR(f.OptInt("original_max_position_embeddings",
                           &base.original_max_position_embeddings));

  if (const Json* rp = f.Get("rope_parameters")) {
    if (IsPerLayerTypeDict(*rp)) {
      for (auto it = rp->begin(); it != rp->end(); ++it) {
        ASSIGN_OR_RETURN(RopeConfig r,
                         ParseRopeDict(*it, base, name + ": rope_parameters['" + it.key() + "']"));
        c->rope_by_layer_type[it.key()] = std::move(r);
      }
      auto full = c->rope_by_layer_type.find("full_attention");
      c->rope = full != c->rope_by_layer_type.end() ? full->second
                                                    : c->rope_by_layer_type.begin()->second;
    } else {
      ASSIGN_OR_RETURN(c->rope, ParseRopeDict(*rp, base, name + ": rope_parameters"));
    }
  } else {
    const Json* rs = f.Get("rope_scaling");
    // An empty dict still runs ParseRopeDict's checks on the top-level values.
    ASSIGN_OR_RETURN(c->rope, ParseRopeDict(rs ? *rs : Json::object(), base,
                                            name + (rs ? ": rope_scaling" : "")));
    if (c->rope_local_base_freq) {  // legacy gemma3: sliding layers use their own base
      Json local = {{"rope_theta", *c->rope_local_base_freq}};
      ASSIGN_OR_RETURN(c->rope_by_layer_type["sliding_attention"],
                       ParseRopeDict(local, base, name + ": rope_local_base_freq"));
      c->rope_by_layer_type["full_attention"] = c->rope;
    }
  }
  c->partial_rotary_factor = c->rope.partial_rotary_factor;
  return Status::OK();
}

}  // namespace llmhost
