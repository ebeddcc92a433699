// Block file encoding: safetensors with one tensor "kv" of shape
// [2, n_layers, block_size, kv_dim] and string metadata (docs/kv-cache.md).
#include "kv/block_file.h"

#include <charconv>
#include <cstring>
#include <ctime>

#include <nlohmann/json.hpp>

#include "formats/dtype.h"
#include "kv/tiered_block_store.h"
#include "util/json.h"

namespace llmhost {
namespace {

using nlohmann::json;

bool ParseInt(const std::string& s, int64_t* out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

Status Bad(const std::string& what) { return Status::InvalidArgument("block file: " + what); }

}  // namespace

bool ParseHexDigest(std::string_view hex, Sha256Digest* out) {
  if (hex.size() != 64) return false;
  for (size_t i = 0; i < 32; ++i) {
    int v = 0;
    for (int k = 0; k < 2; ++k) {
      char c = hex[2 * i + k];
      int d = c >= '0' && c <= '9' ? c - '0'
              : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                     : -1;
      if (d < 0) return false;
      v = v * 16 + d;
    }
    (*out)[i] = static_cast<uint8_t>(v);
  }
  return true;
}

std::string BuildBlockFileHeader(const BlockMeta& meta, const Sha256Digest& data_sha256,
                                 int64_t created_at) {
  json md = json::object();
  md["format"] = kBlockFileFormat;
  md["format_version"] = kBlockFileFormatVersion;
  md["block_key"] = ToHex(meta.key);
  md["token_count"] = std::to_string(meta.token_count);
  md["fingerprint"] = ToHex(meta.fingerprint);
  md["model"] = meta.model;
  md["n_layers"] = std::to_string(meta.n_layers);
  md["block_size"] = std::to_string(meta.block_size);
  md["kv_dim"] = std::to_string(meta.kv_dim);
  md["dtype"] = meta.dtype;
  md["created_at"] = std::to_string(created_at);
  md["data_sha256"] = ToHex(data_sha256);
  json h = json::object();
  h["__metadata__"] = std::move(md);
  h["kv"] = {{"dtype", meta.dtype},
             {"shape", {2, meta.n_layers, meta.block_size, meta.kv_dim}},
             {"data_offsets", {0, meta.data_bytes()}}};
  // A model id that is not UTF-8 must not throw: replace bad bytes.
  std::string text = h.dump(-1, ' ', false, json::error_handler_t::replace);
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + text;
}

Status ParseBlockFileHeader(std::span<const uint8_t> head, BlockFileHeader* out) {
  if (head.size() < 8) return Bad("shorter than the 8-byte header length");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | head[i];
  if (n == 0 || n > kBlockFileMaxHeaderBytes) {
    return Bad("header length " + std::to_string(n) + " is outside [1, " +
               std::to_string(kBlockFileMaxHeaderBytes) + "]");
  }
  if (head.size() - 8 < n) {
    return Bad("header truncated: length " + std::to_string(n) + ", " +
               std::to_string(head.size() - 8) + " bytes present");
  }
  std::string_view text(reinterpret_cast<const char*>(head.data() + 8), n);
  Result<json> parsed = ParseJson(text, "header", kBlockFileMaxHeaderBytes);
  if (!parsed.ok()) return Bad(parsed.status().message());
  const json& h = *parsed;
  if (!h.is_object()) return Bad("header is not a JSON object");
  if (h.size() != 2 || !h.contains("__metadata__") || !h.contains("kv")) {
    return Bad("header must hold exactly \"__metadata__\" and the tensor \"kv\"");
  }
  const json& md = h["__metadata__"];
  const json& kv = h["kv"];
  if (!md.is_object()) return Bad("\"__metadata__\" is not an object");
  auto field = [&](const char* name, std::string* v) -> Status {
    auto it = md.find(name);
    if (it == md.end() || !it->is_string()) {
      return Bad(std::string("metadata \"") + name + "\" is missing or not a string");
    }
    *v = it->get<std::string>();
    return Status::OK();
  };
  auto int_field = [&](const char* name, int64_t* v) -> Status {
    std::string s;
    RETURN_IF_ERROR(field(name, &s));
    if (!ParseInt(s, v)) return Bad(std::string("metadata \"") + name + "\" is not an integer");
    return Status::OK();
  };
  std::string s;
  RETURN_IF_ERROR(field("format", &s));
  if (s != kBlockFileFormat) return Bad("format is '" + s + "', not " + kBlockFileFormat);
  RETURN_IF_ERROR(field("format_version", &s));
  if (s != kBlockFileFormatVersion) return Bad("unsupported format_version '" + s + "'");
  BlockMeta& m = out->meta;
  m = BlockMeta{};
  RETURN_IF_ERROR(field("block_key", &s));
  if (!ParseHexDigest(s, &m.key)) return Bad("block_key is not 64 hex digits");
  RETURN_IF_ERROR(field("fingerprint", &s));
  if (!ParseHexDigest(s, &m.fingerprint)) return Bad("fingerprint is not 64 hex digits");
  RETURN_IF_ERROR(field("data_sha256", &s));
  if (!ParseHexDigest(s, &out->data_sha256)) return Bad("data_sha256 is not 64 hex digits");
  RETURN_IF_ERROR(field("model", &m.model));
  RETURN_IF_ERROR(field("dtype", &m.dtype));
  RETURN_IF_ERROR(int_field("token_count", &m.token_count));
  RETURN_IF_ERROR(int_field("n_layers", &m.n_layers));
  RETURN_IF_ERROR(int_field("block_size", &m.block_size));
  RETURN_IF_ERROR(int_field("kv_dim", &m.kv_dim));
  RETURN_IF_ERROR(int_field("created_at", &out->created_at));
  if (!DTypeFromName(m.dtype)) return Bad("unknown dtype '" + m.dtype + "'");
  if (m.n_layers < 1 || m.n_layers > kBlockMaxLayers || m.block_size < 1 ||
      m.block_size > kBlockMaxBlockSize || m.kv_dim < 1 || m.kv_dim > kBlockMaxKvDim) {
    return Bad("shape n_layers=" + std::to_string(m.n_layers) + " block_size=" +
               std::to_string(m.block_size) + " kv_dim=" + std::to_string(m.kv_dim) +
               " is out of range");
  }
  if (m.token_count < 1 || m.token_count > m.block_size) {
    return Bad("token_count " + std::to_string(m.token_count) + " is outside [1, block_size]");
  }
  uint64_t bytes = m.data_bytes();
  if (bytes == 0 || bytes > kBlockMaxDataBytes) return Bad("data size is out of range");
  // The tensor entry must agree with the metadata.
  if (!kv.is_object()) return Bad("tensor \"kv\" is not an object");
  auto dt = kv.find("dtype");
  auto shape = kv.find("shape");
  auto offs = kv.find("data_offsets");
  if (dt == kv.end() || !dt->is_string() || dt->get<std::string>() != m.dtype) {
    return Bad("tensor dtype does not match metadata dtype " + m.dtype);
  }
  const int64_t want_shape[4] = {2, m.n_layers, m.block_size, m.kv_dim};
  if (shape == kv.end() || !shape->is_array() || shape->size() != 4) {
    return Bad("tensor shape is not [2, n_layers, block_size, kv_dim]");
  }
  for (size_t i = 0; i < 4; ++i) {
    const json& d = (*shape)[i];
    if (!d.is_number_integer() || d.get<int64_t>() != want_shape[i]) {
      return Bad("tensor shape is not [2, n_layers, block_size, kv_dim]");
    }
  }
  if (offs == kv.end() || !offs->is_array() || offs->size() != 2 ||
      !(*offs)[0].is_number_unsigned() || !(*offs)[1].is_number_unsigned() ||
      (*offs)[0].get<uint64_t>() != 0 || (*offs)[1].get<uint64_t>() != bytes) {
    return Bad("tensor data_offsets are not [0, " + std::to_string(bytes) + "]");
  }
  out->header_bytes = 8 + n;
  return Status::OK();
}

std::vector<uint8_t> EncodeBlockFile(const BlockMeta& meta, std::span<const uint8_t> data) {
  Sha256 sha;
  sha.Update(data.data(), data.size());
  std::string head = BuildBlockFileHeader(meta, sha.Finish(), static_cast<int64_t>(std::time(nullptr)));
  std::vector<uint8_t> out(head.begin(), head.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

Status DecodeBlockFileHeader(std::span<const uint8_t> head, BlockMeta* meta,
                             uint64_t* header_bytes) {
  BlockFileHeader h;
  RETURN_IF_ERROR(ParseBlockFileHeader(head, &h));
  if (meta) *meta = std::move(h.meta);
  if (header_bytes) *header_bytes = h.header_bytes;
  return Status::OK();
}

Status DecodeBlockFile(std::span<const uint8_t> file, BlockMeta* meta,
                       std::vector<uint8_t>* data) {
  BlockFileHeader h;
  RETURN_IF_ERROR(ParseBlockFileHeader(file, &h));
  uint64_t bytes = h.meta.data_bytes();
  if (file.size() - h.header_bytes != bytes) {
    return Bad("data is " + std::to_string(file.size() - h.header_bytes) + " bytes, header says " +
               std::to_string(bytes) + (file.size() - h.header_bytes < bytes ? " (truncated)" : ""));
  }
  std::span<const uint8_t> body = file.subspan(h.header_bytes);
  Sha256 sha;
  sha.Update(body.data(), body.size());
  if (sha.Finish() != h.data_sha256) {
    return Status::Corruption("block file " + ToHex(h.meta.key) + ": data SHA-256 mismatch");
  }
  if (data) data->assign(body.begin(), body.end());
  if (meta) *meta = std::move(h.meta);
  return Status::OK();
}

}  // namespace llmhost
