// The calibrated hardware YAML: the original text, line by line, with the
// fitted efficiency entries replaced and calibrated_from set. Comments and
// every other key are kept; each replaced scalar keeps its old value and
// comment on a comment line above it.
#include <fmt/format.h>

#include <sstream>

#include "remat/spec/text.hpp"
#include "remat/validate/calibrate.hpp"

namespace remat {

namespace {

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

size_t indent_of(const std::string& line) {
  const size_t i = line.find_first_not_of(' ');
  return i == std::string::npos ? line.size() : i;
}

// "  key: value  # comment" -> true when the line sets `key` (any indent).
bool sets_key(const std::string& line, const std::string& key) {
  const size_t i = indent_of(line);
  return line.compare(i, key.size() + 1, key + ":") == 0;
}

std::string lengths_text(const std::set<int64_t>& s) {
  std::string out;
  for (int64_t v : s) out += (out.empty() ? "" : ", ") + std::to_string(v);
  return out;
}

// The list items (and a comment line first), unindented.
std::vector<std::string> gemm_lines(const Calibration& c) {
  std::vector<std::string> out;
  out.push_back(
      fmt::format("# remat calibrate: remat-bench GEMM kernels (cuBLASLt bf16) at s = {}, grouped by "
                  "FLOPs per call; fraction of {:.0f} TFLOP/s",
                  lengths_text(c.fit_lengths), c.after.peak_bf16_flops / 1e12));
  for (const auto& p : c.after.efficiency.gemm_by_flops)
    out.push_back(fmt::format("- {{flops: {:.3e}, fraction: {:.3f}}}   # {:.0f} TFLOP/s", p.flops, p.fraction,
                              p.fraction * c.after.peak_bf16_flops / 1e12));
  return out;
}

std::vector<std::string> attention_lines(const Calibration& c) {
  std::vector<std::string> out;
  out.push_back(
      fmt::format("# remat calibrate: remat-bench cuDNN flash kernels at s = {}; fractions of {:.0f} "
                  "TFLOP/s, interpolated in log2(seq)",
                  lengths_text(c.fit_lengths), c.after.peak_bf16_flops / 1e12));
  for (const auto& p : c.after.efficiency.attention_by_seq)
    out.push_back(fmt::format("- {{seq: {:.0f}, fwd: {:.3f}, bwd: {:.3f}}}", p.seq, p.fwd, p.bwd));
  return out;
}

// Appends `key:` and the list lines under it; skips the original list after lines[i].
void replace_list(std::vector<std::string>& out, const std::vector<std::string>& lines, size_t& i,
                  const std::vector<std::string>& items) {
  out.push_back(lines[i]);
  const size_t list_indent = indent_of(lines[i]) + 2;
  while (i + 1 < lines.size() && (lines[i + 1].empty() || indent_of(lines[i + 1]) >= list_indent)) ++i;
  for (const auto& item : items) out.push_back(std::string(list_indent, ' ') + item);
}

const FitNote* note_for(const Calibration& c, const std::string& entry) {
  for (const auto& n : c.notes)
    if (n.entry == entry) return &n;
  return nullptr;
}

// Replaces `key: value # comment` by the fitted value; the old line becomes a comment.
void replace_scalar(std::vector<std::string>& out, const std::string& line, const FitNote& n) {
  const std::string pad(indent_of(line), ' ');
  const std::string before = pad + "# before calibration: ";
  // A file calibrated before keeps its first "before" line (the uncalibrated value).
  const bool have_before = !out.empty() && out.back().rfind(before + n.entry + ":", 0) == 0;
  if (!have_before) out.push_back(before + line.substr(pad.size()));
  out.push_back(pad +
                fmt::format("{}: {:.3f}   # remat calibrate: {} ({} samples)", n.entry, n.after, n.how, n.samples));
}

}  // namespace

std::string calibrated_hardware_yaml(const std::string& original, const Calibration& c, const std::string& source) {
  const std::vector<std::string> lines = split_lines(original);
  std::vector<std::string> out;
  bool have_source_key = false;
  bool have_attention_points = false;
  for (const auto& line : lines) have_attention_points = have_attention_points || sets_key(line, "attention_by_seq");
  const std::vector<std::string> attention_items = attention_lines(c);
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    if (indent_of(line) == 0 && sets_key(line, "calibrated_from")) {
      out.push_back("calibrated_from: " + yaml_double_quoted(source));
      have_source_key = true;
      continue;
    }
    if (sets_key(line, "gemm_by_flops")) {
      replace_list(out, lines, i, gemm_lines(c));
      continue;
    }
    if (sets_key(line, "attention_by_seq")) {
      replace_list(out, lines, i, attention_items);
      continue;
    }
    const FitNote* n = nullptr;
    for (const char* key : {"attention_fwd", "attention_bwd", "memory_bound", "host_link"})
      if (indent_of(line) > 0 && sets_key(line, key)) n = note_for(c, key);
    if (n) {
      replace_scalar(out, line, *n);
      if (n->entry == "attention_bwd" && !have_attention_points && !c.after.efficiency.attention_by_seq.empty()) {
        const std::string pad(indent_of(line), ' ');
        out.push_back(pad + "attention_by_seq:");
        for (const auto& item : attention_items) out.push_back(pad + "  " + item);
      }
      continue;
    }
    out.push_back(line);
    if (!have_source_key && indent_of(line) == 0 && sets_key(line, "source")) {
      out.push_back("calibrated_from: " + yaml_double_quoted(source));
      have_source_key = true;
    }
  }
  std::string text;
  for (const auto& l : out) text += l + "\n";
  if (!have_source_key) text += "calibrated_from: " + yaml_double_quoted(source) + "\n";
  return text;
}

}  // namespace remat
