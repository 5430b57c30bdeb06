// Ends a paginated listing (S3 ListObjectsV2 and ListMultipartUploads, Kubernetes lists) that a
// server would never let end. A listing pages through a store with continuation tokens; a
// server that cycles them (A, B, A, B on empty pages) or always answers "more" turned
// `titan ckpt ls` into 911 LISTs in 40 s and `titan k8s controller` into 26,144 in 12 s.
//
// The guard fails the listing when a continuation token comes back that this listing already
// used (a cycle: it would repeat forever), after `max_empty_pages` consecutive pages without a
// single entry (a large listing has full pages, so this bounds only a server that makes no
// progress; total pages are not capped), or once the listing outlives `deadline_ns`. The
// errors name the listing and what the server did.
//
// Memory: 8 bytes per page (a hash of each token). Thread safety: one listing's, not shared.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_set>

#include "src/base/status.h"

namespace titan {

struct ListingLimits {
  int max_empty_pages = 32;
  int64_t deadline_ns = 600'000'000'000;  // 10 min
  size_t max_token_bytes = 64 << 10;
};

class ListingGuard {
 public:
  // `what`: the listing, for messages ("LIST s3://ckpt/run/").
  ListingGuard(std::string what, ListingLimits limits);

  // After each page: how many entries it had and the token for the next page ("" when the
  // listing is complete). OK: go on (or done); UNAVAILABLE when the server made the listing
  // endless (the caller may retry it later); DEADLINE_EXCEEDED past the deadline.
  Status Next(size_t entries, std::string_view next_token);
  // Before each page: DEADLINE_EXCEEDED once the deadline passed.
  Status CheckDeadline() const;
  int64_t deadline_mono_ns() const { return deadline_mono_ns_; }
  int pages() const { return pages_; }

 private:
  const std::string what_;
  const ListingLimits limits_;
  const int64_t deadline_mono_ns_;
  std::unordered_set<size_t> seen_;  // hashes of the tokens used so far
  int pages_ = 0;
  int empty_pages_ = 0;  // consecutive
};

}  // namespace titan
