#include "server/structured_output_request.h"

#include <utility>

#include "util/json.h"

namespace llmhost::server {

namespace {

using Kind = ConstraintSpec::Kind;

// Records `next`, or a 400 when an earlier field already constrains the output.
MaybeError SetOnce(ConstraintSpec next, ConstraintSpec* out) {
  if (out->kind != Kind::kNone) {
    return BadRequest("'" + out->field + "' and '" + next.field +
                          "' cannot be used together: each constrains the output; send one",
                      next.field);
  }
  *out = std::move(next);
  return std::nullopt;
}

// A JSON Schema: an object, a boolean, or (vLLM's guided_json) its JSON text.
MaybeError ReadSchema(const OJson& v, const std::string& path, OJson* out) {
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    Result<OJson> parsed = ParseOrderedJson(s, path, s.size());
    if (!parsed.ok()) return BadRequest("'" + path + "' is not a JSON Schema: " + parsed.status().message(), path);
    return ReadSchema(*parsed, path, out);
  }
  if (!v.is_object() && !v.is_boolean()) {
    return BadRequest("'" + path + "' must be a JSON Schema (an object), got " + JsonTypeName(v), path);
  }
  *out = v;
  return std::nullopt;
}

MaybeError ReadText(const OJson& v, const std::string& path, const char* what, std::string* out) {
  if (!v.is_string()) return BadRequest("'" + path + "' must be a string (" + what + "), got " + JsonTypeName(v), path);
  *out = v.get<std::string>();
  if (out->empty()) return BadRequest("'" + path + "' must not be empty", path);
  return std::nullopt;
}

MaybeError ReadChoices(const OJson& v, const std::string& path, std::vector<std::string>* out) {
  if (!v.is_array() || v.empty()) return BadRequest("'" + path + "' must be a non-empty array of strings", path);
  if (v.size() > kMaxGuidedChoices) {
    return BadRequest("'" + path + "' may hold at most " + std::to_string(kMaxGuidedChoices) + " choices", path);
  }
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string()) return BadRequest("'" + IndexPath(path, i) + "' must be a string", IndexPath(path, i));
    out->push_back(v[i].get<std::string>());
  }
  return std::nullopt;
}

ConstraintSpec Spec(Kind kind, std::string field) {
  ConstraintSpec s;
  s.kind = kind;
  s.field = std::move(field);
  return s;
}

// {type: "json_schema", json_schema: {name, schema, strict}} (OpenAI) or
// {type: ..., schema} (llama.cpp), at `path`.
MaybeError ReadJsonSchemaFormat(const OJson& rf, const std::string& path, const std::string& type,
                                ConstraintSpec* out) {
  ConstraintSpec s = Spec(Kind::kJsonSchema, path);
  auto direct = rf.find("schema");
  if (type == "json_object") {
    if (direct == rf.end() || direct->is_null()) return SetOnce(Spec(Kind::kJsonObject, path), out);
    RETURN_IF_API_ERROR(ReadSchema(*direct, path + ".schema", &s.schema));
    return SetOnce(std::move(s), out);
  }
  const OJson* holder = &rf;
  std::string holder_path = path;
  auto js = rf.find("json_schema");
  if (js != rf.end() && !js->is_null()) {
    if (!js->is_object()) return BadRequest("'" + path + ".json_schema' must be an object: {name, schema, strict}", path + ".json_schema");
    holder = &*js;
    holder_path = path + ".json_schema";
  }
  std::optional<std::string> name;
  RETURN_IF_API_ERROR(ReadString(*holder, "name", holder_path, &name));
  std::optional<bool> strict;
  RETURN_IF_API_ERROR(ReadBool(*holder, "strict", holder_path, &strict));
  s.strict = strict.value_or(false);
  auto schema = holder->find("schema");
  if (schema == holder->end() || schema->is_null()) {
    return BadRequest("'" + holder_path + ".schema' is required: the JSON Schema the output must follow",
                      holder_path + ".schema");
  }
  RETURN_IF_API_ERROR(ReadSchema(*schema, holder_path + ".schema", &s.schema));
  return SetOnce(std::move(s), out);
}

MaybeError ReadResponseFormat(const OJson& body, ConstraintSpec* out) {
  auto rf = body.find("response_format");
  if (rf == body.end() || rf->is_null()) return std::nullopt;
  if (!rf->is_object()) return BadRequest("'response_format' must be an object", "response_format");
  std::optional<std::string> type;
  RETURN_IF_API_ERROR(ReadString(*rf, "type", "response_format", &type));
  const std::string t = type.value_or("text");
  if (t == "text") return std::nullopt;
  if (t != "json_object" && t != "json_schema") {
    return BadRequest("'response_format.type' must be \"text\", \"json_object\" or \"json_schema\", got '" + t + "'",
                      "response_format.type");
  }
  return ReadJsonSchemaFormat(*rf, "response_format", t, out);
}

// vLLM's structured_outputs: one of json, regex, choice, grammar, json_object.
MaybeError ReadStructuredOutputs(const OJson& body, ConstraintSpec* out) {
  auto so = body.find("structured_outputs");
  if (so == body.end() || so->is_null()) return std::nullopt;
  if (!so->is_object()) {
    return BadRequest("'structured_outputs' must be an object with one of json, regex, choice, grammar",
                      "structured_outputs");
  }
  for (auto it = so->begin(); it != so->end(); ++it) {
    const std::string& key = it.key();
    const OJson& v = it.value();
    if (v.is_null()) continue;
    const std::string path = "structured_outputs." + key;
    ConstraintSpec s;
    if (key == "json") {
      s = Spec(Kind::kJsonSchema, path);
      RETURN_IF_API_ERROR(ReadSchema(v, path, &s.schema));
    } else if (key == "regex") {
      s = Spec(Kind::kRegex, path);
      RETURN_IF_API_ERROR(ReadText(v, path, "a regular expression", &s.text));
    } else if (key == "choice") {
      s = Spec(Kind::kChoice, path);
      RETURN_IF_API_ERROR(ReadChoices(v, path, &s.choices));
    } else if (key == "grammar") {
      s = Spec(Kind::kGrammar, path);
      RETURN_IF_API_ERROR(ReadText(v, path, "a GBNF grammar", &s.text));
    } else if (key == "json_object") {
      if (!v.is_boolean()) return BadRequest("'" + path + "' must be a boolean", path);
      if (!v.get<bool>()) continue;
      s = Spec(Kind::kJsonObject, path);
    } else if (key == "disable_any_whitespace" || key == "disable_fallback" || key == "disable_additional_properties") {
      continue;  // options of vLLM's backends: the defaults here already bound whitespace
    } else {
      return BadRequest("'" + path + "' is not supported (structured_outputs takes json, regex, choice, grammar, "
                        "json_object)",
                        path);
    }
    RETURN_IF_API_ERROR(SetOnce(std::move(s), out));
  }
  return std::nullopt;
}

}  // namespace

MaybeError ReadStructuredOutput(const OJson& body, ConstraintSpec* out) {
  RETURN_IF_API_ERROR(ReadResponseFormat(body, out));
  RETURN_IF_API_ERROR(ReadStructuredOutputs(body, out));
  for (const char* key : {"guided_json", "json_schema"}) {
    auto it = body.find(key);
    if (it == body.end() || it->is_null()) continue;
    ConstraintSpec s = Spec(Kind::kJsonSchema, key);
    RETURN_IF_API_ERROR(ReadSchema(*it, key, &s.schema));
    RETURN_IF_API_ERROR(SetOnce(std::move(s), out));
  }
  if (auto it = body.find("guided_regex"); it != body.end() && !it->is_null()) {
    ConstraintSpec s = Spec(Kind::kRegex, "guided_regex");
    RETURN_IF_API_ERROR(ReadText(*it, "guided_regex", "a regular expression", &s.text));
    RETURN_IF_API_ERROR(SetOnce(std::move(s), out));
  }
  if (auto it = body.find("guided_choice"); it != body.end() && !it->is_null()) {
    ConstraintSpec s = Spec(Kind::kChoice, "guided_choice");
    RETURN_IF_API_ERROR(ReadChoices(*it, "guided_choice", &s.choices));
    RETURN_IF_API_ERROR(SetOnce(std::move(s), out));
  }
  for (const char* key : {"guided_grammar", "grammar"}) {
    auto it = body.find(key);
    if (it == body.end() || it->is_null()) continue;
    ConstraintSpec s = Spec(Kind::kGrammar, key);
    RETURN_IF_API_ERROR(ReadText(*it, key, "a GBNF grammar", &s.text));
    RETURN_IF_API_ERROR(SetOnce(std::move(s), out));
  }
  return std::nullopt;
}

MaybeError ReadResponsesTextFormat(const OJson& body, ConstraintSpec* out) {
  auto text = body.find("text");
  if (text == body.end() || text->is_null()) return std::nullopt;
  if (!text->is_object()) return BadRequest("'text' must be an object", "text");
  auto format = text->find("format");
  if (format == text->end() || format->is_null()) return std::nullopt;
  if (!format->is_object()) return BadRequest("'text.format' must be an object such as {\"type\": \"text\"}", "text.format");
  std::optional<std::string> type;
  RETURN_IF_API_ERROR(ReadString(*format, "type", "text.format", &type));
  const std::string t = type.value_or("text");
  if (t == "text") return std::nullopt;
  if (t != "json_object" && t != "json_schema") {
    return BadRequest("'text.format.type' must be \"text\", \"json_object\" or \"json_schema\", got '" + t + "'",
                      "text.format.type");
  }
  return ReadJsonSchemaFormat(*format, "text.format", t, out);
}

MaybeError ReadAnthropicOutputFormat(const OJson& body, ConstraintSpec* out) {
  auto read = [&](const OJson& format, const std::string& path) -> MaybeError {
    if (!format.is_object()) {
      return BadRequest("'" + path + "' must be an object such as {\"type\": \"json_schema\", \"schema\": {...}}", path);
    }
    std::optional<std::string> type;
    RETURN_IF_API_ERROR(ReadString(format, "type", path, &type));
    if (type != "json_schema") {
      return BadRequest("'" + path + ".type' must be \"json_schema\", got '" + type.value_or("") + "'", path + ".type");
    }
    auto schema = format.find("schema");
    if (schema == format.end() || schema->is_null()) {
      return BadRequest("'" + path + ".schema' is required: the JSON Schema the output must follow", path + ".schema");
    }
    ConstraintSpec s;
    s.kind = Kind::kJsonSchema;
    s.field = path;
    s.strict = true;  // Anthropic's outputs hold no property the schema does not declare
    RETURN_IF_API_ERROR(ReadSchema(*schema, path + ".schema", &s.schema));
    return SetOnce(std::move(s), out);
  };
  auto config = body.find("output_config");
  if (config != body.end() && config->is_object()) {
    auto format = config->find("format");
    if (format != config->end() && !format->is_null()) RETURN_IF_API_ERROR(read(*format, "output_config.format"));
  }
  auto beta = body.find("output_format");
  if (beta != body.end() && !beta->is_null()) RETURN_IF_API_ERROR(read(*beta, "output_format"));
  return std::nullopt;
}

}  // namespace llmhost::server
