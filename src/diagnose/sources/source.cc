#include "src/diagnose/sources/source.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "src/base/json_depth.h"

namespace titan::diagnose {

Result<std::string> ReadWhole(int fd, int64_t size, int64_t max_bytes, std::string_view path) {
  if (size > max_bytes) {
    return OutOfRangeError(fmt::format(
        "{}: {} bytes, more than the {} bytes a document is read whole (--max-document-bytes)",
        path, size, max_bytes));
  }
  std::string out(static_cast<size_t>(size), '\0');
  size_t got = 0;
  while (got < out.size()) {
    ssize_t n = ::pread(fd, out.data() + got, out.size() - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError(errno, fmt::format("reading {}", path));
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  out.resize(got);
  return out;
}

Result<std::string> ReadDocument(int fd, const FileHead& head, const ReadLimits& limits,
                                 std::string_view kind, SourceOutput* out) {
  TITAN_ASSIGN_OR_RETURN(std::string data,
                         ReadWhole(fd, head.size, limits.max_document_bytes, head.path));
  out->file.bytes_read = static_cast<int64_t>(data.size());
  out->file.kind = std::string(kind);
  return data;
}

Result<nlohmann::json> ParseJsonDocument(std::string_view data, std::string_view path,
                                         std::string_view what) {
  TITAN_RETURN_IF_ERROR(CheckJsonDepth(data, path));
  nlohmann::json doc = nlohmann::json::parse(data, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    return InvalidArgumentError(fmt::format("{}: not valid JSON ({} was expected)", path, what));
  }
  return doc;
}

bool LooksLikeText(std::string_view bytes) {
  if (bytes.empty()) return true;
  if (std::memchr(bytes.data(), '\0', bytes.size()) != nullptr) return false;
  // Control bytes other than tab, newline, CR, ESC, form feed, backspace: a binary format.
  size_t control = 0;
  for (unsigned char c : bytes) {
    if (c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != 0x1b && c != '\f' && c != '\b') {
      ++control;
    }
  }
  return control * 100 <= bytes.size();  // at most 1%
}

int64_t CountNewlines(const char* p, size_t n) {
  // memchr is vectorised in every libc; counting byte by byte or with a software popcount (no
  // POPCNT in the baseline x86-64 build) was a tenth of diagnose's time on rank logs.
  int64_t count = 0;
  const char* const end = p + n;
  while (p < end) {
    const void* nl = std::memchr(p, '\n', static_cast<size_t>(end - p));
    if (nl == nullptr) break;
    ++count;
    p = static_cast<const char*>(nl) + 1;
  }
  return count;
}

std::string BusIdToPci(std::string_view bus_id) {
  if (bus_id.empty() || bus_id.size() > 12) return "";
  std::string id(bus_id);
  if (id.size() < 5) id.insert(0, 5 - id.size(), '0');
  // domain... | bus(2) | device(2) | function(1)
  const size_t n = id.size();
  const std::string domain = n > 5 ? id.substr(0, n - 5) : "0";
  return NormalizePci(fmt::format("{}:{}:{}.{}", domain, id.substr(n - 5, 2), id.substr(n - 3, 2),
                                  id.substr(n - 1)));
}

}  // namespace titan::diagnose
