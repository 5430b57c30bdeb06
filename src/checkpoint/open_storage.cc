// OpenStorage: picks the backend from the location's form.
#include "src/checkpoint/s3_storage.h"
#include "src/checkpoint/storage.h"
#include "src/s3/config.h"

namespace titan::checkpoint {

Result<std::shared_ptr<Storage>> OpenStorage(const std::string& location, bool create_if_missing) {
  if (s3::IsS3Url(location)) return OpenS3Storage(location);
  return OpenPosixStorage(location, create_if_missing);
}

}  // namespace titan::checkpoint
