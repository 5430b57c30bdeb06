// Allocation-free helpers for parsing line- and field-oriented text such as /proc files.
// All functions are pure and thread-safe. They never throw and never read out of bounds;
// malformed numbers return false rather than guessing.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace titan {

// Parses a whole field as a base-10 integer / floating number. Rejects empty input, trailing
// garbage and overflow.
bool ParseInt64(std::string_view text, int64_t* out);
bool ParseUint64(std::string_view text, uint64_t* out);
bool ParseDouble(std::string_view text, double* out);

// Returns the next line of `*rest` (without '\n') and advances `*rest` past it.
// Precondition: !rest->empty().
std::string_view NextLine(std::string_view* rest);

// Returns the next whitespace-separated field of `*rest` (spaces and tabs), or "" when none is
// left, and advances `*rest` past it.
std::string_view NextField(std::string_view* rest);

// Strips ASCII whitespace at both ends.
std::string_view Trim(std::string_view text);

// "512 B", "1.5 KiB", "1.0 GiB" (binary units, one decimal), for people.
std::string FormatBytes(uint64_t bytes);

// `text` for an error message: whole when at most `max_bytes` long, else its first `max_bytes`
// bytes (not cutting a UTF-8 sequence) and "... (N bytes)", so that a hostile megabyte value
// is not echoed whole.
std::string Excerpt(std::string_view text, size_t max_bytes = 80);

// Text a remote peer sent (an error body, a server's message, a key it listed), made safe to
// show: at most `max_bytes` of it are kept (not cutting a UTF-8 sequence; "... (N bytes)"
// follows when cut), and control bytes, bytes that are not UTF-8, C1 controls and the
// characters that reorder or hide text (U+2028/9, bidi overrides) are written as \xNN or
// \uNNNN escapes, so that a hostile server cannot move the cursor, recolour the terminal or
// hide what follows. Printable ASCII and other valid UTF-8 pass unchanged.
std::string RemoteText(std::string_view text, size_t max_bytes = 200);

// Appends `text` to *out as a JSON string literal (quotes included): ", \ and control bytes
// escaped, bytes >= 0x80 passed through unchanged (so valid UTF-8 stays valid).
void AppendJsonString(std::string_view text, std::string* out);

}  // namespace titan
