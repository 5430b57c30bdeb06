// Scores titan diagnose on the real incidents in ../shared/data/logs/cases (or the directory in
// TITAN_DIAGNOSE_CASES: the kept-back cases are scored the same way): for each case, the primary
// incident's class, its culprit (each of rank, node and GPU must equal the label's, null where
// the label is null; GPUs compared in PCI normal form), its root line (exactly, whitespace
// included), its action, and the symptom lines (each must be reported and not as the primary
// root: in an incident's symptoms, or as the root of a lesser incident). Prints each case, a
// table per class and the confusion matrix; fails below the targets (class >= 85%, root
// line >= 75%). Under CI=true a missing ../shared is a failure, elsewhere a skip.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "src/diagnose/diagnose.h"

namespace titan::diagnose {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string CasesDir() {
  if (const char* dir = std::getenv("TITAN_DIAGNOSE_CASES"); dir != nullptr && *dir != '\0') {
    return dir;
  }
  return std::string(TITAN_SOURCE_DIR) + "/../shared/data/logs/cases";
}

struct Score {
  int n = 0, fault = 0, culprit = 0, root = 0, action = 0, symptoms = 0;
};

double Pct(int a, int n) { return n == 0 ? 0 : 100.0 * a / n; }

TEST(DiagnoseCasesTest, SharedIncidentsAreDiagnosedAsLabelled) {
  const std::string dir = CasesDir();
  if (!fs::is_directory(dir)) {
    const char* ci = std::getenv("CI");
    if (ci != nullptr && std::string(ci) == "true") {
      FAIL() << dir << " is missing: CI must have ../shared beside the repository";
    }
    GTEST_SKIP() << dir << " is missing (../shared beside the repository)";
  }
  std::vector<std::string> cases;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_directory() && fs::exists(e.path() / "meta.json")) cases.push_back(e.path().string());
  }
  std::sort(cases.begin(), cases.end());
  ASSERT_FALSE(cases.empty()) << "no cases in " << dir;

  Score total;
  std::map<std::string, Score> per_class;
  std::map<std::string, std::map<std::string, int>> confusion;  // label -> predicted -> n
  std::set<std::string> classes;
  std::string report;
  for (const std::string& c : cases) {
    std::ifstream meta_in(c + "/meta.json");
    json meta = json::parse(meta_in, nullptr, false);
    ASSERT_FALSE(meta.is_discarded()) << c;
    const json& label = meta.at("label");
    std::vector<std::string> files;
    for (const auto& e : fs::directory_iterator(c)) {
      if (e.is_regular_file() && e.path().filename() != "meta.json")
        files.push_back(e.path().string());
    }
    std::sort(files.begin(), files.end());
    auto d = Diagnose(files, {});
    ASSERT_TRUE(d.ok()) << c << ": " << d.status().ToString();
    const Incident* primary = d->incidents.empty() ? nullptr : &d->incidents.front();
    const std::string want_class = label.at("class").get<std::string>();
    const std::string got_class = primary ? std::string(FaultClassName(primary->fault)) : "unknown";
    const json& lc = label.at("culprit");
    Culprit want;
    want.rank = lc.at("rank").is_null() ? -1 : lc.at("rank").get<int64_t>();
    want.node = lc.at("node").is_null() ? "" : lc.at("node").get<std::string>();
    want.gpu = lc.at("gpu_pci").is_null() ? "" : NormalizePci(lc.at("gpu_pci").get<std::string>());
    const Culprit got = primary ? primary->culprit : Culprit{};
    const bool fault_ok = got_class == want_class;
    const bool culprit_ok = got == want;
    const bool root_ok =
        primary && primary->root.evidence.text == label.at("root_line").get<std::string>();
    const bool action_ok =
        primary ? ActionName(primary->action) == label.at("action").get<std::string>()
                : label.at("action") == "none";
    std::set<std::string> reported;
    for (size_t i = 0; i < d->incidents.size(); ++i) {
      for (const Finding& s : d->incidents[i].symptoms) reported.insert(s.evidence.text);
      if (i > 0) reported.insert(d->incidents[i].root.evidence.text);
    }
    bool symptoms_ok = true;
    for (const json& s : label.at("symptom_only_lines"))
      symptoms_ok &= reported.count(s.get<std::string>()) > 0;
    for (Score* s : {&total, &per_class[want_class]}) {
      ++s->n;
      s->fault += fault_ok;
      s->culprit += culprit_ok;
      s->root += root_ok;
      s->action += action_ok;
      s->symptoms += symptoms_ok;
    }
    ++confusion[want_class][got_class];
    classes.insert(want_class);
    classes.insert(got_class);
    report += fmt::format("{:<26} {}{}{}{}{}  {} -> {}{}\n", fs::path(c).filename().string(),
                          fault_ok ? 'C' : '.', culprit_ok ? 'U' : '.', root_ok ? 'R' : '.',
                          action_ok ? 'A' : '.', symptoms_ok ? 'S' : '.', want_class, got_class,
                          culprit_ok ? ""
                                     : fmt::format("  (culprit rank {} node '{}' gpu '{}')",
                                                   got.rank, got.node, got.gpu));
  }
  report += "\n(C class, U culprit, R root line, A action, S symptom lines)\n\n";
  report += fmt::format("{:<26} {:>3} {:>7} {:>8} {:>6} {:>7} {:>9}\n", "class", "n", "class%",
                        "culprit%", "root%", "action%", "symptom%");
  auto row = [&](const std::string& name, const Score& s) {
    report += fmt::format("{:<26} {:>3} {:>7.0f} {:>8.0f} {:>6.0f} {:>7.0f} {:>9.0f}\n", name, s.n,
                          Pct(s.fault, s.n), Pct(s.culprit, s.n), Pct(s.root, s.n),
                          Pct(s.action, s.n), Pct(s.symptoms, s.n));
  };
  for (const auto& [name, s] : per_class) row(name, s);
  row("all", total);
  report += "\nconfusion (rows: label, columns: diagnosed)\n";
  std::vector<std::string> cols(classes.begin(), classes.end());
  report += fmt::format("{:<27}", "");
  for (size_t i = 0; i < cols.size(); ++i) report += fmt::format(" {:>3}", i + 1);
  report += "\n";
  for (size_t r = 0; r < cols.size(); ++r) {
    report += fmt::format("{:>2} {:<24}", r + 1, cols[r]);
    for (const std::string& col : cols) {
      int n =
          confusion.count(cols[r]) && confusion[cols[r]].count(col) ? confusion[cols[r]][col] : 0;
      report += fmt::format(" {:>3}", n == 0 ? std::string(".") : std::to_string(n));
    }
    report += "\n";
  }
  std::printf("%s", report.c_str());
  EXPECT_GE(Pct(total.fault, total.n), 85.0) << "class accuracy below the target";
  EXPECT_GE(Pct(total.root, total.n), 75.0) << "root-line accuracy below the target";
}

}  // namespace
}  // namespace titan::diagnose
