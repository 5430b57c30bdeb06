#include "src/detect/mad_detector.h"

namespace titan {

MadDetector::MadDetector(const detect::ThresholdOptions& options)
    : ThresholdDetector(
          "mad", detect::CheckThresholdOptions(options, 3, detect::SortedWindow::kMaxCapacity),
          detect::SortedWindow(options.window)) {}

}  // namespace titan
