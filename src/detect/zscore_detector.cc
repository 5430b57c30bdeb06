#include "src/detect/zscore_detector.h"

namespace titan {

ZscoreDetector::ZscoreDetector(const detect::ThresholdOptions& options)
    : ThresholdDetector("zscore", detect::CheckThresholdOptions(options, 2, int64_t{1} << 40),
                        detect::RollingMeanStd(options.window)) {}

}  // namespace titan
