// `titan diagnose --summarize` output (summary.h): read back as the files it summarised.
#include <nlohmann/json.hpp>

#include "src/base/json_depth.h"
#include "src/diagnose/sources/source.h"
#include "src/diagnose/summary.h"

namespace titan::diagnose {
namespace {

class TitanSummarySource final : public LogSource {
 public:
  std::string_view name() const override { return "titan_summary"; }
  int Sniff(const FileHead& head) const override {
    return head.bytes.starts_with("{\"titan_diagnose_summary\":") ? 100 : 0;
  }
  Status Read(int fd, const FileHead& head, const ReadLimits& limits,
              SourceOutput* out) const override {
    const std::string path(head.path);
    TITAN_ASSIGN_OR_RETURN(std::string data, ReadDocument(fd, head, limits, "titan_summary", out));
    TITAN_ASSIGN_OR_RETURN(nlohmann::json doc,
                           ParseJsonDocument(data, path, "a titan diagnose summary"));
    TITAN_ASSIGN_OR_RETURN(out->summarized, ReadSummary(doc, path));
    return OkStatus();
  }
};

}  // namespace

const LogSource* NewTitanSummarySource() {
  static const TitanSummarySource source;
  return &source;
}

}  // namespace titan::diagnose
