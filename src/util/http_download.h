// Downloads one URL into a file, resuming a partial one: when the file
// already holds N bytes, the request asks for `Range: bytes=N-` and appends
// on 206; a server that answers 200 instead (no range support) or 416 gets
// the whole file again. The file is fsynced before returning; renaming it
// into place is the caller's job.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "util/http_client.h"
#include "util/status.h"

namespace llmhost {

struct DownloadOptions {
  HttpGetOptions http;
  bool sha256 = false;  // hash the whole file (the resumed part read back from disk)
  // Called as bytes arrive: bytes in the file so far, and the file's full size
  // (0 when the server does not say). A non-OK Status cancels the download.
  std::function<Status(uint64_t done, uint64_t total)> progress;
};

struct DownloadResult {
  HttpGetResult response;   // a non-2xx status leaves the file as it was
  uint64_t size = 0;        // bytes in the file at the end
  uint64_t resumed_from = 0;  // bytes kept from a partial download (0: started over)
  std::string sha256;       // lower-case hex of the whole file, when asked for
};

// IOError naming the file or the URL; the partial file stays for the next try.
Result<DownloadResult> DownloadToFile(const std::string& url, const std::string& path, const DownloadOptions& options);

}  // namespace llmhost
