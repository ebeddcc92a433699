// Private helper for the config parsers: typed reads of JSON fields, where an
// absent or null field leaves the output unchanged and a field of the wrong
// type is an InvalidArgument naming the file and the field.
#pragma once

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/status.h"

namespace llmhost {

class JsonFields {
 public:
  JsonFields(const nlohmann::json& j, std::string where) : j_(j), where_(std::move(where)) {}

  // Present and not null.
  bool Has(const char* key) const {
    auto it = j_.find(key);
    return it != j_.end() && !it->is_null();
  }
  const nlohmann::json* Get(const char* key) const {
    auto it = j_.find(key);
    return it == j_.end() || it->is_null() ? nullptr : &*it;
  }

  Status Int(const char* key, int64_t* out) const {
    const nlohmann::json* v = Get(key);
    if (v == nullptr) return Status::OK();
    std::optional<int64_t> i = AsInt(*v);
    if (!i) return Error(key, "an integer", *v);
    *out = *i;
    return Status::OK();
  }
  Status OptInt(const char* key, std::optional<int64_t>* out) const {
    if (!Has(key)) return Status::OK();
    int64_t v = 0;
    RETURN_IF_ERROR(Int(key, &v));
    *out = v;
    return Status::OK();
  }
  Status Double(const char* key, double* out) const {
    const nlohmann::json* v = Get(key);
    if (v == nullptr) return Status::OK();
    if (!v->is_number()) return Error(key, "a number", *v);
    *out = v->get<double>();
    return Status::OK();
  }
  Status OptDouble(const char* key, std::optional<double>* out) const {
    if (!Has(key)) return Status::OK();
    double v = 0;
    RETURN_IF_ERROR(Double(key, &v));
    *out = v;
    return Status::OK();
  }
  Status Bool(const char* key, bool* out) const {
    const nlohmann::json* v = Get(key);
    if (v == nullptr) return Status::OK();
    if (!v->is_boolean()) return Error(key, "true or false", *v);
    *out = v->get<bool>();
    return Status::OK();
  }
  Status OptBool(const char* key, std::optional<bool>* out) const {
    if (!Has(key)) return Status::OK();
    bool v = false;
    RETURN_IF_ERROR(Bool(key, &v));
    *out = v;
    return Status::OK();
  }
  Status String(const char* key, std::string* out) const {
    const nlohmann::json* v = Get(key);
    if (v == nullptr) return Status::OK();
    if (!v->is_string()) return Error(key, "a string", *v);
    *out = v->get<std::string>();
    return Status::OK();
  }
  // An integer or a list of integers (token ids).
  Status IntOrList(const char* key, std::vector<int64_t>* out) const {
    const nlohmann::json* v = Get(key);
    if (v == nullptr) return Status::OK();
    out->clear();
    if (v->is_array()) {
      for (const nlohmann::json& e : *v) {
        std::optional<int64_t> i = AsInt(e);
        if (!i) return Error(key, "an integer or a list of integers", *v);
        out->push_back(*i);
      }
      return Status::OK();
    }
    std::optional<int64_t> i = AsInt(*v);
    if (!i) return Error(key, "an integer or a list of integers", *v);
    out->push_back(*i);
    return Status::OK();
  }
  Status IntList(const char* key, std::vector<int64_t>* out) const {
    const nlohmann::json* v = Get(key);
    if (v == nullptr) return Status::OK();
    if (!v->is_array()) return Error(key, "a list of integers", *v);
    return IntOrList(key, out);
  }
  Status DoubleList(const char* key, std::vector<double>* out) const {
    const nlohmann::json* v = Get(key);
    if (v == nullptr) return Status::OK();
    if (!v->is_array()) return Error(key, "a list of numbers", *v);
    out->clear();
    for (const nlohmann::json& e : *v) {
      if (!e.is_number()) return Error(key, "a list of numbers", *v);
      out->push_back(e.get<double>());
    }
    return Status::OK();
  }

  Status Error(const char* key, const char* expected, const nlohmann::json& v) const {
    std::string shown = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (shown.size() > 60) shown = shown.substr(0, 57) + "...";
    return Status::InvalidArgument(where_ + ": '" + key + "' must be " + expected + ", got " +
                                   shown);
  }
  const std::string& where() const { return where_; }

  // Integers, and floats with an integral value (1e6, 4096.0).
  static std::optional<int64_t> AsInt(const nlohmann::json& v) {
    if (v.is_number_unsigned()) {
      uint64_t u = v.get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
      return static_cast<int64_t>(u);
    }
    if (v.is_number_integer()) return v.get<int64_t>();
    if (v.is_number_float()) {
      double d = v.get<double>();
      if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e18) {
        return static_cast<int64_t>(d);
      }
    }
    return std::nullopt;
  }

 private:
  const nlohmann::json& j_;
  std::string where_;
};

}  // namespace llmhost
