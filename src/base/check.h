// TITAN_CHECK: asserts an invariant of titan's own code (never user input, DESIGN.md rule 2).
// On failure prints file:line, the condition and any streamed message to stderr, then aborts.
// Always on, also in release builds: a broken invariant must not run on silently.
#pragma once

#include <sstream>

namespace titan::internal {

class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const char* condition);
  [[noreturn]] ~CheckFailure();
  template <typename T>
  CheckFailure& operator<<(const T& value) {
    stream_ << value;
    return *this;
  }

 private:
  std::ostringstream stream_;
};

// Lets `TITAN_CHECK(c) << x;` type-check as a void expression.
struct Voidify {
  void operator&(const CheckFailure&) {}
};

}  // namespace titan::internal

#define TITAN_CHECK(condition)                 \
  (condition) ? (void)0                        \
              : ::titan::internal::Voidify() & \
                    ::titan::internal::CheckFailure(__FILE__, __LINE__, #condition)
