// The page's inlined assets, compiled into titan at build time by embed_assets.cmake: uPlot
// (from npm, scripts/uplot.sh) and titan's own renderer and style (src/report/assets/).
#pragma once

#include <string_view>

namespace titan::report::assets {

std::string_view UplotJs();    // uPlot.iife.min.js
std::string_view UplotCss();   // uPlot.min.css
std::string_view ReportJs();   // assets/report.js
std::string_view ReportCss();  // assets/report.css

}  // namespace titan::report::assets
