#pragma once
// Reading an input file whole, with a size cap: a spec, a config.json, a log
// or a measurements file larger than its cap is refused before it is read.
#include <cstdint>
#include <string>

namespace remat {

// Caps with room over the largest real file (a config.json of 16 KB, the
// measurements of 3.2 MB, a Megatron-LM log of 90 KB): a parser's memory grows
// with its input (yaml-cpp's about 250 bytes per byte of a list of small
// items), so the caps keep a hostile file to seconds and a few hundred MB.
inline constexpr uint64_t kMaxSpecFileBytes = 4ull << 20;       // a config.json (and a spec file, before the next cap)
inline constexpr uint64_t kMaxYamlBytes = 256ull << 10;         // a model or hardware YAML
inline constexpr uint64_t kMaxMeasurementsBytes = 16ull << 20;  // remat-bench's measurements JSON
inline constexpr uint64_t kMaxLogFileBytes = 64ull << 20;       // a Megatron-LM log, an HF run log (read line by line)

// The size of the regular file at `path`; throws InputError (file, "(file)")
// when it is not a regular file (a FIFO, a device, /dev/stdin on a pipe) or
// is larger than max_bytes.
uint64_t checked_file_size(const std::string& path, const std::string& flag, uint64_t max_bytes);

// The file's bytes; throws InputError when it is missing ("cannot be read"),
// not a regular file, larger than max_bytes or unreadable.
std::string read_input_file(const std::string& path, const std::string& flag, uint64_t max_bytes);

// "256 KiB", "64 MiB": a cap as the messages name it.
std::string size_text(uint64_t bytes);

}  // namespace remat
