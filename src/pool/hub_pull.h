// `llmhost pull`: downloads a model from the Hugging Face Hub into a model
// directory in the Hugging Face cache layout (pool/hub_cache.h), where model
// discovery serves it and huggingface_hub shares it.
//
// Steps: the model info (GET {endpoint}/api/models/{repo}/revision/{rev}
// ?blobs=true: commit, files, sizes, LFS hashes); the file choice
// (pool/hub_file_select.h); a free-space check against what is left to
// download (statvfs); then each file from {endpoint}/{repo}/resolve/{commit}/
// {path} (redirects to a CDN followed, credentials kept to the endpoint's
// host) into blobs/<etag>.incomplete, resumed with a Range request after an
// interruption (within this pull: `retries` more attempts; across pulls: the
// .incomplete file stays), its size and LFS SHA-256 verified (a mismatch
// deletes the download), then renamed to blobs/<etag> and linked from
// snapshots/<commit>/; last, refs/<revision>.
//
// Threads: the calling thread and `jobs` - 1 more download files at once
// (taken in the repository's order); all have ended when PullFromHub
// returns. `progress` is called from any of them, one call at a time (under
// the pull's lock: keep it short). The first failure stops the other
// downloads (their partial files are kept for the next pull). Usable from a
// server: nothing is printed.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "pool/hub_file_select.h"
#include "pool/hub_ref.h"
#include "util/net_stream.h"
#include "util/status.h"

namespace llmhost {

struct HubPullProgress {
  enum class Event {
    kListed,       // the files are chosen: file_count, total
    kFileStart,    // a download starts (file_done > 0: resumed)
    kFileBytes,    // bytes arrived
    kFileDone,     // downloaded and verified
    kFileCached,   // already in blobs/: not downloaded
    kRetry,        // a network error; the next attempt resumes (message says why)
  };
  Event event = Event::kListed;
  std::string file;                        // the current file's repository path
  size_t file_index = 0, file_count = 0;   // index among the chosen files
  size_t files_done = 0;                   // downloaded or found cached so far
  uint64_t file_done = 0, file_total = 0;  // bytes of the current file (total 0: unknown)
  uint64_t done = 0, total = 0;            // bytes of all chosen files
  std::string message;
};

struct HubPullOptions {
  std::string endpoint = "https://huggingface.co";  // HF_ENDPOINT
  std::string token;                                // HF_TOKEN: "Authorization: Bearer" when set
  std::string model_dir;                            // where models--ORG--NAME goes
  HubRef ref;
  HubFileFilter filter;  // include / exclude; the quantization comes from `ref`
  int jobs = 4;          // files downloaded at once
  int retries = 3;       // more attempts per file after a network error
  int retry_delay_ms = 1000;
  NetTimeouts timeouts;
  std::function<void(const HubPullProgress&)> progress;
  const std::atomic<bool>* cancel = nullptr;  // set to stop between pieces (IOError "cancelled")
};

struct HubPullResult {
  std::string model_id;      // "ORG/NAME" or "ORG/NAME@REV", as model discovery names it
  std::string commit;
  std::string snapshot_dir;  // <model_dir>/models--ORG--NAME/snapshots/<commit>
  size_t files = 0;          // chosen
  size_t downloaded = 0;     // of them, fetched now (the rest were cached)
  uint64_t total_bytes = 0;
  uint64_t downloaded_bytes = 0;
};

// NotFound for a missing repository or revision; InvalidArgument saying to
// set HF_TOKEN for a gated or private one;
// ResourceExhausted when the disk lacks the space; Corruption for a size or
// hash mismatch (the file is discarded); IOError for the network, naming the
// file and saying that a new pull resumes.
Result<HubPullResult> PullFromHub(const HubPullOptions& options);

// HF_ENDPOINT and HF_TOKEN, where set, into `options` (the CLI and the
// server's pull routes read them the same way).
void ApplyHubEnvironment(HubPullOptions* options);

}  // namespace llmhost
