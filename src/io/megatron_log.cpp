#include "remat/io/megatron_log.hpp"

#include <algorithm>
#include <cstdlib>
#include <regex>
#include <sstream>

#include "remat/spec/problems.hpp"

namespace remat {

namespace {

const std::regex kArgument(R"(^  (\S+) \.*\s*(.*)$)");
const std::regex kMemory(
    R"(\[Rank (\d+)\] \(after (\d+) iterations\) memory \(MB\) \| allocated: ([\d.]+) \| max allocated: ([\d.]+) \| )"
    R"(reserved: ([\d.]+) \| max reserved: ([\d.]+)(?: \| total device memory used: ([\d.]+))?)");
const std::regex kIteration(R"(iteration\s+(\d+)/\s*(\d+) \|.*elapsed time per iteration \(ms\): ([\d.]+))");

std::string line_key(size_t number) { return "line " + std::to_string(number); }

std::string shortened(const std::string& line) { return line.size() > 160 ? line.substr(0, 160) + "..." : line; }

}  // namespace

MegatronLog parse_megatron_log(const std::string& text, const std::string& file) {
  MegatronLog log;
  log.file = file;
  std::istringstream in(text);
  std::string line, last_line;
  size_t number = 0;
  enum { before, inside, after } state = before;
  std::map<int64_t, MegatronRankMemory> ranks;
  const auto fail = [&](const std::string& message) {
    throw InputError({{file, line_key(number), shortened(line), message}});
  };
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) last_line = line;
    if (line.rfind("# device: ", 0) == 0) log.device = line.substr(10);
    if (line.rfind("# host: ", 0) == 0) log.host = line.substr(8);
    if (line.rfind("# host after: ", 0) == 0) log.host_after = line.substr(14);
    if (state == before) {
      if (line.find("-- arguments --") != std::string::npos) state = inside;
      continue;
    }
    if (state == inside) {
      if (line.find("end of arguments") != std::string::npos) {
        state = after;
        continue;
      }
      std::smatch m;
      if (!std::regex_match(line, m, kArgument))
        fail("is not an argument line ('  name .... value') of the argument block");
      log.args[m[1]] = m[2];
      continue;
    }
    std::smatch m;
    if (line.find("] (after ") != std::string::npos && line.find("memory (MB)") != std::string::npos) {
      // ranks print at once: one line can hold several reports
      size_t reports = 0;
      for (size_t at = line.find("memory (MB)"); at != std::string::npos; at = line.find("memory (MB)", at + 1))
        ++reports;
      size_t read = 0;
      for (std::sregex_iterator it(line.begin(), line.end(), kMemory), end; it != end; ++it, ++read) {
        const std::smatch& mm = *it;
        MegatronRankMemory r;
        r.rank = std::atoll(mm[1].str().c_str());
        r.after_iteration = std::atoll(mm[2].str().c_str());
        r.allocated_MiB = std::atof(mm[3].str().c_str());
        r.max_allocated_MiB = std::atof(mm[4].str().c_str());
        r.reserved_MiB = std::atof(mm[5].str().c_str());
        r.max_reserved_MiB = std::atof(mm[6].str().c_str());
        if (mm[7].matched) r.device_used_MiB = std::atof(mm[7].str().c_str());
        if (ranks.count(r.rank) == 0 || ranks[r.rank].after_iteration <= r.after_iteration) ranks[r.rank] = r;
      }
      if (read < reports) fail("is a malformed memory report");
    } else if (line.find("elapsed time per iteration (ms)") != std::string::npos) {
      if (!std::regex_search(line, m, kIteration)) fail("is a malformed iteration line");
      log.iteration_ms.push_back({std::atoll(m[1].str().c_str()), std::atof(m[3].str().c_str())});
      log.train_iters = std::atoll(m[2].str().c_str());
    }
  }
  line = last_line;
  if (state == before)
    throw InputError({{file, "arguments", "", "is not a Megatron-LM log: no '-- arguments --' block"}});
  if (state == inside) fail("the log ends inside the argument block (truncated)");
  if (ranks.empty())
    throw InputError(
        {{file, "memory (MB)", "", "has no per-rank memory report: run Megatron-LM with --log-memory-interval 1"}});
  if (log.iteration_ms.empty())
    throw InputError(
        {{file, "elapsed time per iteration (ms)", "", "has no iteration line: run with --log-interval 1"}});
  if (int64_t(log.iteration_ms.size()) < log.train_iters)
    fail("the log ends after " + std::to_string(log.iteration_ms.size()) + " of " + std::to_string(log.train_iters) +
         " iterations (truncated)");
  for (auto& [rank, r] : ranks) log.ranks.push_back(r);
  return log;
}

}  // namespace remat
