// The ETags an S3 store gives the objects titan writes, computed from the bytes titan sent, so
// that an object can be confirmed whole with one HEAD instead of a download:
//   * one PUT: the hex MD5 of the body;
//   * a multipart upload of N parts: the hex MD5 of the concatenated binary MD5s of the parts,
//     then "-N" (what AWS S3, Ceph RGW and MinIO compute).
// A store that encrypts with a customer or KMS key computes ETags otherwise; IsMd5Etag
// (responses.h) tells such ETags apart, and the caller then confirms the size alone.
// Thread safety: pure functions; Md5Accumulator is one caller's.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace titan::s3 {

using Md5Digest = std::array<uint8_t, 16>;

Md5Digest Md5(std::string_view data);
std::string Md5Hex(std::string_view data);

// The ETag of a multipart upload of parts with these MD5s, in part order: "<hex>-N".
std::string MultipartEtag(const std::vector<Md5Digest>& part_md5s);

}  // namespace titan::s3
