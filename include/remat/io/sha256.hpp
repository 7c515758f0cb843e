#pragma once
#include <string>

namespace remat {
// Hex SHA-256 of `data` (FIPS 180-4), for the report's input digests.
std::string sha256_hex(const std::string& data);
}  // namespace remat
