// A ResponseWriter that passes everything on to another and tells a
// callback the status of the response once it is sent or its stream starts
// (the metrics count responses by route and status this way).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "server/http_types.h"

namespace llmhost::server {

class StatusRecordingWriter final : public ResponseWriter {
 public:
  StatusRecordingWriter(std::shared_ptr<ResponseWriter> inner, std::function<void(int status)> on_status)
      : inner_(std::move(inner)), on_status_(std::move(on_status)) {}

  void AddHeader(std::string name, std::string value) override { inner_->AddHeader(std::move(name), std::move(value)); }
  void Send(HttpResponse response) override {
    Record(response.status);
    inner_->Send(std::move(response));
  }
  void StartStream(int status, std::string content_type, HeaderList headers) override {
    Record(status);
    inner_->StartStream(status, std::move(content_type), std::move(headers));
  }
  void Write(std::string data) override { inner_->Write(std::move(data)); }
  void End() override { inner_->End(); }
  void OnClose(std::function<void()> fn) override { inner_->OnClose(std::move(fn)); }
  bool closed() const override { return inner_->closed(); }
  size_t pending_bytes() const override { return inner_->pending_bytes(); }
  void Post(std::function<void()> fn) override { inner_->Post(std::move(fn)); }

 private:
  // Once: a second Send after the first is ignored by the transport too.
  void Record(int status) {
    if (auto f = std::exchange(on_status_, nullptr)) f(status);
  }

  std::shared_ptr<ResponseWriter> inner_;
  std::function<void(int)> on_status_;
};

}  // namespace llmhost::server
