#include "server/embedding_request.h"

#include <limits>

#include "server/ollama_request.h"

namespace llmhost::server {

namespace {

MaybeError ReadModel(const OJson& body, std::string* out) {
  std::optional<std::string> model;
  RETURN_IF_API_ERROR(ReadString(body, "model", "", &model));
  if (!model || model->empty()) return BadRequest("'model' is required", "model");
  *out = std::move(*model);
  return std::nullopt;
}

MaybeError TooMany(const std::string& field, size_t n) {
  if (n <= kMaxEmbeddingInputs) return std::nullopt;
  return BadRequest("'" + field + "' has " + std::to_string(n) + " items, more than " +
                        std::to_string(kMaxEmbeddingInputs),
                    field);
}

// A non-empty list of token ids at `path`.
MaybeError ReadIds(const OJson& v, const std::string& path, std::vector<int32_t>* out) {
  if (v.empty()) return BadRequest("'" + path + "' is empty", path);
  for (size_t i = 0; i < v.size(); ++i) {
    const OJson& t = v[i];
    if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() > std::numeric_limits<int32_t>::max()) {
      return BadRequest("'" + IndexPath(path, i) + "' must be a token id (a non-negative integer)",
                        IndexPath(path, i));
    }
    out->push_back(static_cast<int32_t>(t.get<int64_t>()));
  }
  return std::nullopt;
}

// `input` as a string or a list of strings (empty strings refused by index).
MaybeError ReadTexts(const OJson& input, std::vector<std::string>* out) {
  if (input.is_string()) {
    if (input.get<std::string>().empty()) return BadRequest("'input' is empty", "input");
    out->push_back(input.get<std::string>());
    return std::nullopt;
  }
  for (size_t i = 0; i < input.size(); ++i) {
    const std::string path = IndexPath("input", i);
    if (!input[i].is_string()) {
      return BadRequest("'" + path + "' must be a string, not " + JsonTypeName(input[i]), path);
    }
    if (input[i].get<std::string>().empty()) return BadRequest("'" + path + "' is empty", path);
    out->push_back(input[i].get<std::string>());
  }
  return std::nullopt;
}

// Ollama's options on an embedding request: none applies (as Ollama, the
// known ones are accepted; they are listed as unused); an unknown one is a 400.
MaybeError ReadEmbedOptions(const OJson& body, std::vector<std::string>* unused) {
  auto it = body.find("options");
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_object()) return BadRequest("'options' must be an object", "options");
  for (auto f = it->begin(); f != it->end(); ++f) {
    if (f->is_null()) continue;
    const std::string path = "options." + f.key();
    if (!IsKnownOllamaOption(f.key())) return BadRequest("'" + path + "' is not an option llmhost knows", path);
    unused->push_back(f.key());
  }
  return std::nullopt;
}

MaybeError ReadDimensions(const OJson& body, std::optional<int64_t>* out) {
  return ReadInteger(body, "dimensions", "", 1, int64_t{1} << 20, out);
}

}  // namespace

MaybeError ParseEmbeddingsRequest(const OJson& body, EmbeddingsRequest* out) {
  RETURN_IF_API_ERROR(ReadModel(body, &out->model));
  auto it = body.find("input");
  if (it == body.end() || it->is_null()) return BadRequest("'input' is required", "input");
  const OJson& input = *it;
  const char* shapes = "a string, a list of strings, a list of token ids or a list of lists of token ids";
  if (input.is_array()) {
    if (input.empty()) return BadRequest("'input' is an empty list", "input");
    RETURN_IF_API_ERROR(TooMany("input", input.size()));
    if (input[0].is_number()) {
      out->token_lists.emplace_back();
      RETURN_IF_API_ERROR(ReadIds(input, "input", &out->token_lists.back()));
    } else if (input[0].is_array()) {
      for (size_t i = 0; i < input.size(); ++i) {
        const std::string path = IndexPath("input", i);
        if (!input[i].is_array()) return BadRequest("'" + path + "' must be a list of token ids", path);
        out->token_lists.emplace_back();
        RETURN_IF_API_ERROR(ReadIds(input[i], path, &out->token_lists.back()));
      }
    } else {
      RETURN_IF_API_ERROR(ReadTexts(input, &out->texts));
    }
  } else if (input.is_string()) {
    RETURN_IF_API_ERROR(ReadTexts(input, &out->texts));
  } else {
    return BadRequest(std::string("'input' must be ") + shapes + ", not " + JsonTypeName(input), "input");
  }
  std::optional<std::string> format;
  RETURN_IF_API_ERROR(ReadString(body, "encoding_format", "", &format));
  if (format && *format != "float" && *format != "base64") {
    return BadRequest("'encoding_format' must be \"float\" or \"base64\"", "encoding_format");
  }
  out->base64 = format && *format == "base64";
  RETURN_IF_API_ERROR(ReadDimensions(body, &out->dimensions));
  std::optional<std::string> input_type;
  RETURN_IF_API_ERROR(ReadString(body, "input_type", "", &input_type));
  if (input_type && *input_type != "query" && *input_type != "document") {
    return BadRequest("'input_type' must be \"query\" or \"document\"", "input_type");
  }
  out->query = input_type && *input_type == "query";
  return std::nullopt;
}

MaybeError ParseOllamaEmbedRequest(const OJson& body, EmbeddingsRequest* out) {
  RETURN_IF_API_ERROR(ReadModel(body, &out->model));
  auto it = body.find("input");
  if (it == body.end() || it->is_null()) return BadRequest("'input' is required", "input");
  if (it->is_array()) {
    if (it->empty()) return BadRequest("'input' is an empty list", "input");
    RETURN_IF_API_ERROR(TooMany("input", it->size()));
  } else if (!it->is_string()) {
    return BadRequest("'input' must be a string or a list of strings, not " + JsonTypeName(*it), "input");
  }
  RETURN_IF_API_ERROR(ReadTexts(*it, &out->texts));
  std::optional<bool> truncate;
  RETURN_IF_API_ERROR(ReadBool(body, "truncate", "", &truncate));
  out->truncate = truncate.value_or(true);
  RETURN_IF_API_ERROR(ReadDimensions(body, &out->dimensions));
  RETURN_IF_API_ERROR(ReadEmbedOptions(body, &out->unused_options));
  RETURN_IF_API_ERROR(ReadKeepAlive(body, &out->keep_alive_s));
  return std::nullopt;
}

MaybeError ParseOllamaEmbeddingsRequest(const OJson& body, EmbeddingsRequest* out) {
  RETURN_IF_API_ERROR(ReadModel(body, &out->model));
  std::optional<std::string> prompt;  // absent or null: "", as Ollama reads it (the model is only loaded)
  RETURN_IF_API_ERROR(ReadString(body, "prompt", "", &prompt));
  out->texts = {prompt.value_or("")};
  out->truncate = true;
  RETURN_IF_API_ERROR(ReadEmbedOptions(body, &out->unused_options));
  RETURN_IF_API_ERROR(ReadKeepAlive(body, &out->keep_alive_s));
  return std::nullopt;
}

MaybeError ParseRerankRequest(const OJson& body, RerankRequest* out) {
  RETURN_IF_API_ERROR(ReadModel(body, &out->model));
  std::optional<std::string> query;
  RETURN_IF_API_ERROR(ReadString(body, "query", "", &query));
  if (!query || query->empty()) return BadRequest("'query' is required (a non-empty string)", "query");
  out->query = std::move(*query);
  auto it = body.find("documents");
  if (it == body.end() || it->is_null()) return BadRequest("'documents' is required", "documents");
  if (!it->is_array()) return BadRequest("'documents' must be a list, not " + JsonTypeName(*it), "documents");
  if (it->empty()) return BadRequest("'documents' is an empty list", "documents");
  RETURN_IF_API_ERROR(TooMany("documents", it->size()));
  for (size_t i = 0; i < it->size(); ++i) {
    const OJson& d = (*it)[i];
    const std::string path = IndexPath("documents", i);
    if (d.is_string()) {
      out->documents.push_back(d.get<std::string>());
    } else if (d.is_object() && d.contains("text") && d["text"].is_string()) {
      out->documents.push_back(d["text"].get<std::string>());
    } else {
      return BadRequest("'" + path + "' must be a string or an object with a string 'text'", path);
    }
    if (out->documents.back().empty()) return BadRequest("'" + path + "' is empty", path);
  }
  RETURN_IF_API_ERROR(ReadInteger(body, "top_n", "", 1, int64_t{1} << 30, &out->top_n));
  std::optional<bool> return_documents;
  RETURN_IF_API_ERROR(ReadBool(body, "return_documents", "", &return_documents));
  out->return_documents = return_documents.value_or(false);
  return std::nullopt;
}

}  // namespace llmhost::server
