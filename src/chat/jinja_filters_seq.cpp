// Filters on sequences and mappings: first/last/join/list, sort/dictsort/
// unique, map/select/reject(attr), batch/slice, sum/min/max, groupby.
#include <algorithm>

#include "chat/jinja_builtins_impl.h"
#include "chat/jinja_ops.h"
#include "chat/jinja_unicode.h"

namespace llmhost::jinja {

Value GetAttrPath(Renderer& r, const Value& item, const Value& attribute) {
  if (attribute.is_none() || attribute.is_undefined()) return item;
  if (!attribute.is_string()) return r.GetItem(item, attribute);
  Value cur = item;
  const std::string& path = attribute.s();
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (digits && part.size() < 18) {
      cur = r.GetItem(cur, Value::Int(std::stoll(part)));
    } else {
      cur = r.GetItem(cur, Value::Str(part));
    }
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return cur;
}

namespace {

Value Generator(std::vector<Value> items) { return Value::Seq(SeqKind::kGenerator, std::move(items)); }

Value IgnoreCase(const Value& v) { return v.is_string() ? Value::Str(PyLower(v.s())) : v; }

// Sort key for sort/unique/min/max: attribute lookup (comma-separated
// attributes give a list key), lowercased strings unless case sensitive.
Value SortKey(Renderer& r, const Value& item, const Value& attribute, bool case_sensitive, bool multi) {
  // sort's multi-attribute getter always yields a list key (so equal
  // Undefined keys compare equal instead of failing).
  if (multi && !attribute.is_string()) {
    Value k = GetAttrPath(r, item, attribute);
    return Value::List({case_sensitive ? k : IgnoreCase(k)});
  }
  if (multi) {
    std::vector<Value> keys;
    const std::string& attrs = attribute.s();
    size_t start = 0;
    while (true) {
      size_t comma = attrs.find(',', start);
      Value k = GetAttrPath(r, item, Value::Str(attrs.substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
      keys.push_back(case_sensitive ? k : IgnoreCase(k));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    return Value::List(std::move(keys));
  }
  Value k = GetAttrPath(r, item, attribute);
  return case_sensitive ? k : IgnoreCase(k);
}

void SortByKeys(Renderer& r, std::vector<Value>* items, std::vector<Value>* keys, bool reverse) {
  r.Charge(items->size() * 4);
  std::vector<size_t> order(items->size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return reverse ? Compare((*keys)[b], (*keys)[a]) < 0 : Compare((*keys)[a], (*keys)[b]) < 0;
  });
  std::vector<Value> sorted;
  sorted.reserve(order.size());
  for (size_t i : order) sorted.push_back((*items)[i]);
  *items = std::move(sorted);
}

Value FFirst(Renderer& r, const Value& v, CallArgs& args) {
  Args a("first", args, {});
  if (v.is_seq() && v.seq().kind == SeqKind::kGenerator) {
    auto& items = const_cast<SeqObj&>(v.seq()).items;  // next() takes one item
    if (items.empty()) return Value::Undefined("No first item, sequence was empty.");
    Value first = items.front();
    items.erase(items.begin());
    return first;
  }
  std::vector<Value> items = r.Iterate(v);
  if (items.empty()) return Value::Undefined("No first item, sequence was empty.");
  return items.front();
}

Value FLast(Renderer& r, const Value& v, CallArgs& args) {
  Args a("last", args, {});
  bool reversible = v.is_undefined() || v.is_string() || v.is_dict() ||
                    (v.is_seq() && v.seq().kind != SeqKind::kGenerator);
  if (!reversible) ThrowTypeError("'" + v.TypeName() + "' object is not reversible");
  std::vector<Value> items = r.Iterate(v);
  if (items.empty()) return Value::Undefined("No last item, sequence was empty.");
  return items.back();
}

Value FJoin(Renderer& r, const Value& v, CallArgs& args) {
  Args a("join", args, {"d", "attribute"});
  std::string sep = a.has(0) ? ToStr(a[0]) : "";
  std::vector<Value> items = r.Iterate(v);
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += sep;
    Value item = a.set(1) ? GetAttrPath(r, items[i], a[1]) : items[i];
    AppendStr(item, &out);
    r.CheckStringSize(out.size());
  }
  r.Charge(out.size() / 64);
  return Value::Str(std::move(out));
}

Value FList(Renderer& r, const Value& v, CallArgs& args) {
  Args a("list", args, {});
  return Value::List(r.Iterate(v));
}

Value FItems(Renderer&, const Value& v, CallArgs& args) {
  Args a("items", args, {});
  if (v.is_undefined()) return Generator({});
  if (!v.is_dict()) ThrowTypeError("Can only get item pairs from a mapping.");
  std::vector<Value> out;
  for (const auto& [k, val] : v.dict().items()) out.push_back(Value::Tuple({k, val}));
  return Generator(std::move(out));
}

Value FDictsort(Renderer& r, const Value& v, CallArgs& args) {
  Args a("dictsort", args, {"case_sensitive", "by", "reverse"});
  bool cs = a.has(0) && a[0].Truthy();
  std::string by = a.has(1) ? ToStr(a[1]) : "key";
  bool reverse = a.has(2) && a[2].Truthy();
  if (by != "key" && by != "value") Throw("FilterArgumentError", "You can only sort by either \"key\" or \"value\"");
  if (!v.is_dict()) Throw("AttributeError", "'" + v.TypeName() + "' object has no attribute 'items'");
  std::vector<Value> items, keys;
  for (const auto& [k, val] : v.dict().items()) {
    items.push_back(Value::Tuple({k, val}));
    const Value& key = by == "key" ? k : val;
    keys.push_back(cs ? key : IgnoreCase(key));
  }
  SortByKeys(r, &items, &keys, reverse);
  return Value::List(std::move(items));
}

Value FSort(Renderer& r, const Value& v, CallArgs& args) {
  Args a("sort", args, {"reverse", "case_sensitive", "attribute"});
  bool reverse = a.has(0) && a[0].Truthy();
  bool cs = a.has(1) && a[1].Truthy();
  Value attribute = a.has(2) ? a[2] : Value::None();
  std::vector<Value> items = r.Iterate(v);
  std::vector<Value> keys;
  for (const Value& item : items) keys.push_back(SortKey(r, item, attribute, cs, true));
  SortByKeys(r, &items, &keys, reverse);
  return Value::List(std::move(items));
}

Value FUnique(Renderer& r, const Value& v, CallArgs& args) {
  Args a("unique", args, {"case_sensitive", "attribute"});
  bool cs = a.has(0) && a[0].Truthy();
  Value attribute = a.has(1) ? a[1] : Value::None();
  std::vector<Value> out, seen;
  for (const Value& item : r.Iterate(v)) {
    Value key = SortKey(r, item, attribute, cs, false);
    if (!IsHashable(key)) ThrowTypeError("unhashable type: '" + key.TypeName() + "'");
    r.Charge(seen.size() / 8 + 1);
    bool dup = false;
    for (const Value& s : seen) {
      if (Equals(s, key)) {
        dup = true;
        break;
      }
    }
    if (!dup) {
      seen.push_back(key);
      out.push_back(item);
    }
  }
  return Generator(std::move(out));
}

Value FReverse(Renderer& r, const Value& v, CallArgs& args) {
  Args a("reverse", args, {});
  if (v.is_string()) {
    std::string out;
    const std::string& s = v.s();
    // Reverse by code points.
    std::vector<std::pair<size_t, size_t>> spans;
    size_t p = 0;
    while (p < s.size()) {
      size_t start = p;
      DecodeCodePoint(s, &p);
      spans.emplace_back(start, p - start);
    }
    for (auto it = spans.rbegin(); it != spans.rend(); ++it) out.append(s, it->first, it->second);
    return Value::Str(std::move(out));
  }
  if (v.is_undefined() || v.is_dict() || (v.is_seq() && v.seq().kind != SeqKind::kGenerator)) {
    std::vector<Value> items = r.Iterate(v);
    std::reverse(items.begin(), items.end());
    return Generator(std::move(items));
  }
  if (v.is_seq()) {
    std::vector<Value> items = r.Iterate(v);
    std::reverse(items.begin(), items.end());
    return Value::List(std::move(items));
  }
  Throw("FilterArgumentError", "argument must be iterable");
}

Value FMap(Renderer& r, const Value& v, CallArgs& args) {
  std::vector<Value> out;
  if (!v.Truthy()) return Generator({});
  bool by_attr = args.pos.empty() && std::any_of(args.kw.begin(), args.kw.end(), [](const auto& kv) { return kv.first == "attribute"; });
  if (by_attr) {
    Value attribute, dflt = Value::None();
    for (const auto& [k, val] : args.kw) {
      if (k == "attribute") attribute = val;
      else if (k == "default") dflt = val;
      else Throw("FilterArgumentError", "Unexpected keyword argument '" + k + "'");
    }
    for (const Value& item : r.Iterate(v)) {
      Value x = GetAttrPath(r, item, attribute);
      if (!dflt.is_none() && x.is_undefined()) x = dflt;
      out.push_back(std::move(x));
    }
    return Generator(std::move(out));
  }
  if (args.pos.empty()) Throw("FilterArgumentError", "map requires a filter argument");
  std::string name = ToStr(args.pos[0]);
  CallArgs rest;
  rest.pos.assign(args.pos.begin() + 1, args.pos.end());
  rest.kw = args.kw;
  for (const Value& item : r.Iterate(v)) {
    CallArgs call = rest;
    out.push_back(r.CallFilter(name, item, call));
  }
  return Generator(std::move(out));
}

Value SelectOrReject(Renderer& r, const Value& v, CallArgs& args, bool select, bool lookup_attr) {
  if (!v.Truthy()) return Generator({});
  size_t off = 0;
  Value attribute;
  if (lookup_attr) {
    if (args.pos.empty()) Throw("FilterArgumentError", "Missing parameter for attribute name");
    attribute = args.pos[0];
    off = 1;
  }
  bool has_test = args.pos.size() > off;
  std::string test = has_test ? ToStr(args.pos[off]) : "";
  CallArgs rest;
  if (has_test) rest.pos.assign(args.pos.begin() + off + 1, args.pos.end());
  rest.kw = args.kw;
  std::vector<Value> out;
  for (const Value& item : r.Iterate(v)) {
    Value x = lookup_attr ? GetAttrPath(r, item, attribute) : item;
    bool ok;
    if (has_test) {
      CallArgs call = rest;
      ok = r.CallTest(test, x, call);
    } else {
      ok = x.Truthy();
    }
    if (ok == select) out.push_back(item);
  }
  return Generator(std::move(out));
}

Value FSelect(Renderer& r, const Value& v, CallArgs& args) { return SelectOrReject(r, v, args, true, false); }
Value FReject(Renderer& r, const Value& v, CallArgs& args) { return SelectOrReject(r, v, args, false, false); }
Value FSelectattr(Renderer& r, const Value& v, CallArgs& args) { return SelectOrReject(r, v, args, true, true); }
Value FRejectattr(Renderer& r, const Value& v, CallArgs& args) { return SelectOrReject(r, v, args, false, true); }

Value FBatch(Renderer& r, const Value& v, CallArgs& args) {
  Args a("batch", args, {"linecount", "fill_with"}, 1);
  int64_t n = IntArg(a[0]);
  std::vector<Value> out, tmp;
  for (const Value& item : r.Iterate(v)) {
    if (static_cast<int64_t>(tmp.size()) == n) {
      out.push_back(Value::List(std::move(tmp)));
      tmp.clear();
    }
    tmp.push_back(item);
  }
  if (!tmp.empty()) {
    if (a.set(1) && static_cast<int64_t>(tmp.size()) < n) {
      r.CheckSeqSize(static_cast<size_t>(n));
      tmp.resize(static_cast<size_t>(n), a[1]);
    }
    out.push_back(Value::List(std::move(tmp)));
  }
  return Generator(std::move(out));
}

Value FSlice(Renderer& r, const Value& v, CallArgs& args) {
  Args a("slice", args, {"slices", "fill_with"}, 1);
  int64_t slices = IntArg(a[0]);
  std::vector<Value> seq = r.Iterate(v);
  if (slices == 0) Throw("ZeroDivisionError", "integer division or modulo by zero");
  if (slices < 0 || slices > static_cast<int64_t>(kMaxSeqItems)) Throw("ValueError", "bad slice count");
  int64_t length = static_cast<int64_t>(seq.size());
  int64_t per = length / slices, extra = length % slices, offset = 0;
  std::vector<Value> out;
  for (int64_t k = 0; k < slices; ++k) {
    r.Charge(1);
    int64_t start = offset + k * per;
    if (k < extra) ++offset;
    int64_t end = offset + (k + 1) * per;
    std::vector<Value> tmp(seq.begin() + start, seq.begin() + end);
    if (a.set(1) && k >= extra) tmp.push_back(a[1]);
    out.push_back(Value::List(std::move(tmp)));
  }
  return Generator(std::move(out));
}

Value FSum(Renderer& r, const Value& v, CallArgs& args) {
  Args a("sum", args, {"attribute", "start"});
  Value total = a.has(1) ? a[1] : Value::Int(0);
  if (total.is_string()) ThrowTypeError("sum() can't sum strings [use ''.join(seq) instead]");
  for (const Value& item : r.Iterate(v)) {
    Value x = a.set(0) ? GetAttrPath(r, item, a[0]) : item;
    total = BinaryOp(r, BinOp::kAdd, total, x);
  }
  return total;
}

Value MinMax(Renderer& r, const Value& v, CallArgs& args, bool is_max) {
  Args a(is_max ? "max" : "min", args, {"case_sensitive", "attribute"});
  bool cs = a.has(0) && a[0].Truthy();
  Value attribute = a.has(1) ? a[1] : Value::None();
  std::vector<Value> items = r.Iterate(v);
  if (items.empty()) return Value::Undefined("No aggregated item, sequence was empty.");
  size_t best = 0;
  Value best_key = SortKey(r, items[0], attribute, cs, false);
  for (size_t i = 1; i < items.size(); ++i) {
    Value k = SortKey(r, items[i], attribute, cs, false);
    if (CompareValues(is_max ? CmpOp::kGt : CmpOp::kLt, k, best_key)) {
      best = i;
      best_key = k;
    }
  }
  return items[best];
}

Value FMin(Renderer& r, const Value& v, CallArgs& args) { return MinMax(r, v, args, false); }
Value FMax(Renderer& r, const Value& v, CallArgs& args) { return MinMax(r, v, args, true); }

Value FGroupby(Renderer& r, const Value& v, CallArgs& args) {
  Args a("groupby", args, {"attribute", "default", "case_sensitive"}, 1);
  Value dflt = a.has(1) ? a[1] : Value::None();
  bool cs = a.has(2) && a[2].Truthy();
  auto key_of = [&](const Value& item, bool fold) {
    Value k = GetAttrPath(r, item, a[0]);
    if (!dflt.is_none() && k.is_undefined()) k = dflt;
    return fold ? IgnoreCase(k) : k;
  };
  std::vector<Value> items = r.Iterate(v);
  std::vector<Value> keys;
  for (const Value& item : items) keys.push_back(key_of(item, !cs));
  std::vector<size_t> order(items.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return Compare(keys[x], keys[y]) < 0; });
  std::vector<Value> out;
  size_t i = 0;
  while (i < order.size()) {
    std::vector<Value> group;
    size_t j = i;
    while (j < order.size() && Equals(keys[order[j]], keys[order[i]])) group.push_back(items[order[j++]]);
    Value grouper = cs ? keys[order[i]] : key_of(group[0], false);
    out.push_back(Value::Tuple({grouper, Value::List(std::move(group))}));
    i = j;
  }
  return Value::List(std::move(out));
}

}  // namespace

void RegisterSeqFilters(FilterTable& t) {
  t["first"] = &FFirst;
  t["last"] = &FLast;
  t["join"] = &FJoin;
  t["list"] = &FList;
  t["items"] = &FItems;
  t["dictsort"] = &FDictsort;
  t["sort"] = &FSort;
  t["unique"] = &FUnique;
  t["reverse"] = &FReverse;
  t["map"] = &FMap;
  t["select"] = &FSelect;
  t["reject"] = &FReject;
  t["selectattr"] = &FSelectattr;
  t["rejectattr"] = &FRejectattr;
  t["batch"] = &FBatch;
  t["slice"] = &FSlice;
  t["sum"] = &FSum;
  t["min"] = &FMin;
  t["max"] = &FMax;
  t["groupby"] = &FGroupby;
}

}  // namespace llmhost::jinja
