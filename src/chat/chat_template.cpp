#include "chat/chat_template.h"

#include <dirent.h>
#include <sys/time.h>

#include <algorithm>
#include <cstdio>

#include "chat/jinja_ast.h"
#include "chat/jinja_parser.h"
#include "chat/jinja_time.h"
#include "util/file.h"
#include "util/json.h"

namespace llmhost {

using jinja::Value;

namespace {

// JSON -> template value. Integers beyond int64 become floats, as they would
// behave close enough to Python's big ints for templates.
Value FromJson(const nlohmann::ordered_json& j, int depth) {
  if (depth > jinja::kMaxValueDepth) throw jinja::Error("ValueError", "input JSON nested too deeply");
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null: return Value::None();
    case nlohmann::ordered_json::value_t::boolean: return Value::Bool(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return Value::Int(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      uint64_t u = j.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) return Value::Float(static_cast<double>(u));
      return Value::Int(static_cast<int64_t>(u));
    }
    case nlohmann::ordered_json::value_t::number_float: return Value::Float(j.get<double>());
    case nlohmann::ordered_json::value_t::string: return Value::Str(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& item : j) items.push_back(FromJson(item, depth + 1));
      return Value::List(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      auto d = std::make_shared<jinja::DictObj>();
      for (auto it = j.begin(); it != j.end(); ++it) d->Set(Value::Str(it.key()), FromJson(it.value(), depth + 1));
      return Value::Dict(std::move(d));
    }
    default: return Value::None();
  }
}

Value RaiseException(jinja::Renderer&, const Value&, jinja::CallArgs& args) {
  std::string msg = args.pos.empty() ? "" : jinja::ToStr(args.pos[0]);
  throw jinja::Error("TemplateError", msg);
}

// strftime_now(format): formats the pinned or real local time.
class StrftimeObj final : public jinja::Object {
 public:
  StrftimeObj(const std::tm& t, int micros) : t_(t), micros_(micros) {}
  std::string TypeName() const override { return "function"; }
  bool IsCallable() const override { return true; }
  Value Call(jinja::Renderer& r, jinja::CallArgs& args) override {
    if (args.pos.size() != 1 || !args.kw.empty()) jinja::ThrowTypeError("strftime_now() takes exactly one argument");
    const Value& fmt = args.pos[0];
    if (!fmt.is_string()) jinja::ThrowTypeError("strftime() argument 1 must be str, not " + fmt.TypeName());
    r.Charge(fmt.s().size());
    r.CheckStringSize(fmt.s().size() * 16);
    return Value::Str(jinja::PyStrftime(t_, micros_, fmt.s()));
  }

 private:
  std::tm t_;
  int micros_;
};

void LocalTime(std::chrono::system_clock::time_point tp, std::tm* out, int* micros) {
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(tp.time_since_epoch()).count();
  time_t secs = static_cast<time_t>(us / 1000000);
  *micros = static_cast<int>(us % 1000000);
  if (*micros < 0) {
    *micros += 1000000;
    --secs;
  }
  localtime_r(&secs, out);
}

Status ToStatus(const jinja::Error& e) {
  std::string msg = e.type() + ": " + e.message();
  if (e.line() > 0) msg += " (template line " + std::to_string(e.line()) + ")";
  if (e.type() == "ResourceExhausted" || e.type() == "RecursionError") return Status::ResourceExhausted(msg);
  return Status::InvalidArgument(msg);
}

}  // namespace

Result<ChatTemplate> ChatTemplate::Parse(std::string_view source) {
  try {
    std::shared_ptr<const jinja::Program> program = jinja::ParseTemplate(source);
    return ChatTemplate(std::move(program), std::make_shared<const std::string>(source));
  } catch (const jinja::Error& e) {
    return ToStatus(e);
  } catch (const std::bad_alloc&) {
    return Status::ResourceExhausted("out of memory while parsing the chat template");
  } catch (const std::exception& e) {
    return Status::Internal(std::string("chat template: unexpected failure: ") + e.what());
  }
}

Result<std::string> ChatTemplate::Render(const ChatTemplateInput& input) const {
  return Render(input, jinja::RenderLimits());
}

Result<std::string> ChatTemplate::Render(const ChatTemplateInput& input, const jinja::RenderLimits& limits) const {
  try {
    jinja::Renderer r(limits);
    std::tm t{};
    int micros = 0;
    if (input.now_local) {
      t = *input.now_local;
      jinja::NormalizeCivil(&t);
    } else {
      LocalTime(input.now.value_or(std::chrono::system_clock::now()), &t, &micros);
    }
    r.AddGlobal("raise_exception", Value::Obj(std::make_shared<jinja::BuiltinObj>("raise_exception", &RaiseException)));
    r.AddGlobal("strftime_now", Value::Obj(std::make_shared<StrftimeObj>(t, micros)));

    std::vector<std::pair<std::string, Value>> ctx;
    ctx.emplace_back("messages", FromJson(input.messages, 0));
    ctx.emplace_back("tools", FromJson(input.tools, 0));
    ctx.emplace_back("documents", Value::None());
    ctx.emplace_back("add_generation_prompt", Value::Bool(input.add_generation_prompt));
    ctx.emplace_back("bos_token", Value::Str(input.bos_token));
    ctx.emplace_back("eos_token", Value::Str(input.eos_token));
    if (input.kwargs.is_object()) {
      for (auto it = input.kwargs.begin(); it != input.kwargs.end(); ++it) {
        ctx.emplace_back(it.key(), FromJson(it.value(), 0));
      }
    } else if (!input.kwargs.is_null()) {
      return Status::InvalidArgument("chat template kwargs must be a JSON object");
    }
    return r.Render(*program_, std::move(ctx));
  } catch (const jinja::Error& e) {
    return ToStatus(e);
  } catch (const std::bad_alloc&) {
    return Status::ResourceExhausted("out of memory while rendering the chat template");
  } catch (const std::length_error&) {
    return Status::ResourceExhausted("value too large while rendering the chat template");
  } catch (const std::exception& e) {
    return Status::Internal(std::string("chat template: unexpected failure: ") + e.what());
  }
}

// ---- model directories ----

namespace {

std::string TokenContent(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  return "";
}


}  // namespace

Result<ModelChatTemplates> LoadModelChatTemplates(const std::string& model_dir) {
  if (!IsDirectory(model_dir)) return Status::NotFound(model_dir + ": not a directory");
  ModelChatTemplates out;
  nlohmann::json config;
  std::string config_path = JoinPath(model_dir, "tokenizer_config.json");
  if (FileExists(config_path)) {
    ASSIGN_OR_RETURN(config, ReadJsonFile(config_path, kJsonModelFileMaxBytes));
    if (!config.is_object()) return Status::Corruption(config_path + ": expected a JSON object");
    if (config.contains("bos_token")) out.bos_token = TokenContent(config["bos_token"]);
    if (config.contains("eos_token")) out.eos_token = TokenContent(config["eos_token"]);
  }
  std::string special_path = JoinPath(model_dir, "special_tokens_map.json");
  if ((out.bos_token.empty() || out.eos_token.empty()) && FileExists(special_path)) {
    auto special = ReadJsonFile(special_path, kJsonModelFileMaxBytes);
    if (special.ok() && special->is_object()) {
      if (out.bos_token.empty() && special->contains("bos_token")) out.bos_token = TokenContent((*special)["bos_token"]);
      if (out.eos_token.empty() && special->contains("eos_token")) out.eos_token = TokenContent((*special)["eos_token"]);
    }
  }

  std::string jinja_path = JoinPath(model_dir, "chat_template.jinja");
  std::string json_path = JoinPath(model_dir, "chat_template.json");
  if (FileExists(jinja_path)) {
    ASSIGN_OR_RETURN(out.default_template, ReadFileToString(jinja_path));
  } else if (FileExists(json_path)) {
    ASSIGN_OR_RETURN(nlohmann::json j, ReadJsonFile(json_path, kJsonModelFileMaxBytes));
    if (!j.is_object() || !j.contains("chat_template") || !j["chat_template"].is_string()) {
      return Status::Corruption(json_path + ": field 'chat_template' must be a string");
    }
    out.default_template = j["chat_template"].get<std::string>();
  } else if (config.is_object() && config.contains("chat_template") && !config["chat_template"].is_null()) {
    const nlohmann::json& ct = config["chat_template"];
    if (ct.is_string()) {
      out.default_template = ct.get<std::string>();
    } else if (ct.is_array()) {
      for (const auto& entry : ct) {
        if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string() ||
            !entry.contains("template") || !entry["template"].is_string()) {
          return Status::Corruption(config_path +
                                    ": field 'chat_template' entries must be {\"name\": str, \"template\": str}");
        }
        std::string name = entry["name"].get<std::string>();
        std::string text = entry["template"].get<std::string>();
        if (name == "default") {
          out.default_template = std::move(text);
        } else {
          out.named[name] = std::move(text);
        }
      }
    } else {
      return Status::Corruption(config_path + ": field 'chat_template' must be a string or a list");
    }
  }
  // transformers also saves named templates as additional_chat_templates/NAME.jinja.
  std::string extra_dir = JoinPath(model_dir, "additional_chat_templates");
  if (IsDirectory(extra_dir)) {
    if (DIR* d = opendir(extra_dir.c_str())) {
      std::vector<std::string> files;
      while (dirent* e = readdir(d)) {
        std::string name = e->d_name;
        if (name.size() > 6 && name.compare(name.size() - 6, 6, ".jinja") == 0) files.push_back(name);
      }
      closedir(d);
      std::sort(files.begin(), files.end());
      for (const std::string& f : files) {
        ASSIGN_OR_RETURN(std::string text, ReadFileToString(JoinPath(extra_dir, f)));
        out.named[f.substr(0, f.size() - 6)] = std::move(text);
      }
    }
  }
  return out;
}

Result<std::tm> ParseIsoLocalTime(std::string_view text) {
  std::tm t{};
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
  std::string str(text);
  int n = 0;
  int fields = std::sscanf(str.c_str(), "%4d-%2d-%2d%n", &y, &mo, &d, &n);
  if (fields != 3) return Status::InvalidArgument("bad time '" + str + "': expected YYYY-MM-DD[THH:MM[:SS]]");
  size_t pos = static_cast<size_t>(n);
  if (pos < str.size()) {
    if (str[pos] != 'T' && str[pos] != ' ') return Status::InvalidArgument("bad time '" + str + "'");
    int m = 0;
    int f = std::sscanf(str.c_str() + pos + 1, "%2d:%2d%n", &h, &mi, &m);
    if (f != 2) return Status::InvalidArgument("bad time '" + str + "'");
    pos += 1 + m;
    if (pos < str.size() && str[pos] == ':') {
      int k = 0;
      if (std::sscanf(str.c_str() + pos + 1, "%2d%n", &s, &k) != 1) return Status::InvalidArgument("bad time '" + str + "'");
      pos += 1 + k;
    }
    if (pos != str.size()) return Status::InvalidArgument("bad time '" + str + "': unexpected trailing text");
  }
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60) {
    return Status::InvalidArgument("bad time '" + str + "': field out of range");
  }
  t.tm_year = y - 1900;
  t.tm_mon = mo - 1;
  t.tm_mday = d;
  t.tm_hour = h;
  t.tm_min = mi;
  t.tm_sec = s;
  jinja::NormalizeCivil(&t);
  return t;
}

}  // namespace llmhost
