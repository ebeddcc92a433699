// libFuzzer target: the KV block file decoder (kv/tiered_block_store.h) on
// arbitrary bytes — header-only decode (the startup scan) and full decode
// (header, sizes, SHA-256). What decodes must re-encode to a file that
// decodes to the same meta and data.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "kv/tiered_block_store.h"

using namespace llmhost;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> in(data, size);
  BlockMeta head_meta;
  uint64_t header_bytes = 0;
  Status hs = DecodeBlockFileHeader(in, &head_meta, &header_bytes);
  if (hs.ok() && (header_bytes < 8 || header_bytes > size || head_meta.data_bytes() == 0)) {
    __builtin_trap();
  }
  BlockMeta meta;
  std::vector<uint8_t> block;
  Status s = DecodeBlockFile(in, &meta, &block);
  if (!s.ok()) return 0;
  if (!hs.ok() || block.size() != meta.data_bytes() || header_bytes + block.size() != size ||
      meta.key != head_meta.key || !meta.SameShape(head_meta)) {
    __builtin_trap();
  }
  std::vector<uint8_t> again = EncodeBlockFile(meta, block);
  BlockMeta meta2;
  std::vector<uint8_t> block2;
  if (!DecodeBlockFile(again, &meta2, &block2).ok() || block2 != block || meta2.key != meta.key ||
      !meta2.SameShape(meta)) {
    __builtin_trap();
  }
  return 0;
}
