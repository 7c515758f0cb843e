#pragma once
// Reading an input file whole, with a size cap: a spec, a config.json, a log
// or a measurements file larger than its cap is refused before it is read.
#include <cstdint>
#include <string>

namespace remat {

inline constexpr uint64_t kMaxSpecFileBytes = 16ull << 20;  // a model or hardware YAML, a config.json
inline constexpr uint64_t kMaxLogFileBytes = 64ull << 20;   // a Megatron-LM log, an HF run log, measurements

// The size of the regular file at `path`; throws InputError (file, "(file)")
// when it is not a regular file (a FIFO, a device, /dev/stdin on a pipe) or
// is larger than max_bytes.
uint64_t checked_file_size(const std::string& path, const std::string& flag, uint64_t max_bytes);

// The file's bytes; throws InputError when it is missing ("cannot be read"),
// not a regular file, larger than max_bytes or unreadable.
std::string read_input_file(const std::string& path, const std::string& flag, uint64_t max_bytes);

}  // namespace remat
