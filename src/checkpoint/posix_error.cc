#include "src/checkpoint/posix_error.h"

#include <cerrno>

#include <fmt/format.h>

namespace titan::checkpoint {

Status PathError(int err, std::string_view op, const std::string& full_path) {
  Status status = ErrnoError(err, fmt::format("{} {}", op, full_path));
  if (err == ENOSPC || err == EDQUOT || err == EFBIG) {
    return ResourceExhaustedError(fmt::format(
        "{}: the file system is full (or a file size limit was hit); free space or point the "
        "checkpoint directory elsewhere",
        status.message()));
  }
  return status;
}

}  // namespace titan::checkpoint
