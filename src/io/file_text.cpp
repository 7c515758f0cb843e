#include "remat/io/file_text.hpp"

#include <filesystem>
#include <fstream>

#include "remat/spec/problems.hpp"

namespace remat {

std::string size_text(uint64_t bytes) {
  if (bytes % (1ull << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  if (bytes % (1ull << 10) == 0) return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + " bytes";
}

uint64_t checked_file_size(const std::string& path, const std::string& flag, uint64_t max_bytes) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) throw InputError({{path, flag, path, "cannot be read"}});
  if (fs::is_directory(st)) throw InputError({{"command line", flag, path, "is a directory, not a file"}});
  if (!fs::is_regular_file(st))
    throw InputError({{"command line", flag, path,
                       "is not a regular file (a FIFO, device or socket): remat reads its inputs from files"}});
  const uint64_t size = fs::file_size(path, ec);
  if (ec) throw InputError({{path, flag, path, "cannot be read"}});
  if (size > max_bytes)
    throw InputError({{path, "(file)", std::to_string(size) + " bytes",
                       "is larger than the " + size_text(max_bytes) + " remat reads for " + flag}});
  return size;
}

std::string read_input_file(const std::string& path, const std::string& flag, uint64_t max_bytes) {
  const uint64_t size = checked_file_size(path, flag, max_bytes);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError({{path, flag, path, "cannot be read"}});
  std::string text(size, '\0');
  in.read(text.data(), std::streamsize(size));
  if (uint64_t(in.gcount()) != size) throw InputError({{path, flag, path, "cannot be read"}});
  return text;
}

}  // namespace remat
