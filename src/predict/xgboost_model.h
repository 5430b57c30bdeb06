// xgboost_cox: gradient-boosted trees on the landmark features with XGBoost's `survival:cox`
// objective (Debian's libxgboost). XGBoost gives relative risks exp(margin); a probability needs
// a baseline, so Fit estimates Breslow's H0(h) from the training rows' risks:
// P = 1 - exp(-H0(h) * exp(margin)). The booster is kept in the model file as XGBoost's own
// JSON model text.
// Thread safety: see RiskModel (XGBoost's predict is thread-safe on a fitted booster).
#pragma once

#include <memory>

#include "src/predict/models.h"

namespace titan::predict {

std::unique_ptr<RiskModel> MakeXgboostCox();

}  // namespace titan::predict
