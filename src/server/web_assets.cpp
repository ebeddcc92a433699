#include "server/web_assets.h"

namespace llmhost::server {

const WebAsset* FindWebAsset(std::string_view name) {
  for (const WebAsset& a : WebAssets()) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

std::string_view ContentTypeFor(std::string_view name) {
  struct Type {
    std::string_view extension;
    std::string_view content_type;
  };
  static constexpr Type kTypes[] = {{".html", "text/html; charset=utf-8"},
                                    {".css", "text/css; charset=utf-8"},
                                    {".js", "text/javascript; charset=utf-8"},
                                    {".json", "application/json"},
                                    {".svg", "image/svg+xml"},
                                    {".png", "image/png"},
                                    {".ico", "image/x-icon"}};
  for (const Type& t : kTypes) {
    if (name.size() >= t.extension.size() && name.substr(name.size() - t.extension.size()) == t.extension) {
      return t.content_type;
    }
  }
  return "application/octet-stream";
}

}  // namespace llmhost::server
