#include "server/openai_request.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "chat/template_kwargs.h"
#include "engine/request.h"
#include "engine/sampler.h"
#include "server/reasoning_effort.h"
#include "server/structured_output_request.h"
#include "server/tool_schema.h"
#include "util/json.h"

namespace llmhost::server {

namespace {

constexpr int64_t kMaxTokensLimit = std::numeric_limits<int32_t>::max();
constexpr size_t kMaxStopStrings = 16;

MaybeError ReadModelAndStream(const OJson& body, InferenceRequest* out) {
  std::optional<std::string> model;
  RETURN_IF_API_ERROR(ReadString(body, "model", "", &model));
  if (!model || model->empty()) return BadRequest("'model' is required: the id of a model (GET /v1/models lists them)", "model");
  out->model = *model;
  std::optional<bool> stream;
  RETURN_IF_API_ERROR(ReadBool(body, "stream", "", &stream));
  out->stream = stream.value_or(false);
  auto so = body.find("stream_options");
  if (so != body.end() && !so->is_null()) {
    if (!so->is_object()) return BadRequest("'stream_options' must be an object", "stream_options");
    std::optional<bool> usage;
    RETURN_IF_API_ERROR(ReadBool(*so, "include_usage", "stream_options", &usage));
    out->include_usage = usage.value_or(false);
  }
  std::optional<int64_t> n;
  RETURN_IF_API_ERROR(ReadInteger(body, "n", "", 1, kMaxChoices, &n));
  out->choices = static_cast<int>(n.value_or(1));
  return std::nullopt;
}

// "arguments" arrive as a JSON string; templates expect a mapping (they
// print it with tojson). A string that is not a JSON object stays a string.
OJson ToolArguments(const OJson& args) {
  if (!args.is_string()) return args.is_null() ? OJson::object() : args;
  const std::string& s = args.get_ref<const std::string&>();
  // Bounded like the body it came in: nested JSON inside a string must not
  // get past the depth limit.
  Result<OJson> parsed = ParseOrderedJson(s, "arguments", s.size());
  if (parsed.ok() && parsed->is_object()) return std::move(*parsed);
  return args;
}

MaybeError ConvertToolCalls(const OJson& calls, const std::string& path, OJson* out) {
  if (!calls.is_array()) return BadRequest("'" + path + "' must be an array", path);
  *out = OJson::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    const OJson& c = calls[i];
    const std::string cp = IndexPath(path, i);
    if (!c.is_object()) return BadRequest("'" + cp + "' must be an object", cp);
    auto fn = c.find("function");
    if (fn == c.end() || !fn->is_object()) {
      return BadRequest("'" + cp + ".function' is required: {\"name\", \"arguments\"}", cp + ".function");
    }
    std::optional<std::string> name, id;
    RETURN_IF_API_ERROR(ReadString(*fn, "name", cp + ".function", &name));
    if (!name) return BadRequest("'" + cp + ".function.name' is required", cp + ".function.name");
    RETURN_IF_API_ERROR(ReadString(c, "id", cp, &id));
    OJson call = OJson::object();
    if (id) call["id"] = *id;
    call["type"] = "function";
    auto args = fn->find("arguments");
    call["function"] = {{"name", *name},
                        {"arguments", ToolArguments(args == fn->end() ? OJson() : *args)}};
    out->push_back(std::move(call));
  }
  return std::nullopt;
}

MaybeError ConvertChatMessage(const OJson& m, const std::string& path, OJson* out) {
  if (!m.is_object()) return BadRequest("'" + path + "' must be an object with a role", path);
  std::optional<std::string> role;
  RETURN_IF_API_ERROR(ReadString(m, "role", path, &role));
  if (!role) return BadRequest("'" + path + ".role' is required", path + ".role");
  std::string r = *role;
  if (r == "developer") r = "system";  // OpenAI's newer name for system
  if (r != "system" && r != "user" && r != "assistant" && r != "tool" && r != "function") {
    return BadRequest("'" + path + ".role' must be one of system, developer, user, assistant, tool; got '" +
                          *role + "'",
                      path + ".role");
  }
  OJson msg = OJson::object();
  msg["role"] = r;
  std::string text;
  auto content = m.find("content");
  RETURN_IF_API_ERROR(
      ContentText(content == m.end() ? OJson() : *content, path + ".content", &text));
  msg["content"] = text;
  std::optional<std::string> name, tool_call_id, reasoning;
  RETURN_IF_API_ERROR(ReadString(m, "name", path, &name));
  if (name) msg["name"] = *name;
  if (r == "assistant") {
    auto calls = m.find("tool_calls");
    if (calls != m.end() && !calls->is_null()) {
      OJson converted;
      RETURN_IF_API_ERROR(ConvertToolCalls(*calls, path + ".tool_calls", &converted));
      if (!converted.empty()) msg["tool_calls"] = std::move(converted);
    }
    RETURN_IF_API_ERROR(ReadString(m, "reasoning_content", path, &reasoning));
    if (!reasoning) RETURN_IF_API_ERROR(ReadString(m, "reasoning", path, &reasoning));
    if (reasoning) msg["reasoning_content"] = *reasoning;
  }
  if (r == "tool") {
    RETURN_IF_API_ERROR(ReadString(m, "tool_call_id", path, &tool_call_id));
    if (tool_call_id) msg["tool_call_id"] = *tool_call_id;
  }
  *out = std::move(msg);
  return std::nullopt;
}

MaybeError ReadTools(const OJson& body, InferenceRequest* out) {
  auto tools = body.find("tools");
  if (tools == body.end() || tools->is_null()) return std::nullopt;
  if (!tools->is_array()) return BadRequest("'tools' must be an array of function tools", "tools");
  if (tools->empty()) return std::nullopt;
  for (size_t i = 0; i < tools->size(); ++i) {
    const OJson& t = (*tools)[i];
    const std::string tp = IndexPath("tools", i);
    if (!t.is_object()) return BadRequest("'" + tp + "' must be an object", tp);
    std::optional<std::string> type;
    RETURN_IF_API_ERROR(ReadString(t, "type", tp, &type));
    if (type && *type != "function") {
      return BadRequest("'" + tp + ".type' must be \"function\", got '" + *type + "'", tp + ".type");
    }
    auto fn = t.find("function");
    if (fn == t.end() || !fn->is_object()) {
      return BadRequest("'" + tp + ".function' is required: {\"name\", \"description\", \"parameters\"}",
                        tp + ".function");
    }
    std::optional<std::string> name, description;
    RETURN_IF_API_ERROR(ReadString(*fn, "name", tp + ".function", &name));
    if (!name || name->empty()) return BadRequest("'" + tp + ".function.name' is required", tp + ".function.name");
    RETURN_IF_API_ERROR(ReadString(*fn, "description", tp + ".function", &description));
    std::optional<bool> strict;
    RETURN_IF_API_ERROR(ReadBool(*fn, "strict", tp + ".function", &strict));
    auto params = fn->find("parameters");
    if (params != fn->end() && !params->is_null()) {
      RETURN_IF_API_ERROR(CheckToolSchema(*params, tp + ".function.parameters"));
    }
  }
  out->tools = *tools;  // as sent: the template prints the schemas in their key order
  return std::nullopt;
}

std::vector<std::string> ToolNames(const OJson& tools) {
  std::vector<std::string> names;
  if (tools.is_array()) {
    for (const OJson& t : tools) names.push_back(t["function"]["name"].get<std::string>());
  }
  return names;
}

// The function named by {"type": "function", "function": {"name": ...}} at `path`.
MaybeError ReadNamedFunction(const OJson& v, const std::string& path, const std::vector<std::string>& names,
                             std::string* out) {
  if (!v.is_object()) return BadRequest("'" + path + "' must be an object", path);
  std::optional<std::string> type;
  RETURN_IF_API_ERROR(ReadString(v, "type", path, &type));
  if (type.value_or("") != "function") {
    return BadRequest("'" + path + ".type' must be \"function\"", path + ".type");
  }
  auto fn = v.find("function");
  if (fn == v.end() || !fn->is_object()) {
    return BadRequest("'" + path + ".function' is required: {\"name\": ...}", path + ".function");
  }
  std::optional<std::string> name;
  RETURN_IF_API_ERROR(ReadString(*fn, "name", path + ".function", &name));
  if (!name || name->empty()) return BadRequest("'" + path + ".function.name' is required", path + ".function.name");
  if (std::find(names.begin(), names.end(), *name) == names.end()) {
    return BadRequest("'" + path + ".function.name': '" + *name + "' is not one of the request's tools",
                      path + ".function.name");
  }
  *out = *name;
  return std::nullopt;
}

// tool_choice: "none" | "auto" | "required" | {"type": "function", "function":
// {"name"}} | {"type": "allowed_tools", "allowed_tools": {"mode": "auto" |
// "required", "tools": [named functions]}}.
MaybeError ReadToolChoice(const OJson& body, InferenceRequest* out) {
  auto it = body.find("tool_choice");
  if (it == body.end() || it->is_null()) return std::nullopt;
  const std::vector<std::string> names = ToolNames(out->tools);
  ToolChoice& c = out->tool_choice;
  if (it->is_string()) {
    const std::string& s = it->get_ref<const std::string&>();
    if (s == "none") {
      c.mode = ToolChoice::kNone;
    } else if (s == "auto") {
      c.mode = ToolChoice::kAuto;
    } else if (s == "required") {
      c.mode = ToolChoice::kRequired;
    } else {
      return BadRequest("'tool_choice' must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", "
                        "\"function\": {\"name\": ...}}; got '" + s + "'",
                        "tool_choice");
    }
  } else if (it->is_object()) {
    std::optional<std::string> type;
    RETURN_IF_API_ERROR(ReadString(*it, "type", "tool_choice", &type));
    if (type.value_or("") == "function") {
      c.mode = ToolChoice::kRequired;
      c.names.emplace_back();
      RETURN_IF_API_ERROR(ReadNamedFunction(*it, "tool_choice", names, &c.names.back()));
    } else if (type.value_or("") == "allowed_tools") {
      auto at = it->find("allowed_tools");
      if (at == it->end() || !at->is_object()) {
        return BadRequest("'tool_choice.allowed_tools' is required: {\"mode\", \"tools\"}", "tool_choice.allowed_tools");
      }
      std::optional<std::string> mode;
      RETURN_IF_API_ERROR(ReadString(*at, "mode", "tool_choice.allowed_tools", &mode));
      if (mode.value_or("auto") != "auto" && *mode != "required") {
        return BadRequest("'tool_choice.allowed_tools.mode' must be \"auto\" or \"required\"",
                          "tool_choice.allowed_tools.mode");
      }
      c.mode = mode.value_or("auto") == "required" ? ToolChoice::kRequired : ToolChoice::kAuto;
      auto list = at->find("tools");
      if (list == at->end() || !list->is_array() || list->empty()) {
        return BadRequest("'tool_choice.allowed_tools.tools' must be a non-empty array", "tool_choice.allowed_tools.tools");
      }
      for (size_t i = 0; i < list->size(); ++i) {
        c.names.emplace_back();
        RETURN_IF_API_ERROR(
            ReadNamedFunction((*list)[i], IndexPath("tool_choice.allowed_tools.tools", i), names, &c.names.back()));
      }
    } else {
      return BadRequest("'tool_choice.type' must be \"function\" or \"allowed_tools\"", "tool_choice.type");
    }
  } else {
    return BadRequest("'tool_choice' must be a string or an object, got " + JsonTypeName(*it), "tool_choice");
  }
  if (c.mode == ToolChoice::kRequired && names.empty()) {
    return BadRequest("'tool_choice' requires tools, but the request has none", "tool_choice");
  }
  return std::nullopt;
}

MaybeError ReadParallelToolCalls(const OJson& body, InferenceRequest* out) {
  std::optional<bool> parallel;
  RETURN_IF_API_ERROR(ReadBool(body, "parallel_tool_calls", "", &parallel));
  out->tool_choice.parallel = parallel.value_or(true);
  return std::nullopt;
}

}  // namespace

OJson ToolArgumentsObject(const OJson& args) { return ToolArguments(args); }

MaybeError ContentText(const OJson& content, const std::string& path, std::string* out) {
  out->clear();
  if (content.is_null()) return std::nullopt;
  if (content.is_string()) {
    *out = content.get<std::string>();
    return std::nullopt;
  }
  if (!content.is_array()) {
    return BadRequest("'" + path + "' must be a string or an array of content parts, got " +
                          JsonTypeName(content),
                      path);
  }
  bool first = true;
  for (size_t i = 0; i < content.size(); ++i) {
    const OJson& part = content[i];
    const std::string pp = IndexPath(path, i);
    if (part.is_string()) {  // lenient: a bare string part
      if (!first) *out += "\n";
      *out += part.get<std::string>();
      first = false;
      continue;
    }
    if (!part.is_object()) return BadRequest("'" + pp + "' must be a content part object", pp);
    std::optional<std::string> type, text;
    RETURN_IF_API_ERROR(ReadString(part, "type", pp, &type));
    if (!type || *type == "text" || *type == "input_text" || *type == "refusal") {
      RETURN_IF_API_ERROR(ReadString(part, type && *type == "refusal" ? "refusal" : "text", pp, &text));
      if (!text) return BadRequest("'" + pp + ".text' is required in a text part", pp + ".text");
      if (!first) *out += "\n";
      *out += *text;
      first = false;
    } else {
      return BadRequest("'" + pp + "': content parts of type '" + *type +
                            "' are not supported (the models served here read text only)",
                        pp + ".type");
    }
  }
  return std::nullopt;
}

MaybeError ReadOpenAISampling(const OJson& body, SamplingRequest* s) {
  RETURN_IF_API_ERROR(ReadNumber(body, "temperature", "", 0, 100, &s->temperature));
  RETURN_IF_API_ERROR(ReadNumber(body, "top_p", "", 0, 1, &s->top_p));
  RETURN_IF_API_ERROR(ReadInteger(body, "top_k", "", -1, kMaxTokensLimit, &s->top_k));
  RETURN_IF_API_ERROR(ReadNumber(body, "min_p", "", 0, 1, &s->min_p));
  RETURN_IF_API_ERROR(ReadNumber(body, "repetition_penalty", "", 0, 100, &s->repetition_penalty));
  if (s->repetition_penalty && *s->repetition_penalty <= 0) {
    return BadRequest("'repetition_penalty' must be greater than 0", "repetition_penalty");
  }
  RETURN_IF_API_ERROR(ReadNumber(body, "presence_penalty", "", -2, 2, &s->presence_penalty));
  RETURN_IF_API_ERROR(ReadNumber(body, "frequency_penalty", "", -2, 2, &s->frequency_penalty));
  std::optional<int64_t> seed;
  RETURN_IF_API_ERROR(ReadInteger(body, "seed", "", std::numeric_limits<int64_t>::min(),
                                  std::numeric_limits<int64_t>::max(), &seed));
  if (seed) s->seed = static_cast<uint64_t>(*seed);
  std::optional<int64_t> max_tokens, max_completion_tokens;
  RETURN_IF_API_ERROR(ReadInteger(body, "max_tokens", "", 1, kMaxTokensLimit, &max_tokens));
  RETURN_IF_API_ERROR(ReadInteger(body, "max_completion_tokens", "", 1, kMaxTokensLimit,
                                  &max_completion_tokens));
  s->max_tokens = max_completion_tokens ? max_completion_tokens : max_tokens;
  RETURN_IF_API_ERROR(ReadStringList(body, "stop", "", kMaxStopStrings, &s->stop));
  auto ids = body.find("stop_token_ids");
  if (ids != body.end() && !ids->is_null()) {
    if (!ids->is_array()) return BadRequest("'stop_token_ids' must be an array of token ids", "stop_token_ids");
    for (size_t i = 0; i < ids->size(); ++i) {
      if (!(*ids)[i].is_number_integer() || (*ids)[i].get<int64_t>() < 0 ||
          (*ids)[i].get<int64_t>() > std::numeric_limits<int32_t>::max()) {
        return BadRequest("'stop_token_ids[" + std::to_string(i) + "]' must be a token id", "stop_token_ids");
      }
      s->stop_token_ids.push_back(static_cast<int32_t>((*ids)[i].get<int64_t>()));
    }
  }
  auto bias = body.find("logit_bias");
  if (bias != body.end() && !bias->is_null()) {
    if (!bias->is_object()) {
      return BadRequest("'logit_bias' must be an object of token ids to biases in [-100, 100]", "logit_bias");
    }
    if (bias->size() > kMaxLogitBias) {
      return BadRequest("'logit_bias' may hold at most " + std::to_string(kMaxLogitBias) + " tokens", "logit_bias");
    }
    for (auto it = bias->begin(); it != bias->end(); ++it) {
      const std::string& key = it.key();
      const std::string field = "logit_bias." + key;
      char* end = nullptr;
      errno = 0;
      const long long id = std::strtoll(key.c_str(), &end, 10);
      if (key.empty() || *end != '\0' || errno != 0 || id < 0 || id > std::numeric_limits<int32_t>::max()) {
        return BadRequest("'logit_bias' keys must be token ids (non-negative integers), got '" + key + "'", "logit_bias");
      }
      if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < -100 || it->get<double>() > 100) {
        return BadRequest("'" + field + "' must be a number in [-100, 100]", field);
      }
      s->logit_bias.emplace_back(static_cast<int32_t>(id), static_cast<float>(it->get<double>()));
    }
  }
  std::optional<bool> ignore_eos;
  RETURN_IF_API_ERROR(ReadBool(body, "ignore_eos", "", &ignore_eos));
  s->ignore_eos = ignore_eos.value_or(false);
  return std::nullopt;
}

MaybeError ParseChatCompletionsRequest(const OJson& body, InferenceRequest* out) {
  out->api = ApiKind::kChatCompletions;
  out->prompt_kind = PromptKind::kChat;
  RETURN_IF_API_ERROR(ReadModelAndStream(body, out));
  auto messages = body.find("messages");
  if (messages == body.end() || messages->is_null()) {
    return BadRequest("'messages' is required: a non-empty array of messages", "messages");
  }
  if (!messages->is_array()) {
    return BadRequest("'messages' must be an array, got " + JsonTypeName(*messages), "messages");
  }
  if (messages->empty()) return BadRequest("'messages' must not be empty", "messages");
  out->messages = OJson::array();
  for (size_t i = 0; i < messages->size(); ++i) {
    OJson msg;
    RETURN_IF_API_ERROR(ConvertChatMessage((*messages)[i], IndexPath("messages", i), &msg));
    out->messages.push_back(std::move(msg));
  }
  RETURN_IF_API_ERROR(ReadTools(body, out));
  RETURN_IF_API_ERROR(ReadToolChoice(body, out));
  RETURN_IF_API_ERROR(ReadParallelToolCalls(body, out));
  ApplyToolChoice(out);
  auto kwargs = body.find("chat_template_kwargs");
  if (kwargs != body.end() && !kwargs->is_null()) {
    if (Status st = CheckTemplateKwargs(*kwargs, "chat_template_kwargs"); !st.ok()) {
      const std::string& m = st.message();
      return BadRequest(m, m.substr(0, m.find(':')));
    }
    out->chat_template_kwargs = *kwargs;
  }
  std::optional<std::string> effort;
  RETURN_IF_API_ERROR(ReadString(body, "reasoning_effort", "", &effort));
  if (effort) RETURN_IF_API_ERROR(ApplyReasoningEffort(*effort, "reasoning_effort", out));
  std::optional<bool> agp;
  RETURN_IF_API_ERROR(ReadBool(body, "add_generation_prompt", "", &agp));
  out->add_generation_prompt = agp.value_or(true);
  RETURN_IF_API_ERROR(ReadStructuredOutput(body, &out->constraint));
  RETURN_IF_API_ERROR(ReadOpenAISampling(body, &out->sampling));
  std::optional<bool> logprobs;
  RETURN_IF_API_ERROR(ReadBool(body, "logprobs", "", &logprobs));
  out->sampling.logprobs = logprobs.value_or(false);
  std::optional<int64_t> top;
  RETURN_IF_API_ERROR(ReadInteger(body, "top_logprobs", "", 0, 20, &top));
  if (top && *top > 0 && !out->sampling.logprobs) {
    return BadRequest("'top_logprobs' needs 'logprobs': true", "top_logprobs");
  }
  out->sampling.top_logprobs = static_cast<int>(top.value_or(0));
  return std::nullopt;
}

MaybeError ParseCompletionsRequest(const OJson& body, InferenceRequest* out) {
  out->api = ApiKind::kCompletions;
  RETURN_IF_API_ERROR(ReadModelAndStream(body, out));
  auto prompt = body.find("prompt");
  if (prompt == body.end() || prompt->is_null()) {
    return BadRequest("'prompt' is required: a string or an array of token ids", "prompt");
  }
  const OJson* p = &*prompt;
  // A batch of one prompt is accepted as that prompt.
  if (p->is_array() && p->size() == 1 && ((*p)[0].is_string() || (*p)[0].is_array())) p = &(*p)[0];
  if (p->is_string()) {
    out->prompt_kind = PromptKind::kText;
    out->prompt_text = p->get<std::string>();
  } else if (p->is_array()) {
    if (p->empty()) return BadRequest("'prompt' must not be empty", "prompt");
    out->prompt_kind = PromptKind::kTokens;
    for (size_t i = 0; i < p->size(); ++i) {
      const OJson& v = (*p)[i];
      if (v.is_string() || v.is_array()) {
        return BadRequest("'prompt': several prompts in one request are not supported", "prompt");
      }
      if (!v.is_number_integer() || v.get<int64_t>() < 0 ||
          v.get<int64_t>() > std::numeric_limits<int32_t>::max()) {
        return BadRequest("'prompt[" + std::to_string(i) + "]' must be a token id (a non-negative integer)",
                          "prompt");
      }
      out->prompt_ids.push_back(static_cast<int32_t>(v.get<int64_t>()));
    }
  } else {
    return BadRequest("'prompt' must be a string or an array of token ids, got " + JsonTypeName(*p), "prompt");
  }
  std::optional<bool> echo;
  RETURN_IF_API_ERROR(ReadBool(body, "echo", "", &echo));
  if (echo.value_or(false)) return BadRequest("'echo' is not supported", "echo");
  std::optional<std::string> suffix;
  RETURN_IF_API_ERROR(ReadString(body, "suffix", "", &suffix));
  if (suffix && !suffix->empty()) return BadRequest("'suffix' is not supported", "suffix");
  std::optional<int64_t> best_of;
  RETURN_IF_API_ERROR(ReadInteger(body, "best_of", "", 1, 128, &best_of));
  if (best_of && *best_of != 1) return BadRequest("'best_of' must be 1", "best_of");
  RETURN_IF_API_ERROR(ReadStructuredOutput(body, &out->constraint));
  RETURN_IF_API_ERROR(ReadOpenAISampling(body, &out->sampling));
  std::optional<int64_t> logprobs;
  RETURN_IF_API_ERROR(ReadInteger(body, "logprobs", "", 0, 20, &logprobs));
  if (logprobs) {
    out->sampling.logprobs = true;
    out->sampling.top_logprobs = static_cast<int>(*logprobs);
  }
  return std::nullopt;
}

}  // namespace llmhost::server
