#pragma once
// Text from files and the command line is bytes: these make it printable
// (terminal, one-line errors) and valid UTF-8 (JSON reports) without losing
// what the bytes were.
#include <string>
#include <string_view>

namespace remat {

// The length of the valid UTF-8 sequence at s[at] (1 to 4), 0 when the bytes
// there are not one (a stray continuation byte, an overlong form, a surrogate, a
// cut sequence).
size_t utf8_sequence_length(std::string_view s, size_t at);

bool is_valid_utf8(std::string_view s);

// Control characters and bytes that are not UTF-8 written as \n, \r, \t or
// \xNN; with keep_newlines, '\n' stays (a table of several lines).
std::string escape_text(std::string_view s, bool keep_newlines = false);

// s as a YAML double-quoted scalar: '"', '\\' and control characters
// escaped, so that a file name with a quote writes YAML that loads.
std::string yaml_double_quoted(std::string_view s);

// True when s holds a control character or a byte that is not UTF-8.
bool needs_escaping(std::string_view s);

}  // namespace remat
