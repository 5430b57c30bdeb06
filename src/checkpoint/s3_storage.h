// Storage in an S3-compatible object store (AWS S3, Ceph RGW, MinIO), rooted at
// s3://bucket/prefix. A path "step_0000000100/MANIFEST" is the key "prefix/step_0000000100/
// MANIFEST"; a directory is a key prefix.
//
// How the Storage contract maps (docs/checkpoint.md, "Object storage"):
//   * a WritableFile buffers `part_bytes` and uploads full parts in the background, up to
//     `concurrency` at once (memory: (concurrency + 1) * part_bytes); Sync() uploads the rest,
//     completes the object and confirms it with one HEAD: the size written and the ETag of the
//     bytes sent (MD5 of the parts' MD5s, "-N"; etag.h), else DATA_LOSS (a store that completed
//     the upload with a part missing). Only then is it durable. Append after Sync is
//     FAILED_PRECONDITION. Destroying an unsynced file aborts its upload: nothing appears.
//   * WriteFileAtomic is one PUT (an object appears whole or not at all), confirmed the same
//     way (a store that answers 200 and keeps nothing is DATA_LOSS), so the commit protocol
//     needs no rename: data, then each rank's marker, then MANIFEST, then `latest`.
//   * CreateFileExclusive (the MANIFEST, commit.h) is a PUT with If-None-Match: * where the
//     store honours it (probed once per bucket with an object under the prefix, created twice
//     and deleted), else a HEAD then a PUT.
//   * CreateDir and SyncDir do nothing; Rename is UNIMPLEMENTED (the engine never renames).
//   * ReadAt is one ranged GET.
//
// Settings from the environment (besides src/s3/config.h's AWS ones): TITAN_S3_PART_MIB (5..
// 5120, default 16), TITAN_S3_CONCURRENCY (1..64 parts in flight per file, default 8), and the
// client's bounds (src/s3/client.h: TITAN_S3_MAX_ATTEMPTS, TITAN_S3_REQUEST_TIMEOUT, ...).
// Thread safety: as Storage (different paths concurrently; a WritableFile is one thread's).
#pragma once

#include <memory>
#include <string>

#include "src/base/status.h"
#include "src/checkpoint/storage.h"

namespace titan::checkpoint {

struct S3StorageOptions {
  size_t part_bytes = size_t{16} << 20;
  int concurrency = 8;
  static Result<S3StorageOptions> FromEnvironment();
};

// Opens s3://bucket/prefix: resolves credentials and endpoint, then checks that the bucket
// exists and may be listed (a wrong secret or a missing bucket fails here, naming both).
Result<std::shared_ptr<Storage>> OpenS3Storage(const std::string& url);

}  // namespace titan::checkpoint
