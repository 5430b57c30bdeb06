#include "src/s3/etag.h"

#include <openssl/evp.h>

#include <fmt/format.h>

#include "src/base/check.h"

namespace titan::s3 {
namespace {

std::string Hex(const Md5Digest& digest) {
  std::string out;
  out.reserve(32);
  for (uint8_t b : digest) out += fmt::format("{:02x}", b);
  return out;
}

}  // namespace

Md5Digest Md5(std::string_view data) {
  Md5Digest digest{};
  unsigned int length = 0;
  TITAN_CHECK(EVP_Digest(data.data(), data.size(), digest.data(), &length, EVP_md5(), nullptr) ==
                  1 &&
              length == digest.size())
      << "EVP_Digest(MD5) failed";
  return digest;
}

std::string Md5Hex(std::string_view data) { return Hex(Md5(data)); }

std::string MultipartEtag(const std::vector<Md5Digest>& part_md5s) {
  std::string concatenated;
  concatenated.reserve(part_md5s.size() * 16);
  for (const Md5Digest& d : part_md5s) {
    concatenated.append(reinterpret_cast<const char*>(d.data()), d.size());
  }
  return fmt::format("{}-{}", Md5Hex(concatenated), part_md5s.size());
}

}  // namespace titan::s3
