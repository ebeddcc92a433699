// Test helper: runs a program with arguments (no shell), capturing its
// stdout, stderr and exit code.
#pragma once

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "test_util.h"
#include "util/file.h"

extern char** environ;

namespace llmhost::testing {

struct ProcessResult {
  int exit_code = -1;  // -1 when the program could not be run or was killed
  std::string out, err;
};

inline ProcessResult RunProcess(const std::string& program, const std::vector<std::string>& args) {
  ProcessResult r;
  std::string dir = MakeTempDir();
  std::string out_path = JoinPath(dir, "stdout"), err_path = JoinPath(dir, "stderr");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  std::vector<std::string> argv_store = {program};
  argv_store.insert(argv_store.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_store) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc == 0) {
    int status = 0;
    if (waitpid(pid, &status, 0) == pid && WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  }
  if (auto s = ReadFileToString(out_path); s.ok()) r.out = *s;
  if (auto s = ReadFileToString(err_path); s.ok()) r.err = *s;
  ::unlink(out_path.c_str());
  ::unlink(err_path.c_str());
  ::rmdir(dir.c_str());
  return r;
}

}  // namespace llmhost::testing
