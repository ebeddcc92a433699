# cmake -DDIR=<folder> -DOUT=<file.cpp> -P EmbedFiles.cmake
# Writes a C++ source that defines llmhost::server::WebAssets() (see
# src/server/web_assets.h): every file under DIR as bytes, with its name
# relative to DIR and an ETag from its SHA-256. Run by a custom command that
# depends on each file, so a changed file regenerates it.
file(GLOB_RECURSE files RELATIVE "${DIR}" "${DIR}/*")
list(SORT files)
set(arrays "")
set(entries "")
set(n 0)
foreach(name IN LISTS files)
  file(READ "${DIR}/${name}" hex HEX)
  file(SHA256 "${DIR}/${name}" sha)
  string(LENGTH "${hex}" hex_len)
  math(EXPR size "${hex_len} / 2")
  # 0xAB, per byte; 16 bytes a line (CMake's regex has no {n}).
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
  string(REPEAT "0x..," 16 line)
  string(REGEX REPLACE "(${line})" "\\1\n    " bytes "${bytes}")
  string(SUBSTRING "${sha}" 0 20 tag)
  # A trailing NUL keeps empty files legal (no zero-length arrays); not counted.
  string(APPEND arrays "// ${name}\nconst unsigned char kFile${n}[] = {\n    ${bytes}0x00};\n")
  string(APPEND entries "    {\"${name}\", {reinterpret_cast<const char*>(kFile${n}), ${size}}, \"\\\"${tag}\\\"\"},\n")
  math(EXPR n "${n} + 1")
endforeach()
set(text "// Generated from web/ by cmake/EmbedFiles.cmake: do not edit.
#include \"server/web_assets.h\"

namespace llmhost::server {

namespace {

${arrays}
const WebAsset kAssets[] = {
${entries}};

}  // namespace

std::span<const WebAsset> WebAssets() { return kAssets; }

}  // namespace llmhost::server
")
file(WRITE "${OUT}" "${text}")
