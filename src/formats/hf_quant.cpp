// Reads the GPTQ / AWQ / FP8 `quantization_config` of a config.json.
#include "formats/hf_quant.h"

#include <algorithm>
#include <cctype>

#include "formats/hf_config_fields.h"

namespace llmhost {

using Json = nlohmann::json;

namespace {

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// group_size as the configs write it: -1 (or absent) for one group per row.
Status GroupSize(const JsonFields& f, const char* key, int* out) {
  int64_t g = -1;
  RETURN_IF_ERROR(f.Int(key, &g));
  if (g != -1 && (g <= 0 || g > (1 << 20))) return f.Error(key, "-1 or a positive group size", *f.Get(key));
  *out = g == -1 ? 0 : static_cast<int>(g);
  return Status::OK();
}

Status ParseGptq(const JsonFields& f, HfQuantization* q) {
  int64_t bits = 4;
  RETURN_IF_ERROR(f.Int("bits", &bits));
  if (bits != 4 && bits != 8) {
    return Status::NotSupported(f.where() + ": GPTQ with " + std::to_string(bits) +
                                " bits is not supported (4 or 8 bits)");
  }
  q->bits = static_cast<int>(bits);
  RETURN_IF_ERROR(GroupSize(f, "group_size", &q->group_size));
  bool marlin = false;
  RETURN_IF_ERROR(f.Bool("is_marlin_format", &marlin));
  std::string format = "gptq";
  RETURN_IF_ERROR(f.String("checkpoint_format", &format));
  format = Lower(format);
  if (marlin || format == "marlin") {
    return Status::NotSupported(f.where() + ": GPTQ checkpoints in Marlin's repacked format are not supported "
                                            "(use the checkpoint_format \"gptq\" or \"gptq_v2\" files)");
  }
  if (format != "gptq" && format != "gptq_v2") {
    return Status::NotSupported(f.where() + ": GPTQ checkpoint_format '" + format +
                                "' is not supported (\"gptq\" or \"gptq_v2\")");
  }
  q->zeros_minus_one = format == "gptq";
  return Status::OK();
}

Status ParseAwq(const JsonFields& f, HfQuantization* q) {
  int64_t bits = 4;
  RETURN_IF_ERROR(f.Int("w_bit", &bits));
  RETURN_IF_ERROR(f.Int("bits", &bits));
  if (bits != 4) {
    return Status::NotSupported(f.where() + ": AWQ with " + std::to_string(bits) + " bits is not supported (4 bits)");
  }
  q->bits = 4;
  RETURN_IF_ERROR(GroupSize(f, "q_group_size", &q->group_size));
  if (f.Has("group_size")) RETURN_IF_ERROR(GroupSize(f, "group_size", &q->group_size));
  std::string version = "gemm";
  RETURN_IF_ERROR(f.String("version", &version));
  if (Lower(version) != "gemm") {
    return Status::NotSupported(f.where() + ": AWQ version '" + version +
                                "' is not supported (the \"gemm\" layout, AutoAWQ's default)");
  }
  bool zero_point = true;
  RETURN_IF_ERROR(f.Bool("zero_point", &zero_point));
  if (!zero_point) return Status::NotSupported(f.where() + ": AWQ without zero points is not supported");
  return Status::OK();
}

Status BlockSize(const JsonFields& f, const char* key, HfQuantization* q) {
  std::vector<int64_t> block;
  RETURN_IF_ERROR(f.IntList(key, &block));
  if (block.empty()) return Status::OK();
  if (block.size() != 2 || block[0] <= 0 || block[1] <= 0 || block[0] > 65536 || block[1] > 65536) {
    return f.Error(key, "two positive sizes [rows, columns]", *f.Get(key));
  }
  q->block_rows = static_cast<int>(block[0]);
  q->block_cols = static_cast<int>(block[1]);
  return Status::OK();
}

Status ParseFp8(const JsonFields& f, HfQuantization* q) {
  std::string fmt = "e4m3";
  RETURN_IF_ERROR(f.String("fmt", &fmt));
  if (Lower(fmt) != "e4m3") {
    return Status::NotSupported(f.where() + ": FP8 format '" + fmt + "' is not supported (e4m3)");
  }
  return BlockSize(f, "weight_block_size", q);
}

// compressed-tensors: FP8 weights ("float-quantized": every config group's
// weights 8-bit floats) or packed integers ("pack-quantized": 4- or 8-bit
// ints, per group or per channel).
Status ParseCompressedTensors(const JsonFields& f, HfQuantization* q) {
  std::string format;
  RETURN_IF_ERROR(f.String("format", &format));
  if (format != "float-quantized" && format != "pack-quantized") {
    return Status::NotSupported(f.where() + ": compressed-tensors format '" + format +
                                "' is not supported (\"float-quantized\": FP8 weights, \"pack-quantized\": "
                                "4/8-bit integer weights)");
  }
  const bool packed = format == "pack-quantized";
  q->method = packed ? HfQuantization::Method::kPacked : HfQuantization::Method::kFp8;
  const Json* groups = f.Get("config_groups");
  if (groups == nullptr || !groups->is_object() || groups->empty()) {
    return Status::InvalidArgument(f.where() + ": 'config_groups' must be an object of quantization groups");
  }
  bool first = true;
  for (auto it = groups->begin(); it != groups->end(); ++it) {
    const std::string where = f.where() + ".config_groups." + it.key();
    if (!it->is_object()) return Status::InvalidArgument(where + " must be an object");
    const JsonFields g(*it, where);
    const Json* weights = g.Get("weights");
    if (weights == nullptr || !weights->is_object()) {
      return Status::InvalidArgument(where + ": 'weights' must be an object");
    }
    const JsonFields w(*weights, where + ".weights");
    int64_t bits = 0;
    std::string type, strategy;
    RETURN_IF_ERROR(w.Int("num_bits", &bits));
    RETURN_IF_ERROR(w.String("type", &type));
    RETURN_IF_ERROR(w.String("strategy", &strategy));
    if (packed) {
      if ((bits != 4 && bits != 8) || type != "int") {
        return Status::NotSupported(where + ": packed weights of " + std::to_string(bits) + "-bit type '" + type +
                                    "' are not supported (4- or 8-bit int)");
      }
      if (strategy != "group" && strategy != "channel") {
        return Status::NotSupported(where + ": packed weight strategy '" + strategy +
                                    "' is not supported (group or channel)");
      }
      int group = 0;
      if (strategy == "group") {
        RETURN_IF_ERROR(GroupSize(w, "group_size", &group));
        if (group == 0) return Status::InvalidArgument(where + ": a group strategy needs a 'group_size'");
      }
      bool symmetric = true;
      RETURN_IF_ERROR(w.Bool("symmetric", &symmetric));
      if (!first && (bits != q->bits || group != q->group_size || symmetric != q->symmetric)) {
        return Status::NotSupported(f.where() + ": config groups with different weight schemes are not supported");
      }
      q->bits = static_cast<int>(bits);
      q->group_size = group;
      q->symmetric = symmetric;
      first = false;
      continue;
    }
    if (bits != 8 || type != "float") {
      return Status::NotSupported(where + ": weights of " + std::to_string(bits) + "-bit type '" + type +
                                  "' are not supported (8-bit float)");
    }
    if (strategy != "tensor" && strategy != "channel" && strategy != "block" && strategy != "group") {
      return Status::NotSupported(where + ": weight strategy '" + strategy +
                                  "' is not supported (tensor, channel, group or block)");
    }
    HfQuantization this_group;
    if (strategy == "block") {
      RETURN_IF_ERROR(BlockSize(w, "block_structure", &this_group));
      if (this_group.block_rows == 0) return Status::InvalidArgument(where + ": a block strategy needs 'block_structure'");
    }
    if (!first && (this_group.block_rows != q->block_rows || this_group.block_cols != q->block_cols)) {
      return Status::NotSupported(f.where() + ": config groups with different block sizes are not supported");
    }
    q->block_rows = this_group.block_rows;
    q->block_cols = this_group.block_cols;
    first = false;
  }
  return Status::OK();
}

}  // namespace

const char* HfQuantization::MethodName() const {
  switch (method) {
    case Method::kGptq: return "gptq";
    case Method::kAwq: return "awq";
    case Method::kFp8: return "fp8";
    case Method::kPacked: return "compressed-tensors";
  }
  return "?";
}

std::string HfQuantization::Describe() const {
  if (method == Method::kFp8) {
    return block_rows > 0 ? "FP8 e4m3 (" + std::to_string(block_rows) + "x" + std::to_string(block_cols) + " blocks)"
                          : "FP8 e4m3";
  }
  std::string s = method == Method::kGptq ? "GPTQ " : method == Method::kAwq ? "AWQ " : "packed int ";
  if (method == Method::kPacked) s += symmetric ? "symmetric " : "asymmetric ";
  s += std::to_string(bits) + "-bit";
  s += group_size > 0 ? " g" + std::to_string(group_size) : " (one group per row)";
  return s;
}

Result<std::optional<HfQuantization>> ParseHfQuantization(const Json& config, const std::string& name) {
  if (!config.is_object()) return std::optional<HfQuantization>();
  auto it = config.find("quantization_config");
  if (it == config.end() || !it->is_object() || !it->contains("quant_method")) return std::optional<HfQuantization>();
  const JsonFields f(*it, name + ": quantization_config");
  std::string method;
  RETURN_IF_ERROR(f.String("quant_method", &method));
  method = Lower(method);
  HfQuantization q;
  if (method == "gptq") {
    q.method = HfQuantization::Method::kGptq;
    RETURN_IF_ERROR(ParseGptq(f, &q));
  } else if (method == "awq") {
    q.method = HfQuantization::Method::kAwq;
    RETURN_IF_ERROR(ParseAwq(f, &q));
  } else if (method == "fp8") {
    q.method = HfQuantization::Method::kFp8;
    RETURN_IF_ERROR(ParseFp8(f, &q));
  } else if (method == "compressed-tensors") {
    RETURN_IF_ERROR(ParseCompressedTensors(f, &q));
  } else {
    return Status::NotSupported(name + ": quantization method '" + method +
                                "' is not supported (gptq, awq, fp8, compressed-tensors FP8 or packed int, or MLX)");
  }
  return std::optional<HfQuantization>(q);
}

}  // namespace llmhost
