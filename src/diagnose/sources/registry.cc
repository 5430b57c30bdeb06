// The one list of log sources, in the order ties are broken (most specific first).
#include "src/diagnose/sources/source.h"

namespace titan::diagnose {

const std::vector<const LogSource*>& LogSources() {
  static const std::vector<const LogSource*> list = {
      NewTitanSummarySource(), NewTitanEventsSource(), NewFlightRecorderSource(),
      NewRasJsonSource(),      NewK8sEventsSource(),   NewRasTextSource(),
      NewTextSource(),
  };
  return list;
}

}  // namespace titan::diagnose
