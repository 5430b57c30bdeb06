#include "src/supervisor/step_window.h"

#include <algorithm>

namespace titan {

void StepWindow::Add(int rank, int64_t step, int64_t duration_ns, int64_t now_ns) {
  if (opened_ns_ < 0) opened_ns_ = now_ns;
  Rank& r = ranks_[rank];
  if (r.first_step < 0) r.first_step = step;
  r.last_step = step;
  r.durations_ns.push_back(duration_ns);
}

void StepWindow::AddCompute(int rank, int64_t compute_ns, int64_t now_ns) {
  if (opened_ns_ < 0) opened_ns_ = now_ns;
  ranks_[rank].compute_ns.push_back(compute_ns);
}

nlohmann::json StepWindow::Take(int64_t now_ns) {
  nlohmann::json ranks = nlohmann::json::array();
  for (auto& [rank, r] : ranks_) {
    std::vector<int64_t>& d = r.durations_ns;
    if (d.empty()) continue;  // compute marks of a step not finished in this window
    std::sort(d.begin(), d.end());
    nlohmann::json entry = {{"rank", rank},
                            {"first_step", r.first_step},
                            {"last_step", r.last_step},
                            {"count", d.size()},
                            {"min_ms", d.front() / 1e6},
                            {"p50_ms", d[(d.size() - 1) / 2] / 1e6},
                            {"max_ms", d.back() / 1e6}};
    std::vector<int64_t>& c = r.compute_ns;
    if (!c.empty()) {
      std::sort(c.begin(), c.end());
      entry["compute_p50_ms"] = c[(c.size() - 1) / 2] / 1e6;
      entry["compute_max_ms"] = c.back() / 1e6;
    }
    ranks.push_back(std::move(entry));
  }
  nlohmann::json out = {{"window_s", (now_ns - opened_ns_) / 1e9}, {"ranks", std::move(ranks)}};
  ranks_.clear();
  opened_ns_ = -1;
  return out;
}

}  // namespace titan
