#include "server/ollama_request.h"

#include <cmath>
#include <set>

#include "server/openai_request.h"

namespace llmhost::server {

namespace {

// Options that tune how Ollama runs a model; llmhost decides these itself
// (context from the model and settings, memory by the pool).
const std::set<std::string>& ResourceOptions() {
  static const std::set<std::string> kSet = {
      "num_ctx",  "num_batch", "num_gpu",     "main_gpu",  "low_vram",       "f16_kv",    "logits_all",
      "vocab_only", "use_mmap", "use_mlock", "embedding_only", "num_thread", "numa", "num_keep",
      "penalize_newline", "repeat_last_n"};
  return kSet;
}

}  // namespace

bool IsKnownOllamaOption(const std::string& key) {
  static const std::set<std::string> kSampling = {
      "temperature", "top_p", "top_k", "min_p", "seed", "repeat_penalty", "presence_penalty", "frequency_penalty",
      "stop", "num_predict", "mirostat", "mirostat_tau", "mirostat_eta", "tfs_z", "typical_p"};
  return ResourceOptions().count(key) > 0 || kSampling.count(key) > 0;
}

namespace {

// options → the OpenAI body's sampling fields.
MaybeError ReadOptions(const OJson& body, OJson* openai, std::vector<std::string>* ignored) {
  auto it = body.find("options");
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_object()) return BadRequest("'options' must be an object such as {\"temperature\": 0.7}", "options");
  const OJson& o = *it;
  struct Mapped {
    const char* ollama;
    const char* openai;
  };
  static const Mapped kMapped[] = {{"temperature", "temperature"}, {"top_p", "top_p"},
                                   {"top_k", "top_k"},             {"min_p", "min_p"},
                                   {"seed", "seed"},               {"repeat_penalty", "repetition_penalty"},
                                   {"presence_penalty", "presence_penalty"},
                                   {"frequency_penalty", "frequency_penalty"}, {"stop", "stop"}};
  for (auto f = o.begin(); f != o.end(); ++f) {
    const std::string& key = f.key();
    const std::string path = "options." + key;
    if (f->is_null()) continue;
    bool mapped = false;
    for (const Mapped& m : kMapped) {
      if (key != m.ollama) continue;
      mapped = true;
      const bool ok = key == "stop" ? (f->is_array() || f->is_string()) : f->is_number();
      if (!ok) return BadRequest("'" + path + "' must be " + (key == "stop" ? "an array of strings" : "a number"), path);
      (*openai)[m.openai] = *f;
    }
    if (mapped) continue;
    if (key == "num_predict") {
      if (!f->is_number_integer()) return BadRequest("'options.num_predict' must be an integer", path);
      const int64_t n = f->get<int64_t>();
      if (n == 0 || n < -2) return BadRequest("'options.num_predict' must be at least 1, or -1 / -2 for no limit", path);
      if (n > 0) (*openai)["max_tokens"] = n;
    } else if (key == "mirostat" || key == "tfs_z" || key == "typical_p") {
      // Off is mirostat 0, tfs_z 1 and typical_p 1: anything else changes sampling.
      const double off = key == "mirostat" ? 0 : 1;
      if (!f->is_number()) return BadRequest("'" + path + "' must be a number", path);
      if (f->get<double>() != off) {
        return BadRequest("'" + path + "' is not supported: llmhost samples with temperature, top_k, top_p and min_p",
                          path);
      }
    } else if (key == "mirostat_tau" || key == "mirostat_eta") {
      continue;  // only read with mirostat on, which is refused above
    } else if (ResourceOptions().count(key)) {
      ignored->push_back(key);
    } else {
      return BadRequest("'" + path + "' is not an option llmhost knows", path);
    }
  }
  return std::nullopt;
}

// think: a switch or an effort.
MaybeError ReadThink(const OJson& body, OJson* openai) {
  auto it = body.find("think");
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (it->is_boolean()) {
    (*openai)["chat_template_kwargs"]["enable_thinking"] = it->get<bool>();
    return std::nullopt;
  }
  if (it->is_string() && (*it == "low" || *it == "medium" || *it == "high")) {
    (*openai)["reasoning_effort"] = *it;
    return std::nullopt;
  }
  return BadRequest("'think' must be true, false, \"low\", \"medium\" or \"high\"", "think");
}

// format: "json" (any JSON object) or a JSON Schema.
MaybeError ReadFormat(const OJson& body, OJson* openai) {
  auto it = body.find("format");
  if (it == body.end() || it->is_null() || (it->is_string() && it->get<std::string>().empty())) return std::nullopt;
  if (it->is_string()) {
    if (*it != "json") return BadRequest("'format' must be \"json\" or a JSON Schema object", "format");
    (*openai)["response_format"] = {{"type", "json_object"}};
    return std::nullopt;
  }
  if (!it->is_object()) return BadRequest("'format' must be \"json\" or a JSON Schema object", "format");
  (*openai)["response_format"] = {{"type", "json_schema"}, {"json_schema", {{"name", "format"}, {"schema", *it}}}};
  return std::nullopt;
}

MaybeError Refuse(const OJson& obj, const char* field, const std::string& path, const std::string& why) {
  auto it = obj.find(field);
  if (it == obj.end() || it->is_null()) return std::nullopt;
  if ((it->is_string() && it->get<std::string>().empty()) || (it->is_array() && it->empty())) return std::nullopt;
  const std::string p = path.empty() ? field : path + "." + field;
  return BadRequest("'" + p + "' is not supported: " + why, p);
}

// The fields both routes share: model, stream, keep_alive, think, format, options.
MaybeError ReadCommon(const OJson& body, OJson* openai, InferenceRequest* out, std::vector<std::string>* ignored) {
  std::optional<std::string> model;
  RETURN_IF_API_ERROR(ReadString(body, "model", "", &model));
  if (!model || model->empty()) return BadRequest("'model' is required: a model name (GET /api/tags lists them)", "model");
  (*openai)["model"] = *model;
  std::optional<bool> stream;
  RETURN_IF_API_ERROR(ReadBool(body, "stream", "", &stream));
  (*openai)["stream"] = stream.value_or(true);
  RETURN_IF_API_ERROR(ReadKeepAlive(body, &out->keep_alive_s));
  RETURN_IF_API_ERROR(ReadThink(body, openai));
  RETURN_IF_API_ERROR(ReadFormat(body, openai));
  RETURN_IF_API_ERROR(ReadOptions(body, openai, ignored));
  std::optional<bool> logprobs;
  RETURN_IF_API_ERROR(ReadBool(body, "logprobs", "", &logprobs));
  if (logprobs.value_or(false)) return BadRequest("'logprobs' is not supported on the Ollama routes; use /v1/chat/completions", "logprobs");
  return std::nullopt;
}

// One Ollama chat message as the OpenAI parser takes it.
MaybeError ConvertMessage(const OJson& m, const std::string& path, OJson* out) {
  if (!m.is_object()) return BadRequest("'" + path + "' must be an object with a role", path);
  RETURN_IF_API_ERROR(Refuse(m, "images", path, "the models served read text only"));
  OJson msg = m;
  msg.erase("images");
  auto thinking = m.find("thinking");
  if (thinking != m.end()) {
    if (!thinking->is_null()) msg["reasoning_content"] = *thinking;
    msg.erase("thinking");
  }
  auto tool_name = m.find("tool_name");
  if (tool_name != m.end()) {
    if (!tool_name->is_null() && !tool_name->is_string()) return BadRequest("'" + path + ".tool_name' must be a string", path + ".tool_name");
    if (tool_name->is_string()) msg["name"] = *tool_name;
    msg.erase("tool_name");
  }
  *out = std::move(msg);
  return std::nullopt;
}

}  // namespace

MaybeError ReadKeepAlive(const OJson& body, std::optional<double>* out) {
  auto it = body.find("keep_alive");
  if (it == body.end() || it->is_null()) return std::nullopt;
  const char* usage = "'keep_alive' must be a duration such as \"5m\", \"1h30m\" or \"90s\", or seconds";
  if (it->is_number()) {
    if (!std::isfinite(it->get<double>())) return BadRequest(usage, "keep_alive");
    *out = it->get<double>();
    return std::nullopt;
  }
  if (!it->is_string() || it->get<std::string>().empty()) return BadRequest(usage, "keep_alive");
  const std::string s = it->get<std::string>();
  size_t i = 0;
  double sign = 1;
  if (s[0] == '-' || s[0] == '+') {
    sign = s[0] == '-' ? -1 : 1;
    ++i;
  }
  double total = 0;
  bool any = false;
  while (i < s.size()) {
    size_t j = i;
    while (j < s.size() && ((s[j] >= '0' && s[j] <= '9') || s[j] == '.')) ++j;
    if (j == i) return BadRequest(usage, "keep_alive");
    const double n = std::strtod(s.substr(i, j - i).c_str(), nullptr);
    size_t k = j;
    while (k < s.size() && ((s[k] >= 'a' && s[k] <= 'z'))) ++k;
    const std::string unit = s.substr(j, k - j);
    double scale = 0;
    if (unit.empty()) {
      if (any || k != s.size()) return BadRequest(usage, "keep_alive");
      scale = 1;  // a bare number of seconds
    } else if (unit == "h") {
      scale = 3600;
    } else if (unit == "m") {
      scale = 60;
    } else if (unit == "s") {
      scale = 1;
    } else if (unit == "ms") {
      scale = 1e-3;
    } else if (unit == "us") {
      scale = 1e-6;
    } else if (unit == "ns") {
      scale = 1e-9;
    } else {
      return BadRequest(usage, "keep_alive");
    }
    total += n * scale;
    any = true;
    i = k;
  }
  *out = sign * total;
  return std::nullopt;
}

namespace {

// The OpenAI parser fills a fresh request: what Ollama's fields set is kept apart.
MaybeError Finish(const OJson& openai, bool completions, InferenceRequest* out) {
  const std::optional<double> keep_alive = out->keep_alive_s;
  RETURN_IF_API_ERROR(completions ? ParseCompletionsRequest(openai, out) : ParseChatCompletionsRequest(openai, out));
  out->keep_alive_s = keep_alive;
  return std::nullopt;
}

}  // namespace

MaybeError ParseOllamaChatRequest(const OJson& body, InferenceRequest* out, std::vector<std::string>* ignored) {
  OJson openai = OJson::object();
  RETURN_IF_API_ERROR(ReadCommon(body, &openai, out, ignored));
  auto messages = body.find("messages");
  if (messages != body.end() && !messages->is_null() && !messages->is_array()) {
    return BadRequest("'messages' must be an array of messages", "messages");
  }
  if (messages == body.end() || messages->is_null() || messages->empty()) {
    out->api = ApiKind::kOllamaChat;
    out->load_only = true;
    out->model = openai["model"];
    return std::nullopt;
  }
  openai["messages"] = OJson::array();
  for (size_t i = 0; i < messages->size(); ++i) {
    OJson m;
    RETURN_IF_API_ERROR(ConvertMessage((*messages)[i], IndexPath("messages", i), &m));
    openai["messages"].push_back(std::move(m));
  }
  auto tools = body.find("tools");
  if (tools != body.end() && !tools->is_null()) openai["tools"] = *tools;
  RETURN_IF_API_ERROR(Finish(openai, /*completions=*/false, out));
  out->api = ApiKind::kOllamaChat;
  return std::nullopt;
}

MaybeError ParseOllamaGenerateRequest(const OJson& body, InferenceRequest* out, std::vector<std::string>* ignored) {
  OJson openai = OJson::object();
  RETURN_IF_API_ERROR(ReadCommon(body, &openai, out, ignored));
  RETURN_IF_API_ERROR(Refuse(body, "images", "", "the models served read text only"));
  RETURN_IF_API_ERROR(Refuse(body, "suffix", "", "fill-in-the-middle is not offered; send the text before it as the prompt"));
  RETURN_IF_API_ERROR(Refuse(body, "template", "", "the model's own chat template is used (raw: true sends the prompt as is)"));
  RETURN_IF_API_ERROR(Refuse(body, "context", "", "send the conversation to /api/chat instead"));
  std::optional<std::string> prompt, system;
  std::optional<bool> raw;
  RETURN_IF_API_ERROR(ReadString(body, "prompt", "", &prompt));
  RETURN_IF_API_ERROR(ReadString(body, "system", "", &system));
  RETURN_IF_API_ERROR(ReadBool(body, "raw", "", &raw));
  if (!prompt || prompt->empty()) {
    out->api = ApiKind::kOllamaGenerate;
    out->load_only = true;
    out->model = openai["model"];
    return std::nullopt;
  }
  if (raw.value_or(false)) {
    if (system) return BadRequest("'system' has no place in a raw prompt: put it in the prompt", "system");
    openai.erase("chat_template_kwargs");
    openai.erase("reasoning_effort");
    openai["prompt"] = *prompt;
    RETURN_IF_API_ERROR(Finish(openai, /*completions=*/true, out));
  } else {
    openai["messages"] = OJson::array();
    if (system && !system->empty()) openai["messages"].push_back({{"role", "system"}, {"content", *system}});
    openai["messages"].push_back({{"role", "user"}, {"content", *prompt}});
    RETURN_IF_API_ERROR(Finish(openai, /*completions=*/false, out));
  }
  out->api = ApiKind::kOllamaGenerate;
  return std::nullopt;
}

}  // namespace llmhost::server
