#include "server/json_fields.h"

#include <cmath>

#include "util/json.h"

namespace llmhost::server {

namespace {

ApiError TypeError(const std::string& field, const char* want, const OJson& got) {
  return BadRequest("'" + field + "' must be " + want + ", got " + JsonTypeName(got), field);
}

}  // namespace

std::string JsonTypeName(const OJson& v) {
  switch (v.type()) {
    case OJson::value_t::null: return "null";
    case OJson::value_t::boolean: return "a boolean";
    case OJson::value_t::string: return "a string";
    case OJson::value_t::array: return "an array";
    case OJson::value_t::object: return "an object";
    case OJson::value_t::number_integer:
    case OJson::value_t::number_unsigned: return "an integer";
    case OJson::value_t::number_float: return "a number";
    default: return "an unsupported value";
  }
}

MaybeError ParseJsonObject(std::string_view body, OJson* out) {
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    return BadRequest("the request body is empty: expected a JSON object");
  }
  // The transport already capped the body at --max-body-size.
  Result<OJson> j = ParseOrderedJson(body, "the request body", body.size());
  if (!j.ok()) return BadRequest(j.status().message());
  if (!j->is_object()) return BadRequest("the request body must be a JSON object, got " + JsonTypeName(*j));
  *out = std::move(*j);
  return std::nullopt;
}

std::string FieldPath(const std::string& parent, const std::string& name) {
  return parent.empty() ? name : parent + "." + name;
}

std::string IndexPath(const std::string& parent, size_t index) {
  return parent + "[" + std::to_string(index) + "]";
}

MaybeError ReadBool(const OJson& obj, const char* name, const std::string& path,
                    std::optional<bool>* out) {
  auto it = obj.find(name);
  if (it == obj.end() || it->is_null()) return std::nullopt;
  if (!it->is_boolean()) return TypeError(FieldPath(path, name), "a boolean", *it);
  *out = it->get<bool>();
  return std::nullopt;
}

MaybeError ReadString(const OJson& obj, const char* name, const std::string& path,
                      std::optional<std::string>* out) {
  auto it = obj.find(name);
  if (it == obj.end() || it->is_null()) return std::nullopt;
  if (!it->is_string()) return TypeError(FieldPath(path, name), "a string", *it);
  *out = it->get<std::string>();
  return std::nullopt;
}

MaybeError ReadNumber(const OJson& obj, const char* name, const std::string& path, double min,
                      double max, std::optional<double>* out) {
  auto it = obj.find(name);
  if (it == obj.end() || it->is_null()) return std::nullopt;
  const std::string field = FieldPath(path, name);
  if (!it->is_number()) return TypeError(field, "a number", *it);
  const double v = it->get<double>();
  if (!std::isfinite(v) || v < min || v > max) {
    char buf[160];
    std::snprintf(buf, sizeof(buf), "'%s' must be between %g and %g, got %g", field.c_str(), min, max, v);
    return BadRequest(buf, field);
  }
  *out = v;
  return std::nullopt;
}

MaybeError ReadInteger(const OJson& obj, const char* name, const std::string& path, int64_t min,
                       int64_t max, std::optional<int64_t>* out) {
  auto it = obj.find(name);
  if (it == obj.end() || it->is_null()) return std::nullopt;
  const std::string field = FieldPath(path, name);
  int64_t v = 0;
  if (it->is_number_unsigned()) {
    const uint64_t u = it->get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX)) return BadRequest("'" + field + "' is too large", field);
    v = static_cast<int64_t>(u);
  } else if (it->is_number_integer()) {
    v = it->get<int64_t>();
  } else if (it->is_number_float()) {
    const double d = it->get<double>();
    // 5.0 is accepted as 5; 5.5 is not an integer.
    if (!std::isfinite(d) || d != std::floor(d) || std::fabs(d) > 9.0e15) {
      return TypeError(field, "an integer", *it);
    }
    v = static_cast<int64_t>(d);
  } else {
    return TypeError(field, "an integer", *it);
  }
  if (v < min || v > max) {
    return BadRequest("'" + field + "' must be between " + std::to_string(min) + " and " +
                          std::to_string(max) + ", got " + std::to_string(v),
                      field);
  }
  *out = v;
  return std::nullopt;
}

MaybeError ReadStringList(const OJson& obj, const char* name, const std::string& path,
                          size_t max_items, std::vector<std::string>* out) {
  auto it = obj.find(name);
  if (it == obj.end() || it->is_null()) return std::nullopt;
  const std::string field = FieldPath(path, name);
  if (it->is_string()) {
    if (!it->get_ref<const std::string&>().empty()) out->push_back(it->get<std::string>());
    return std::nullopt;
  }
  if (!it->is_array()) return TypeError(field, "a string or an array of strings", *it);
  if (it->size() > max_items) {
    return BadRequest("'" + field + "' has " + std::to_string(it->size()) + " items; at most " +
                          std::to_string(max_items) + " are allowed",
                      field);
  }
  for (size_t i = 0; i < it->size(); ++i) {
    const OJson& s = (*it)[i];
    if (!s.is_string()) return TypeError(IndexPath(field, i), "a string", s);
    if (!s.get_ref<const std::string&>().empty()) out->push_back(s.get<std::string>());
  }
  return std::nullopt;
}

}  // namespace llmhost::server
