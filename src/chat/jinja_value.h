// Values of the Jinja engine, with Python semantics: templates see JSON data
// as Python dicts/lists/str/int/float/bool/None, plus Jinja's Undefined and a
// few runtime objects (namespace, macro, loop, bound method).
//
// Values are immutable once built (the sandbox forbids mutating methods); the
// only mutable object is a namespace. Containers are shared by pointer, so a
// copy is cheap.
#pragma once

#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace llmhost::jinja {

class Value;
class Renderer;

// Deepest nesting of lists/dicts a value may have (JSON input or built by a
// template); deeper structures are refused so that printing, comparing and
// destroying them cannot overflow the stack.
constexpr int kMaxValueDepth = 128;

// An error while parsing or rendering: a Python/Jinja exception type name
// ("TypeError", "UndefinedError", "TemplateSyntaxError", ...) and a message.
class Error : public std::exception {
 public:
  Error(std::string type, std::string message, int line = 0)
      : type_(std::move(type)), message_(std::move(message)), line_(line) {}
  const std::string& type() const { return type_; }
  const std::string& message() const { return message_; }
  int line() const { return line_; }
  void set_line(int line) { line_ = line; }
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  std::string type_;
  std::string message_;
  int line_;
};

[[noreturn]] void Throw(const char* type, std::string message);
[[noreturn]] inline void ThrowTypeError(std::string message) { Throw("TypeError", std::move(message)); }

enum class Kind : uint8_t { kUndefined, kNone, kBool, kInt, kFloat, kString, kSeq, kDict, kObject };

// Python sequence types, all stored as a vector. Generators and dict views
// differ from lists in what they allow (len, indexing, JSON, repr).
enum class SeqKind : uint8_t { kList, kTuple, kGenerator, kKeys, kValues, kItems, kRange };

struct HeapObj {
  virtual ~HeapObj() = default;
};

struct StrObj final : HeapObj {
  explicit StrObj(std::string v) : s(std::move(v)) {}
  std::string s;
};

struct SeqObj;
class DictObj;
class Object;

// Call arguments as Python sees them.
struct CallArgs {
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;
};

class Value {
 public:
  Value() : i_(0) {}  // Undefined with no hint

  static Value None();
  static Value Bool(bool b);
  static Value Int(int64_t i);
  static Value Float(double d);
  static Value Str(std::string s);
  // A markupsafe.Markup string (from |safe or |escape): concatenating or
  // formatting plain strings into it HTML-escapes them, as in Jinja2.
  static Value Markup(std::string s);
  // Undefined that remembers why (used in error messages). `unsafe`: it came
  // from a blocked attribute and raises SecurityError when used.
  static Value Undefined(std::string hint, bool unsafe = false);
  // Throws when the nesting would exceed kMaxValueDepth.
  static Value Seq(SeqKind kind, std::vector<Value> items);
  static Value List(std::vector<Value> items) { return Seq(SeqKind::kList, std::move(items)); }
  static Value Tuple(std::vector<Value> items) { return Seq(SeqKind::kTuple, std::move(items)); }
  static Value Dict(std::shared_ptr<DictObj> dict);
  static Value Obj(std::shared_ptr<Object> obj);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_float() const { return kind_ == Kind::kFloat; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_seq() const { return kind_ == Kind::kSeq; }
  bool is_dict() const { return kind_ == Kind::kDict; }
  bool is_object() const { return kind_ == Kind::kObject; }
  // bool, int or float (Python bool is an int).
  bool is_number() const { return kind_ == Kind::kBool || kind_ == Kind::kInt || kind_ == Kind::kFloat; }
  // bool or int.
  bool is_integral() const { return kind_ == Kind::kBool || kind_ == Kind::kInt; }
  bool is_list() const;   // a list or a tuple: indexable, sliceable, JSON-able
  bool is_unsafe_undefined() const { return kind_ == Kind::kUndefined && unsafe_; }
  bool is_markup() const { return kind_ == Kind::kString && unsafe_; }

  bool b() const { return b_; }
  int64_t i() const { return kind_ == Kind::kBool ? (b_ ? 1 : 0) : i_; }  // bool or int
  double f() const { return f_; }
  double AsDouble() const;  // any number
  const std::string& s() const;        // string (or the hint of an Undefined, maybe "")
  const SeqObj& seq() const;
  const DictObj& dict() const;
  Object& obj() const;
  const std::shared_ptr<HeapObj>& heap() const { return ptr_; }

  bool Truthy() const;
  // Python type name for messages: 'str', 'list', 'dict', 'NoneType', ...
  std::string TypeName() const;
  // Nesting depth: 0 for scalars, 1 + deepest child for containers.
  int Depth() const;
  // True when a namespace may be reachable from this value (see namespace
  // assignment: namespaces must never contain themselves).
  bool MayHoldNamespace() const;

 private:
  Kind kind_ = Kind::kUndefined;
  bool unsafe_ = false;  // Undefined: blocked attribute; String: Markup
  union {
    bool b_;
    int64_t i_;
    double f_;
  };
  std::shared_ptr<HeapObj> ptr_;
};

struct SeqObj final : HeapObj {
  SeqKind kind = SeqKind::kList;
  std::vector<Value> items;
  int depth = 1;
  bool has_ns = false;
  int64_t range_start = 0, range_stop = 0, range_step = 1;  // kRange: for repr
};

// An insertion-ordered dict. Keys compare with Python equality (1 == 1.0).
class DictObj final : public HeapObj {
 public:
  const std::vector<std::pair<Value, Value>>& items() const { return items_; }
  size_t size() const { return items_.size(); }
  const Value* Find(const Value& key) const;
  const Value* FindStr(std::string_view key) const;
  // Inserts or replaces. Throws TypeError for unhashable keys and when the
  // nesting would exceed kMaxValueDepth.
  void Set(Value key, Value value);
  int depth() const { return depth_; }
  bool has_ns() const { return has_ns_; }

 private:
  std::vector<std::pair<Value, Value>> items_;
  // String keys -> position, built once the dict grows past a few entries.
  std::unordered_map<std::string_view, size_t> index_;
  int depth_ = 1;
  bool has_ns_ = false;
};

// Runtime objects: namespace, macro, loop, builtin function, bound method.
class Object : public HeapObj {
 public:
  virtual std::string TypeName() const = 0;
  virtual std::string Repr() const { return "<" + TypeName() + " object>"; }
  // Attribute lookup; false when the object has no such attribute.
  virtual bool GetAttr(std::string_view name, Value* out) { return false; }
  virtual bool IsCallable() const { return false; }
  virtual Value Call(Renderer& r, CallArgs& args);
  virtual bool IsNamespace() const { return false; }
  virtual bool MayHoldNamespace() const { return false; }
  // Python len() where the object supports it; -1 otherwise.
  virtual int64_t Length() const { return -1; }
};

// markupsafe's escape() of a plain string.
std::string HtmlEscape(std::string_view s);

// Python str(v) and repr(v).
std::string ToStr(const Value& v);
std::string Repr(const Value& v);
void AppendStr(const Value& v, std::string* out);
// Python repr of a float: shortest round-trip digits ("0.1", "1e-05", "1e+16").
std::string FloatRepr(double d);
// Python repr of a str.
void AppendStrRepr(std::string_view s, std::string* out);

// Python ==.
bool Equals(const Value& a, const Value& b);
// True when Python can order a and b with < (numbers, strs, lists, tuples).
bool Orderable(const Value& a, const Value& b);
// Python <, as -1/0/1; throws TypeError for unorderable types.
int Compare(const Value& a, const Value& b);
// True when the value may be a dict key (str, numbers, None, tuples of those).
bool IsHashable(const Value& v);

}  // namespace llmhost::jinja
