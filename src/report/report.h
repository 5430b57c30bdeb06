// titan report's entry points: read titan results, build the page, write it atomically (a
// temporary file renamed into place, so no half-written report is left on error).
//
// Thread safety: pure functions over the file system.
#pragma once

#include <string>
#include <vector>

#include "src/base/status.h"
#include "src/report/input.h"

namespace titan::report {

struct Written {
  std::string path;
  size_t sections = 0, plots = 0, bytes = 0;
  std::string Summary() const;  // "wrote report.html: 3 sections, 12 plots, 210 KiB"
};

// Draws `inputs` into one page at `out`. `skipped` are files a directory held that are not
// titan results (listed on the page).
Result<Written> WriteReport(const std::vector<Input>& inputs,
                            const std::vector<std::string>& skipped, const std::string& out,
                            std::string title);

// Reads each path (a titan result file, or a directory searched for them) and writes the page.
Result<Written> WriteReportFromPaths(const std::vector<std::string>& paths, const std::string& out,
                                     std::string title);

// One result a command has in memory (`titan load --report`, `titan trace analyze --report`),
// `label` standing for its file name on the page.
Result<Written> WriteReportOf(InputKind kind, nlohmann::json doc, std::string label,
                              const std::string& out);

int ReportCommand(int argc, char** argv);  // `titan report`

}  // namespace titan::report
