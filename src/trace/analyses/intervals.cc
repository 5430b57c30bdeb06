#include "src/trace/analyses/intervals.h"

#include <algorithm>

namespace titan::trace {

std::vector<Interval> Union(std::vector<Interval> in) {
  std::erase_if(in, [](const Interval& i) { return i.end_ns <= i.begin_ns; });
  auto earlier = [](const Interval& a, const Interval& b) { return a.begin_ns < b.begin_ns; };
  // Mostly in order already; the order of ties does not change the union.
  if (!std::is_sorted(in.begin(), in.end(), earlier)) std::sort(in.begin(), in.end(), earlier);
  std::vector<Interval> out;
  for (const Interval& i : in) {
    if (!out.empty() && i.begin_ns <= out.back().end_ns) {
      out.back().end_ns = std::max(out.back().end_ns, i.end_ns);
    } else {
      out.push_back(i);
    }
  }
  return out;
}

int64_t TotalLength(const std::vector<Interval>& merged) {
  int64_t total = 0;
  for (const Interval& i : merged) total += i.length_ns();
  return total;
}

int64_t IntersectionLength(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  int64_t total = 0;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    int64_t lo = std::max(a[i].begin_ns, b[j].begin_ns);
    int64_t hi = std::min(a[i].end_ns, b[j].end_ns);
    if (hi > lo) total += hi - lo;
    if (a[i].end_ns < b[j].end_ns) {
      ++i;
    } else {
      ++j;
    }
  }
  return total;
}

std::vector<Interval> Subtract(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  std::vector<Interval> out;
  size_t j = 0;
  for (Interval cur : a) {
    while (j < b.size() && b[j].end_ns <= cur.begin_ns) ++j;
    size_t k = j;
    while (k < b.size() && b[k].begin_ns < cur.end_ns) {
      if (b[k].begin_ns > cur.begin_ns) out.push_back({cur.begin_ns, b[k].begin_ns});
      cur.begin_ns = std::max(cur.begin_ns, b[k].end_ns);
      if (cur.begin_ns >= cur.end_ns) break;
      ++k;
    }
    if (cur.begin_ns < cur.end_ns) out.push_back(cur);
  }
  return out;
}

std::vector<Interval> Clip(const std::vector<Interval>& merged, int64_t begin_ns, int64_t end_ns) {
  std::vector<Interval> out;
  for (const Interval& i : merged) {
    int64_t lo = std::max(i.begin_ns, begin_ns), hi = std::min(i.end_ns, end_ns);
    if (hi > lo) out.push_back({lo, hi});
  }
  return out;
}

}  // namespace titan::trace
