#include "src/predict/design.h"

#include <algorithm>
#include <set>

namespace titan::predict {

namespace {
const std::string kMissing = "NA";
const std::string& LevelOf(const fleet::Attributes& a, const std::string& key) {
  const std::string* v = fleet::FindAttribute(a, key);
  return v ? *v : kMissing;
}
}  // namespace

Design MakeDesign(const std::vector<std::string>& keys,
                  const std::vector<const fleet::Attributes*>& rows) {
  Design d;
  for (const std::string& key : keys) {
    std::set<std::string> levels;
    for (const fleet::Attributes* a : rows) levels.insert(LevelOf(*a, key));
    Factor f{key, std::vector<std::string>(levels.begin(), levels.end())};
    for (size_t i = 1; i < f.levels.size(); ++i) d.columns.push_back(key + "=" + f.levels[i]);
    d.factors.push_back(std::move(f));
  }
  return d;
}

void Design::AppendRow(const fleet::Attributes& attributes, std::vector<double>* x) const {
  for (const Factor& f : factors) {
    const std::string& level = LevelOf(attributes, f.key);
    for (size_t i = 1; i < f.levels.size(); ++i) x->push_back(f.levels[i] == level ? 1.0 : 0.0);
  }
}

std::string Design::GroupName(const fleet::Attributes& attributes) const {
  std::string out;
  for (const Factor& f : factors) {
    if (!out.empty()) out += ',';
    out += f.key + "=" + LevelOf(attributes, f.key);
  }
  return out.empty() ? "all" : out;
}

}  // namespace titan::predict
