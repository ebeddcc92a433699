// Tool parameter types from the request's tool schemas, and building an
// arguments object from XML-style parameters (Qwen3-Coder, GLM-4.5), whose
// values are bare text typed by the schema.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace llmhost {

class ToolSchemas {
 public:
  ToolSchemas() = default;
  // OpenAI tools ({type: function, function: {name, parameters}}), bare
  // {name, parameters} or Anthropic {name, input_schema}; others are skipped.
  explicit ToolSchemas(const nlohmann::json& tools);
  // The JSON schema type of a tool's parameter ("string", "integer", ...);
  // "" when the tool or parameter is unknown.
  std::string TypeOf(const std::string& tool, const std::string& param) const;

 private:
  std::map<std::string, std::map<std::string, std::string>> types_;
};

// The one JSON type a parameter's schema gives its values, as the readers of
// bare-text formats take them: `type` ("integer"; in a type array the first
// that is not "null"), else the one non-null type of anyOf/oneOf branches,
// following local refs ("#/$defs/X") in `root`; "" when there is none.
std::string ParameterType(const nlohmann::json& property, const nlohmann::json& root);

// A parameter's text as a JSON value by its schema type: string-typed and
// unknown parameters stay strings; others are parsed, falling back to a string.
std::string TypedArgumentJson(std::string_view raw, const std::string& type);

// True when values of this type are streamed as text (a JSON string).
inline bool IsStringType(const std::string& type) { return type.empty() || type == "string"; }

// Builds {"k": v, ...} text one parameter at a time, so that the text so far
// is always a prefix of the finished object (arguments stream as generated).
class ArgumentsBuilder {
 public:
  // The text of the finished parameters plus a string parameter in progress
  // (its key and opening quote and the escaped value so far).
  std::string Partial(std::string_view key, std::string_view value_so_far) const;
  void Add(std::string_view key, const std::string& json_value);
  std::string Text() const { return text_; }
  std::string Finished() const { return text_.empty() ? "{}" : text_ + "}"; }

 private:
  std::string KeyPrefix(std::string_view key) const;
  std::string text_;  // "{" + finished parameters; "" before the first
};

}  // namespace llmhost
