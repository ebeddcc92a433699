// Ollama's model routes: GET /api/version, /api/tags (the models),
// /api/ps (the loaded ones), POST /api/show (one model's details),
// DELETE /api/delete (a model's files: EnginePool::DeleteModel; 200 with an
// empty body, 404 "model 'x' not found", 409 when pinned or in use).
// /api/chat and /api/generate run through routes_inference.cpp.
//
// Ollama names a model by a digest of its manifest; llmhost's models are
// folders and files, so `digest` is the SHA-256 of the model's path: a
// stable name for that model here, not a hash of its content.
#include <sys/stat.h>

#include <ctime>

#include <nlohmann/json.hpp>

#include "chat/chat_template.h"
#include "chat/output_format.h"
#include "server/api_server.h"
#include "server/json_fields.h"
#include "server/model_kind_check.h"
#include "server/pool_errors.h"
#include "server/pool_json.h"
#include "server/response_format.h"
#include "util/log.h"
#include "util/sha256.h"
#include "util/version.h"

namespace llmhost::server {

namespace {

using Json = nlohmann::ordered_json;

std::string Rfc3339(double unix_seconds) {
  const std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// The model's files' last change.
std::string ModifiedAt(const std::string& path) {
  struct stat st {};
  return Rfc3339(::stat(path.c_str(), &st) == 0 ? static_cast<double>(st.st_mtime) : 0);
}

Json Details(const DiscoveredModel& m) {
  return Json{{"parent_model", ""},
              {"format", m.gguf() ? "gguf" : "safetensors"},
              {"family", m.model_type},
              {"families", Json::array({m.model_type})},
              {"parameter_size", ""},
              {"quantization_level", ""}};
}

const DiscoveredModel* Find(const std::vector<DiscoveredModel>& models, const std::string& id) {
  for (const DiscoveredModel& m : models)
    if (m.id == id) return &m;
  return nullptr;
}

// The fields /api/tags and /api/ps share.
Json ModelEntry(const ModelStatus& s, const DiscoveredModel& m) {
  const std::string name = s.alias ? *s.alias : s.id;
  return Json{{"name", name},
              {"model", name},
              {"modified_at", ModifiedAt(m.path)},
              {"size", m.weight_bytes},
              {"digest", ToHex(Sha256Of(m.path))},
              {"details", Details(m)}};
}

void SendOllamaError(const std::shared_ptr<ResponseWriter>& writer, int status, const std::string& message) {
  writer->Send(ErrorResponse(ErrorWithStatus(status, message), ApiFlavor::kOllama));
}

void Tags(ApiServer& server, const std::shared_ptr<ResponseWriter>& writer) {
  const std::vector<DiscoveredModel> found = server.pool().Models();
  Json models = Json::array();
  for (const ModelStatus& s : server.pool().ModelStatuses()) {
    const DiscoveredModel* m = Find(found, s.id);
    if (s.hidden || !m) continue;
    models.push_back(ModelEntry(s, *m));
  }
  SendJson(writer, Json{{"models", std::move(models)}});
}

void Ps(ApiServer& server, const std::shared_ptr<ResponseWriter>& writer) {
  const std::vector<DiscoveredModel> found = server.pool().Models();
  Json models = Json::array();
  for (const ModelStatus& s : server.pool().ModelStatuses()) {
    const DiscoveredModel* m = Find(found, s.id);
    if (!s.loaded || !m) continue;
    Json e = ModelEntry(s, *m);
    e["size"] = s.memory_bytes;
    // No TTL: kept until evicted or unloaded, shown far ahead as Ollama does.
    e["expires_at"] = s.ttl_seconds && s.last_access ? Rfc3339(*s.last_access + static_cast<double>(*s.ttl_seconds))
                                                     : "9999-12-31T23:59:59Z";
    e["size_vram"] = s.gpu ? s.memory_bytes : 0;
    if (s.max_context_window) e["context_length"] = *s.max_context_window;
    models.push_back(std::move(e));
  }
  SendJson(writer, Json{{"models", std::move(models)}});
}

// What the model can do: embedding for an embedding model (by its
// settings), else, from its chat template, tools where it renders tool
// calls and thinking where it has a think block. (A rerank model has no
// Ollama capability.)
Json Capabilities(const DetectedOutputFormat& f, ModelKind kind) {
  if (kind == ModelKind::kEmbedding) return Json::array({"embedding"});
  if (kind == ModelKind::kRerank) return Json::array();
  Json caps = Json::array({"completion"});
  if (f.format != OutputFormat::kNone) caps.push_back("tools");
  if (f.reasoning) caps.push_back("thinking");
  return caps;
}

// The model named by "model" (or the older "name") of a JSON body.
MaybeError ModelName(const HttpRequest& request, std::string* name) {
  OJson body;
  if (MaybeError e = ParseJsonObject(request.body, &body)) return e;
  std::optional<std::string> value;
  MaybeError e = ReadString(body, "model", "", &value);
  if (!e && !value) e = ReadString(body, "name", "", &value);
  if (e) return e;
  if (!value || value->empty()) {
    return BadRequest("'model' is required: a model name (GET /api/tags lists them)", "model");
  }
  *name = *value;
  return std::nullopt;
}

// A loaded model's kind as it serves, else its settings'.
ModelKind KindOf(ApiServer& server, const std::string& id) {
  if (std::shared_ptr<ServedModel> served = server.pool().Peek(id)) return ServedKind(*served);
  Result<ModelSettings> settings = server.pool().Settings(id);
  return settings.ok() ? settings->kind : ModelKind::kChat;
}

void Show(ApiServer& server, const HttpRequest& request, const std::shared_ptr<ResponseWriter>& writer) {
  std::string name;
  if (MaybeError e = ModelName(request, &name)) return SendOllamaError(writer, e->status, e->message);
  Result<std::string> id = server.pool().Resolve(name);
  if (!id.ok()) return SendOllamaError(writer, 404, id.status().message());
  const std::vector<DiscoveredModel> found = server.pool().Models();
  const DiscoveredModel* m = Find(found, *id);
  if (!m) return SendOllamaError(writer, 404, "model '" + name + "' not found");
  // A loaded model's template as it serves it; otherwise read from its folder.
  std::string template_source;
  DetectedOutputFormat format;
  if (std::shared_ptr<ServedModel> served = server.pool().Peek(*id); served && served->chat_template) {
    template_source = served->chat_template->source();
    format = served->output_format;
  } else if (!m->gguf()) {
    if (Result<ModelChatTemplates> t = LoadModelChatTemplates(m->path); t.ok()) {
      template_source = t->default_template;
      format = DetectOutputFormat(template_source, m->model_type);
    }
  }
  Json info = {{"general.architecture", m->model_type}};
  if (m->context_length > 0) info[m->model_type + ".context_length"] = m->context_length;
  SendJson(writer, Json{{"license", ""},
                        {"modelfile", "# served by llmhost from " + m->path + "\nFROM " + m->path + "\n"},
                        {"parameters", ""},
                        {"template", template_source},
                        {"details", Details(*m)},
                        {"model_info", std::move(info)},
                        {"capabilities", Capabilities(format, KindOf(server, *id))},
                        {"modified_at", ModifiedAt(m->path)}});
}

void Delete(ApiServer& server, const HttpRequest& request, const std::shared_ptr<ResponseWriter>& writer) {
  std::string name;
  if (MaybeError e = ModelName(request, &name)) return SendOllamaError(writer, e->status, e->message);
  DeleteResult d = server.pool().DeleteModel(name);
  if (d.error.code == PoolErrorCode::kNotFound) return SendOllamaError(writer, 404, "model '" + name + "' not found");
  if (!d.ok()) {
    const ApiError e = PoolApiError(d.error);
    return SendOllamaError(writer, e.status, e.message);
  }
  LOG_INFO("ollama: deleted " << d.id);
  HttpResponse r;
  r.content_type = "";
  writer->Send(std::move(r));
}

}  // namespace

void HandleOllama(ApiServer& server, const HttpRequest& request, const std::shared_ptr<ResponseWriter>& writer) {
  if (request.path == "/api/version") return SendJson(writer, Json{{"version", kVersion}});
  if (request.path == "/api/tags") return Tags(server, writer);
  if (request.path == "/api/ps") return Ps(server, writer);
  if (request.path == "/api/show") return Show(server, request, writer);
  if (request.path == "/api/delete") return Delete(server, request, writer);
  SendOllamaError(writer, 404, "Unknown route: " + request.method + " " + request.path);
}

}  // namespace llmhost::server
