#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "src/report/fields.h"
#include "src/report/sections.h"

namespace titan::report {

std::string FormatSeconds(double seconds) {
  const double a = std::fabs(seconds);
  if (a >= 1) return fmt::format("{:.3g} s", seconds);
  if (a >= 1e-3) return fmt::format("{:.3g} ms", seconds * 1e3);
  return fmt::format("{:.3g} us", seconds * 1e6);
}

std::vector<size_t> TopIndices(const std::vector<double>& values, size_t n) {
  std::vector<size_t> order;
  for (size_t i = 0; i < values.size(); ++i) {
    if (!std::isnan(values[i])) order.push_back(i);
  }
  n = std::min(n, order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n), order.end(),
                    [&](size_t a, size_t b) { return values[a] > values[b]; });
  order.resize(n);
  return order;
}

double NumOrNaN(const nlohmann::json& value) {
  return value.is_number() ? value.get<double>() : kNaN;
}

double Percentile(std::vector<double> values, double q) {
  values.erase(std::remove_if(values.begin(), values.end(), [](double v) { return std::isnan(v); }),
               values.end());
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  q = std::clamp(q, 0.0, 1.0);
  const size_t rank = q <= 0 ? 0 : static_cast<size_t>(std::ceil(q * values.size())) - 1;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(rank),
                   values.end());
  return values[rank];
}

Result<Report> BuildReport(const std::vector<Input>& inputs,
                           const std::vector<std::string>& skipped, std::string title) {
  Report report;
  report.title = std::move(title);
  std::vector<const Input*> run_files;
  for (const Input& in : inputs) {
    if (in.kind == InputKind::kRunEvents || in.kind == InputKind::kRunLedger)
      run_files.push_back(&in);
  }
  bool runs_added = false;
  for (const Input& in : inputs) {
    try {
      switch (in.kind) {
        case InputKind::kLoadRun:
          AddLoadRun(in, &report);
          break;
        case InputKind::kLoadSweep:
          AddLoadSweep(in, &report);
          break;
        case InputKind::kTraceAnalysis:
          AddTraceAnalysis(in, &report);
          break;
        case InputKind::kSim:
          AddSim(in, &report);
          break;
        case InputKind::kGatewayEvents:
          AddGatewayLog(in, &report);
          break;
        case InputKind::kAgentDump:
          AddAgentDump(in, &report);
          break;
        case InputKind::kPredict:
          AddPredict(in, &report);
          break;
        case InputKind::kDiagnosis:
          AddDiagnosis(in, &report);
          break;
        case InputKind::kPlan:
          AddPlan(in, &report);
          break;
        case InputKind::kRunEvents:
        case InputKind::kRunLedger:
          if (!runs_added) AddRuns(run_files, &report);  // grouped by job, where the first came
          runs_added = true;
          break;
      }
    } catch (const InputError& e) {
      return InvalidArgumentError(fmt::format(
          "{}; the file has the shape of a {} but not its fields: was it truncated, edited, or "
          "written by another titan version?",
          e.what(), InputKindName(in.kind)));
    } catch (const nlohmann::json::exception& e) {
      return InvalidArgumentError(fmt::format("{} (read as a {}): unexpected JSON: {}", in.path,
                                              InputKindName(in.kind), e.what()));
    }
  }
  if (report.sections.empty()) {
    return InvalidArgumentError("no titan result to draw in the inputs");
  }
  if (!skipped.empty()) {
    Section other("Other files", "");
    std::string list;
    for (size_t i = 0; i < skipped.size() && i < 20; ++i) list += (i ? ", " : "") + skipped[i];
    if (skipped.size() > 20) list += fmt::format(", ... ({} more)", skipped.size() - 20);
    other.Text(
        fmt::format("{} JSON file(s) in the input directories are not titan results and "
                    "are not drawn: {}",
                    skipped.size(), list));
    report.sections.push_back(std::move(other));
  }
  return report;
}

}  // namespace titan::report
