// Helpers shared by all test binaries.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <stdlib.h>

#include <filesystem>
#include <string>

#include "util/file.h"

namespace llmhost::testing {

// ../shared beside the source tree (LLMHOST_SHARED_DIR overrides), or "" when
// it is absent: tests that need it skip.
inline std::string SharedDir() {
  if (const char* env = std::getenv("LLMHOST_SHARED_DIR")) return IsDirectory(env) ? env : "";
  std::string dir = std::string(LLMHOST_SOURCE_DIR) + "/../shared";
  return IsDirectory(dir) ? dir : "";
}

// An environment switch set for a scope and unset however the scope ends, so
// that a failed assertion leaves no switch behind for the tests after it.
class EnvSwitch {
 public:
  EnvSwitch(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~EnvSwitch() { unsetenv(name_); }
  EnvSwitch(const EnvSwitch&) = delete;
  EnvSwitch& operator=(const EnvSwitch&) = delete;

 private:
  const char* name_;
};

// Fixtures copied into the project (tests/data), always present.
inline std::string TestDataDir() { return std::string(LLMHOST_SOURCE_DIR) + "/tests/data"; }

// A fresh, empty temporary directory for one test (under $TMPDIR or /tmp).
inline std::string MakeTempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base ? base : "/tmp") + "/llmhost_test_XXXXXX";
  char* p = ::mkdtemp(tmpl.data());
  return p ? std::string(p) : std::string();
}

// MakeTempDir's directory, removed with everything in it at scope exit.
class ScopedTempDir {
 public:
  ScopedTempDir() : path_(MakeTempDir()) {}
  ~ScopedTempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScopedTempDir(const ScopedTempDir&) = delete;
  ScopedTempDir& operator=(const ScopedTempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string Sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace llmhost::testing

#define SKIP_IF_NO_SHARED()                                              \
  do {                                                                   \
    if (::llmhost::testing::SharedDir().empty())                         \
      GTEST_SKIP() << "../shared is absent: reference data unavailable"; \
  } while (0)
