// Interval arithmetic on [begin, end) nanosecond intervals: unions, lengths, intersections.
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <vector>

namespace titan::trace {

struct Interval {
  int64_t begin_ns = 0;
  int64_t end_ns = 0;
  int64_t length_ns() const { return end_ns - begin_ns; }
};

// Sorts and merges overlapping or touching intervals; empty or inverted ones are dropped.
std::vector<Interval> Union(std::vector<Interval> intervals);
// Total length of a union (as returned by Union).
int64_t TotalLength(const std::vector<Interval>& merged);
// Length of the intersection of two unions.
int64_t IntersectionLength(const std::vector<Interval>& a, const std::vector<Interval>& b);
// Parts of `a` not covered by `b` (both unions).
std::vector<Interval> Subtract(const std::vector<Interval>& a, const std::vector<Interval>& b);
// The union clipped to [begin, end).
std::vector<Interval> Clip(const std::vector<Interval>& merged, int64_t begin_ns, int64_t end_ns);

}  // namespace titan::trace
