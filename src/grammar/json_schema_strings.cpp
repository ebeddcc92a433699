// string schemas: minLength / maxLength (code points), pattern, format.
#include "grammar/json_schema_compiler.h"
#include "grammar/json_string_chars.h"
#include "grammar/regex_compiler.h"

namespace llmhost::grammar {

Result<NodeId> SchemaCompiler::String(const Json& schema, const std::string& path) {
  bool has_min = schema.contains("minLength"), has_max = schema.contains("maxLength");
  uint64_t min = has_min ? schema["minLength"].get<uint64_t>() : 0;
  int64_t max = MaxCount(schema, "maxLength");
  if (schema.contains("format")) {
    const std::string& format = schema["format"].get_ref<const std::string&>();
    ASSIGN_OR_RETURN(std::optional<NodeId> content, Format(format, path));
    if (content) {
      if (has_min || has_max || schema.contains("pattern"))
        return UnsupportedKeyword(
            "format' beside '" + std::string(schema.contains("pattern") ? "pattern" : "minLength/maxLength"), path);
      return g_.Seq({g_.Byte('"'), *content, g_.Byte('"')});
    }
  }
  if (schema.contains("pattern")) {
    if (has_min || has_max) return UnsupportedKeyword("pattern' beside 'minLength'/'maxLength", path);
    Result<NodeId> content =
        CompileRegex(g_, schema["pattern"].get_ref<const std::string&>(), /*search=*/true, RegexText::kJsonString);
    if (!content.ok()) return BadSchema(ChildPath(path, "pattern"), content.status().message());
    return g_.Seq({g_.Byte('"'), *content, g_.Byte('"')});
  }
  if (!has_min && !has_max) return AnyString();
  ASSIGN_OR_RETURN(NodeId chars, RepeatCount(AnyStringChar(), min, max, path));
  return g_.Seq({g_.Byte('"'), chars, g_.Byte('"')});
}

}  // namespace llmhost::grammar
