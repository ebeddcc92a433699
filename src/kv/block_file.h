// The block file format (safetensors, one tensor "kv") and its file I/O,
// shared by the SSD tier, the public Encode/Decode functions and tests.
// Internal to src/kv; the public entry points are in kv/tiered_block_store.h.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kv/block_store.h"
#include "util/sha256.h"
#include "util/status.h"

namespace llmhost {

inline constexpr uint64_t kBlockFileMaxHeaderBytes = uint64_t{1} << 20;  // untrusted: refuse more
inline constexpr const char* kBlockFileFormat = "llmhost-kv-block";
inline constexpr const char* kBlockFileFormatVersion = "1";
// Shape limits of a header (far above any real model; they bound the sizes
// an untrusted file can make us compute or allocate).
inline constexpr int64_t kBlockMaxLayers = 4096;
inline constexpr int64_t kBlockMaxBlockSize = 1 << 16;
inline constexpr int64_t kBlockMaxKvDim = 1 << 20;
inline constexpr uint64_t kBlockMaxDataBytes = uint64_t{1} << 36;  // 64 GiB

// For unordered maps keyed by block key (the key is a SHA-256: any 8 bytes
// are a good hash).
struct BlockKeyHash {
  size_t operator()(const BlockKey& k) const {
    size_t h = 0;
    for (int i = 0; i < 8; ++i) h = (h << 8) | k[i];
    return h;
  }
};

struct BlockFileHeader {
  BlockMeta meta;
  uint64_t header_bytes = 0;  // 8 + JSON length: where the data starts
  Sha256Digest data_sha256{};
  int64_t created_at = 0;     // unix seconds
};

// Parses the length prefix and JSON header at the start of `head` (which may
// hold more than the header). InvalidArgument naming the problem.
Status ParseBlockFileHeader(std::span<const uint8_t> head, BlockFileHeader* out);
// The 8-byte length and the JSON header padded with spaces so that the data
// starts at a multiple of 8.
std::string BuildBlockFileHeader(const BlockMeta& meta, const Sha256Digest& data_sha256,
                                 int64_t created_at);
// 64 lowercase or uppercase hex digits -> digest.
bool ParseHexDigest(std::string_view hex, Sha256Digest* out);

// The header of a block file for `data` (hashes the data; created_at = now).
std::string BlockFileHeaderFor(const BlockMeta& meta, std::span<const uint8_t> data);
// Writes header then data to `path` atomically: a temp file
// "<path>.<pid>-<n>.tmp" in the same folder, write(2) of each part (no
// concatenation), fdatasync, rename. The temp file is removed on failure.
Status WriteBlockFileAtomic(const std::string& path, std::string_view header,
                            std::span<const uint8_t> data);
// Reads the block at `path` straight into a buffer and checks it against
// `want`: key, fingerprint and shape, file size, SHA-256. NotFound when the
// file is absent; Corruption / InvalidArgument / IOError otherwise.
Result<BlockBytes> ReadBlockFile(const std::string& path, const BlockMeta& want);
// Reads only the header of `path` (the startup scan) and the file's size and
// modification time (ns since the epoch). Checks that the size matches.
Status ReadBlockFileHeader(const std::string& path, BlockFileHeader* out, uint64_t* file_bytes,
                           int64_t* mtime_ns);
// Whether `name` is a temp file name of WriteBlockFileAtomic.
bool IsBlockTempFileName(std::string_view name);

}  // namespace llmhost
