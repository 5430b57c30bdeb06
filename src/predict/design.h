// Covariates from attributes: each --by KEY becomes a factor with treatment coding, as R's
// model.matrix does for a character column: levels sorted (byte order), the first is the
// reference, one 0/1 column "KEY=level" for each other level. A record without the attribute
// gets the level "NA" (its own column), so nothing is dropped silently.
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "src/fleet/history.h"

namespace titan::predict {

struct Factor {
  std::string key;
  std::vector<std::string> levels;  // sorted; levels[0] is the reference
};

struct Design {
  std::vector<Factor> factors;
  std::vector<std::string> columns;  // "cage=1", ...
  int p() const { return static_cast<int>(columns.size()); }
  // Appends one row's columns for `attributes` to *x.
  void AppendRow(const fleet::Attributes& attributes, std::vector<double>* x) const;
  // The level of each factor for `attributes` ("NA" when absent), joined "cage=1,node=2".
  std::string GroupName(const fleet::Attributes& attributes) const;
};

// The factors' levels as found in `rows`.
Design MakeDesign(const std::vector<std::string>& keys,
                  const std::vector<const fleet::Attributes*>& rows);

}  // namespace titan::predict
