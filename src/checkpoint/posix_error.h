// The Status for a failed POSIX call on a checkpoint path: "<op> <path>: <strerror>", with a
// full file system (ENOSPC, EDQUOT, EFBIG) as RESOURCE_EXHAUSTED and a hint on what to do.
#pragma once

#include <string>
#include <string_view>

#include "src/base/status.h"

namespace titan::checkpoint {

Status PathError(int err, std::string_view op, const std::string& full_path);

}  // namespace titan::checkpoint
