// libFuzzer target: what `llmhost pull` reads from the network, on arbitrary
// bytes. The first byte picks the parser:
//   0  an HTTP response head              3  the Hub's model info JSON
//   1  a chunked body, whole vs in pieces 4  a URL and a redirect Location
//   2  a Content-Range value
// A chunked body must decode the same however it is split; an accepted model
// info holds only safe paths; a resolved URL prints as a URL that parses back
// to the same text.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "pool/hub_model_info.h"
#include "util/http_message.h"
#include "util/url.h"

using namespace llmhost;

static volatile uint64_t g_sink;

namespace {

// Feeds `in` in pieces of `step` bytes; returns false on an error.
bool DecodeChunked(std::string_view in, size_t step, std::string* out, size_t* used_total) {
  ChunkedDecoder d;
  *used_total = 0;
  for (size_t i = 0; i < in.size() && !d.done(); i += step) {
    size_t used = 0;
    if (!d.Feed(in.substr(i, step), out, &used).ok()) return false;
    *used_total += used;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const int which = data[0] % 5;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (which) {
    case 0: {
      auto head = ParseResponseHead(text);
      if (head.ok()) g_sink = head->headers.size() + head->Header("Location").size();
      break;
    }
    case 1: {
      const size_t step = 1 + static_cast<unsigned char>(text[0]) % 7;
      std::string whole, pieces;
      size_t used_whole = 0, used_pieces = 0;
      const bool ok_whole = DecodeChunked(text, text.size(), &whole, &used_whole);
      const bool ok_pieces = DecodeChunked(text, step, &pieces, &used_pieces);
      if (ok_whole != ok_pieces) std::abort();
      if (ok_whole && (whole != pieces || used_whole != used_pieces)) std::abort();
      break;
    }
    case 2: {
      auto r = ParseContentRange(text);
      if (r.ok() && (r->last < r->first || (r->total != 0 && r->total <= r->last))) std::abort();
      break;
    }
    case 3: {
      auto info = ParseHubModelInfo(text);
      if (info.ok()) {
        for (const HubFile& f : info->files) {
          if (!IsSafeRepoPath(f.path)) std::abort();
        }
        g_sink = info->files.size();
      }
      break;
    }
    case 4: {
      static const Url kBase = *ParseUrl("https://huggingface.co/org/model/resolve/main/dir/file.gguf?x=1");
      for (auto r : {ParseUrl(text), ResolveUrl(kBase, text)}) {
        if (!r.ok()) continue;
        const std::string printed = r->ToString();
        auto again = ParseUrl(printed);
        if (!again.ok() || again->ToString() != printed) std::abort();
      }
      break;
    }
  }
  return 0;
}
