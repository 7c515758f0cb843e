#pragma once
// Runs a shell command for the CLI tests: its captured output and exit code.
#include <sys/wait.h>

#include <cstdio>
#include <string>
#include <vector>

namespace remat::test {

struct ShellResult {
  int exit_code = -1;  // -1 when the command could not run or did not exit
  std::string out;     // what the command wrote to the pipe (redirect as needed)
};

inline ShellResult run_shell(const std::string& cmd) {
  ShellResult r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return r;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, pipe)) > 0;) r.out.append(buf, n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// `s` single-quoted for the shell.
inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// The remat binary with `args`, each quoted.
inline std::string remat_command(const std::vector<std::string>& args) {
  std::string cmd = shell_quote(REMAT_BINARY);
  for (const auto& a : args) cmd += " " + shell_quote(a);
  return cmd;
}

}  // namespace remat::test
