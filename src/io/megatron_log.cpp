#include "remat/io/megatron_log.hpp"

#include <charconv>
#include <cmath>
#include <string_view>

#include "remat/spec/problems.hpp"

namespace remat {

namespace {

// Megatron-LM's lines are short (a memory line holds a few hundred bytes per
// rank); longer lines are not the log's.
constexpr size_t kMaxLineBytes = 1 << 20;

std::string line_key(size_t number) { return "line " + std::to_string(number); }

std::string shortened(std::string_view line) {
  return line.size() > 160 ? std::string(line.substr(0, 160)) + "..." : std::string(line);
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// A cursor over one line: every match is linear in the line's length.
struct Cursor {
  std::string_view s;
  size_t at = 0;

  bool literal(std::string_view text) {
    if (s.substr(at, text.size()) != text) return false;
    at += text.size();
    return true;
  }
  void spaces() {
    while (at < s.size() && is_space(s[at])) ++at;
  }
  // One or more digits as an int64 (false on none or overflow).
  bool integer(int64_t& out) {
    const size_t start = at;
    while (at < s.size() && is_digit(s[at])) ++at;
    if (at == start) return false;
    const auto [end, ec] = std::from_chars(s.data() + start, s.data() + at, out);
    return ec == std::errc() && end == s.data() + at;
  }
  // Digits with at most one '.', as Megatron prints MiB and ms (false when
  // malformed: "1.2.3", ".", an exponent, a value beyond double).
  bool number(double& out) {
    const size_t start = at;
    size_t dots = 0, digits = 0;
    for (; at < s.size() && (is_digit(s[at]) || s[at] == '.'); ++at) s[at] == '.' ? ++dots : ++digits;
    if (digits == 0 || dots > 1) return false;
    const auto [end, ec] = std::from_chars(s.data() + start, s.data() + at, out);
    return ec == std::errc() && end == s.data() + at && std::isfinite(out);
  }
};

// "  name ...... value": the name up to the first space, then dots and spaces.
bool argument_line(std::string_view line, std::string& name, std::string& value) {
  if (line.substr(0, 2) != "  ") return false;
  size_t at = 2;
  while (at < line.size() && !is_space(line[at])) ++at;
  if (at == 2 || at >= line.size() || line[at] != ' ') return false;
  name = std::string(line.substr(2, at - 2));
  ++at;
  while (at < line.size() && line[at] == '.') ++at;
  while (at < line.size() && is_space(line[at])) ++at;
  value = std::string(line.substr(at));
  return true;
}

// One "[Rank R] (after N iterations) memory (MB) | allocated: A | max allocated: B | reserved: C |
// max reserved: D[ | total device memory used: E]" at `at`; false when the text there is not one.
bool memory_report(std::string_view line, size_t at, MegatronRankMemory& r) {
  Cursor c{line, at};
  if (!c.literal("[Rank ") || !c.integer(r.rank) || !c.literal("] (after ") || !c.integer(r.after_iteration) ||
      !c.literal(" iterations) memory (MB) | allocated: ") || !c.number(r.allocated_MiB) ||
      !c.literal(" | max allocated: ") || !c.number(r.max_allocated_MiB) || !c.literal(" | reserved: ") ||
      !c.number(r.reserved_MiB) || !c.literal(" | max reserved: ") || !c.number(r.max_reserved_MiB))
    return false;
  if (c.literal(" | total device memory used: ") && !c.number(r.device_used_MiB)) return false;
  return true;
}

// "iteration   I/   N | ... elapsed time per iteration (ms): T": false when malformed.
bool iteration_line(std::string_view line, int64_t& iteration, int64_t& total, double& ms) {
  bool counted = false;
  for (size_t at = line.find("iteration"); at != std::string_view::npos && !counted;
       at = line.find("iteration", at + 1)) {
    Cursor c{line, at + 9};
    const size_t before = c.at;
    c.spaces();
    if (c.at == before || !c.integer(iteration) || !c.literal("/")) continue;
    c.spaces();
    counted = c.integer(total) && c.literal(" |");
  }
  const std::string_view label = "elapsed time per iteration (ms): ";
  const size_t at = line.rfind(label);
  if (!counted || at == std::string_view::npos) return false;
  Cursor c{line, at + label.size()};
  return c.number(ms);
}

struct LogReader {
  MegatronLog log;
  std::map<int64_t, MegatronRankMemory> ranks;
  std::string_view line;
  size_t number = 0;
  enum { before, inside, after } state = before;

  [[noreturn]] void fail(const std::string& message) const {
    throw InputError({{log.file, line_key(number), shortened(line), message}});
  }

  void memory_line() {
    size_t reports = 0, read = 0;  // ranks print at once: one line can hold several reports
    for (size_t at = line.find("memory (MB)"); at != std::string_view::npos; at = line.find("memory (MB)", at + 1))
      ++reports;
    for (size_t at = line.find("[Rank "); at != std::string_view::npos; at = line.find("[Rank ", at + 1)) {
      MegatronRankMemory r;
      if (!memory_report(line, at, r)) continue;
      ++read;
      if (r.max_allocated_MiB <= 0 || r.max_reserved_MiB <= 0)
        fail("reports a peak of 0 MiB (max allocated and max reserved must be positive)");
      if (r.max_allocated_MiB < r.allocated_MiB || r.max_reserved_MiB < r.reserved_MiB)
        fail("reports a maximum below the current value");
      if (ranks.count(r.rank) == 0 || ranks[r.rank].after_iteration <= r.after_iteration) ranks[r.rank] = r;
    }
    if (read < reports) fail("is a malformed memory report");
  }

  void timing_line() {
    int64_t iteration = 0, total = 0;
    double ms = 0;
    if (!iteration_line(line, iteration, total, ms)) fail("is a malformed iteration line");
    if (ms <= 0) fail("reports an iteration time of 0 ms");
    if (iteration < 1 || iteration > total) fail("has an iteration number outside 1..train-iters");
    if (!log.iteration_ms.empty() && iteration <= log.iteration_ms.back().first)
      fail("repeats or goes back to an earlier iteration (two runs in one log?)");
    if (log.train_iters != 0 && total != log.train_iters)
      fail("names another iteration count than the lines before (two runs in one log?)");
    log.iteration_ms.push_back({iteration, ms});
    log.train_iters = total;
  }

  void read(std::string_view l) {
    line = l;
    if (line.rfind("# device: ", 0) == 0) log.device = std::string(line.substr(10));
    if (line.rfind("# host: ", 0) == 0) log.host = std::string(line.substr(8));
    if (line.rfind("# host after: ", 0) == 0) log.host_after = std::string(line.substr(14));
    const bool block_start = line.find("-- arguments --") != std::string_view::npos &&
                             line.find("end of arguments") == std::string_view::npos;
    if (state == before) {
      if (block_start) state = inside;
      return;
    }
    if (block_start) fail("starts a second argument block: one run per log (two logs concatenated?)");
    if (state == inside) {
      if (line.find("end of arguments") != std::string_view::npos) {
        state = after;
        return;
      }
      std::string name, value;
      if (!argument_line(line, name, value))
        fail("is not an argument line ('  name .... value') of the argument block");
      if (!log.args.emplace(name, value).second) fail("repeats the argument " + name);
      return;
    }
    const bool memory_report_line = line.find("] (after ") != std::string_view::npos;
    if (memory_report_line && line.find("memory (MB)") != std::string_view::npos)
      memory_line();
    else if (memory_report_line && line.find(" memory (") != std::string_view::npos)
      fail("reports memory in another unit than MB");
    else if (line.find("elapsed time per iteration (ms)") != std::string_view::npos)
      timing_line();
  }
};

}  // namespace

MegatronLog parse_megatron_log(const std::string& text, const std::string& file) {
  LogReader r;
  r.log.file = file;
  std::string_view last_line;
  for (size_t start = 0; start < text.size();) {
    const size_t end = std::min(text.find('\n', start), text.size());
    std::string_view line(text.data() + start, end - start);
    start = end + 1;
    ++r.number;
    if (line.size() > kMaxLineBytes) {
      r.line = line.substr(0, 0);
      throw InputError({{file, line_key(r.number), std::to_string(line.size()) + " bytes",
                         "is longer than 1 MiB: not a Megatron-LM log line"}});
    }
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!line.empty()) last_line = line;
    r.read(line);
  }
  r.line = last_line;
  if (r.state == LogReader::before)
    throw InputError({{file, "arguments", "", "is not a Megatron-LM log: no '-- arguments --' block"}});
  if (r.state == LogReader::inside) r.fail("the log ends inside the argument block (truncated)");
  if (r.ranks.empty())
    throw InputError(
        {{file, "memory (MB)", "", "has no per-rank memory report: run Megatron-LM with --log-memory-interval 1"}});
  if (r.log.iteration_ms.empty())
    throw InputError(
        {{file, "elapsed time per iteration (ms)", "", "has no iteration line: run with --log-interval 1"}});
  if (int64_t(r.log.iteration_ms.size()) < r.log.train_iters)
    r.fail("the log ends after " + std::to_string(r.log.iteration_ms.size()) + " of " +
           std::to_string(r.log.train_iters) + " iterations (truncated)");
  for (auto& [rank, m] : r.ranks) r.log.ranks.push_back(m);
  return r.log;
}

}  // namespace remat
