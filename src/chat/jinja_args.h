// Binding call arguments to Python-style signatures, and argument coercions,
// for the builtin filters, tests, methods and globals.
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "chat/jinja_value.h"

namespace llmhost::jinja {

class Args {
 public:
  // Binds positional then keyword arguments to `names`, in order. Throws
  // TypeError for surplus positionals, unknown or repeated keywords, and when
  // fewer than `required` are given.
  Args(const char* fn, const CallArgs& args, std::initializer_list<const char*> names, size_t required = 0)
      : fn_(fn) {
    std::vector<const char*> n(names);
    vals_.resize(n.size());
    given_.assign(n.size(), false);
    if (args.pos.size() > n.size()) {
      ThrowTypeError(std::string(fn) + "() takes at most " + std::to_string(n.size()) + " argument(s) (" +
                     std::to_string(args.pos.size()) + " given)");
    }
    for (size_t i = 0; i < args.pos.size(); ++i) {
      vals_[i] = args.pos[i];
      given_[i] = true;
    }
    for (const auto& [k, v] : args.kw) {
      size_t i = 0;
      while (i < n.size() && k != n[i]) ++i;
      if (i == n.size()) ThrowTypeError(std::string(fn) + "() got an unexpected keyword argument '" + k + "'");
      if (given_[i]) ThrowTypeError(std::string(fn) + "() got multiple values for argument '" + k + "'");
      vals_[i] = v;
      given_[i] = true;
    }
    for (size_t i = 0; i < required && i < n.size(); ++i) {
      if (!given_[i]) ThrowTypeError(std::string(fn) + "() missing required argument '" + n[i] + "'");
    }
  }

  bool has(size_t i) const { return given_[i]; }
  // Given and not None.
  bool set(size_t i) const { return given_[i] && !vals_[i].is_none(); }
  const Value& operator[](size_t i) const { return vals_[i]; }
  Value get(size_t i, Value dflt) const { return given_[i] ? vals_[i] : dflt; }
  const char* fn() const { return fn_; }

 private:
  const char* fn_;
  std::vector<Value> vals_;
  std::vector<bool> given_;
};

// An integer argument (bool counts); TypeError otherwise.
inline int64_t IntArg(const Value& v) {
  if (v.is_integral()) return v.i();
  ThrowTypeError("'" + v.TypeName() + "' object cannot be interpreted as an integer");
}

// A str argument; TypeError otherwise.
inline const std::string& StrArg(const Value& v, const char* what = "argument") {
  if (v.is_string()) return v.s();
  ThrowTypeError(std::string(what) + " must be str, not " + v.TypeName());
}

}  // namespace llmhost::jinja
