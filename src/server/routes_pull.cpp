// POST /api/pull (Ollama) and POST /admin/api/models/pull: a model from the
// Hugging Face Hub (pool/hub_pull.h) into the first --model-dir, with
// progress as NDJSON lines while it downloads (Ollama's messages: "pulling
// manifest", "pulling <file>" with total / completed bytes, "verifying
// sha256 digest", "success"; an error as {"error": "..."}), then the models
// are discovered again so that it is served at once.
//
// The download runs on a thread of its own (ApiServer::RunBackground), not
// the transport's; a client that hangs up, or the server stopping, cancels
// it (the partial files stay for the next pull).
#include <chrono>

#include <nlohmann/json.hpp>

#include "pool/hub_pull.h"
#include "server/api_server.h"
#include "server/json_fields.h"
#include "util/log.h"

namespace llmhost::server {

namespace {

using Json = nlohmann::ordered_json;

std::string Line(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n"; }

// Progress lines, at most a few a second for the bytes of one file.
class ProgressLines {
 public:
  explicit ProgressLines(std::shared_ptr<ResponseWriter> writer) : writer_(std::move(writer)) {}
  void operator()(const HubPullProgress& p) {
    using E = HubPullProgress::Event;
    const auto now = std::chrono::steady_clock::now();
    if (p.event == E::kFileBytes && now - last_ < std::chrono::milliseconds(250)) return;
    last_ = now;
    Json j;
    switch (p.event) {
      case E::kListed: j = {{"status", "pulling manifest"}, {"files", p.file_count}, {"total", p.total}}; break;
      case E::kRetry: j = {{"status", "retrying " + p.file}, {"message", p.message}}; break;
      case E::kFileCached:
      case E::kFileDone:
        j = {{"status", "pulling " + p.file}, {"total", p.file_total}, {"completed", p.file_total}};
        break;
      default:
        j = {{"status", "pulling " + p.file}, {"total", p.file_total}, {"completed", p.file_done}};
        break;
    }
    writer_->Write(Line(j));
  }

 private:
  std::shared_ptr<ResponseWriter> writer_;
  std::chrono::steady_clock::time_point last_{};
};

int StatusFor(const Status& s) {
  switch (s.code()) {
    case StatusCode::kNotFound: return 404;
    case StatusCode::kInvalidArgument: return 400;
    case StatusCode::kResourceExhausted: return 507;
    default: return 502;  // the Hub, the network, or what it sent
  }
}

}  // namespace

void HandlePull(ApiServer& server, const HttpRequest& request, const std::shared_ptr<ResponseWriter>& writer) {
  const ApiFlavor flavor = FlavorForPath(request.path);
  auto fail = [&](int status, const std::string& message) {
    writer->Send(ErrorResponse(ErrorWithStatus(status, message), flavor));
  };
  OJson body;
  if (MaybeError e = ParseJsonObject(request.body, &body)) return fail(e->status, e->message);
  std::optional<std::string> model;
  std::optional<bool> stream;
  MaybeError e = ReadString(body, "model", "", &model);
  if (!e && !model) e = ReadString(body, "name", "", &model);  // Ollama's older field
  if (!e) e = ReadBool(body, "stream", "", &stream);
  if (e) return fail(e->status, e->message);
  if (!model || model->empty()) return fail(400, "'model' is required: a Hugging Face repository, ORG/NAME[@REVISION][:QUANT]");
  Result<HubRef> ref = ParseHubRef(*model);
  if (!ref.ok()) return fail(400, "'model': " + ref.status().message());
  if (server.settings().model_dirs.empty()) return fail(500, "the server has no model directory to pull into");

  HubPullOptions o;
  ApplyHubEnvironment(&o);
  o.model_dir = server.settings().model_dirs.front();
  o.ref = *ref;
  const bool streamed = stream.value_or(true);
  if (streamed) writer->StartStream(200, "application/x-ndjson", {});
  // Set by a client that hangs up, or by the server stopping.
  auto cancel = std::make_shared<std::atomic<bool>>(false);
  writer->OnClose([cancel] { cancel->store(true); });
  o.cancel = cancel.get();
  ApiServer* srv = &server;
  const std::string what = *model;
  const bool started = server.RunBackground(cancel, [srv, o, writer, cancel, streamed, flavor, what]() mutable {
    ProgressLines lines(writer);
    if (streamed) o.progress = [&lines](const HubPullProgress& p) { lines(p); };
    Result<HubPullResult> r = PullFromHub(o);
    if (!r.ok()) {
      LOG_WARN("pull: " << what << ": " << r.status().message());
      if (streamed) {
        writer->Write(Line(Json{{"error", r.status().message()}}));
        writer->End();
      } else {
        writer->Send(ErrorResponse(ErrorWithStatus(StatusFor(r.status()), r.status().message()), flavor));
      }
      return;
    }
    srv->pool().Rediscover();
    LOG_INFO("pull: " << what << ": " << r->files << " files (" << r->downloaded << " downloaded) in "
                      << r->snapshot_dir);
    const Json done = {{"status", "success"}, {"model", r->model_id}, {"commit", r->commit},
                       {"files", r->files}, {"downloaded", r->downloaded}};
    if (streamed) {
      writer->Write(Line(Json{{"status", "verifying sha256 digest"}}));
      writer->Write(Line(done));
      writer->End();
    } else {
      HttpResponse resp;
      resp.body = done.dump();
      writer->Send(std::move(resp));
    }
  });
  if (!started) {
    if (streamed) {
      writer->Write(Line(Json{{"error", "the server is stopping"}}));
      writer->End();
    } else {
      fail(503, "the server is stopping");
    }
  }
}

}  // namespace llmhost::server
