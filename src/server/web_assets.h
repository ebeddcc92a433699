// The dashboard's files (web/ in the source tree), compiled into the binary
// by cmake/EmbedFiles.cmake as web_assets_data.cpp in the build directory.
#pragma once

#include <span>
#include <string_view>

namespace llmhost::server {

struct WebAsset {
  std::string_view name;   // path below web/ ("index.html", "app.js")
  std::string_view bytes;  // the file's contents
  std::string_view etag;   // a quoted prefix of the file's SHA-256, taken at build time
};

// Every embedded file (the generated source defines it).
std::span<const WebAsset> WebAssets();

// The asset called `name`, or null.
const WebAsset* FindWebAsset(std::string_view name);

// "text/html; charset=utf-8" for "index.html", ...; by extension.
std::string_view ContentTypeFor(std::string_view name);

}  // namespace llmhost::server
