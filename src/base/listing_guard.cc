#include "src/base/listing_guard.h"

#include <functional>

#include <fmt/format.h>

#include "src/base/clock.h"
#include "src/base/duration.h"
#include "src/base/text.h"

namespace titan {

ListingGuard::ListingGuard(std::string what, ListingLimits limits)
    : what_(std::move(what)),
      limits_(limits),
      deadline_mono_ns_(MonoNowNs() + limits.deadline_ns) {}

Status ListingGuard::CheckDeadline() const {
  if (MonoNowNs() <= deadline_mono_ns_) return OkStatus();
  return DeadlineExceededError(fmt::format(
      "{}: the listing did not end within {} ({} pages); the store is too slow or keeps "
      "answering that more follows",
      what_, FormatDurationShort(limits_.deadline_ns), pages_));
}

Status ListingGuard::Next(size_t entries, std::string_view next_token) {
  ++pages_;
  empty_pages_ = entries == 0 ? empty_pages_ + 1 : 0;
  if (next_token.empty()) return OkStatus();
  if (next_token.size() > limits_.max_token_bytes) {
    return UnavailableError(fmt::format(
        "{}: page {} ends with a continuation token of {} bytes (at most {}): not a store's token",
        what_, pages_, next_token.size(), limits_.max_token_bytes));
  }
  if (!seen_.insert(std::hash<std::string_view>()(next_token)).second) {
    return UnavailableError(fmt::format(
        "{}: page {} asks to continue from token '{}', which this listing already followed: the "
        "server's pages go round in a cycle and the listing would never end",
        what_, pages_, RemoteText(next_token, 80)));
  }
  if (empty_pages_ > limits_.max_empty_pages) {
    return UnavailableError(fmt::format(
        "{}: {} pages in a row held no entry but said more follows: the server makes no progress",
        what_, empty_pages_));
  }
  return CheckDeadline();
}

}  // namespace titan
