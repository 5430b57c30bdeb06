// Fuzzes titan report's input side: recognising arbitrary bytes as a titan result and building
// its sections and page. Any input must give a Status or a page, never a crash, a hang or
// unbounded memory (the page grows with the input only).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "src/report/input.h"
#include "src/report/page.h"
#include "src/report/sections.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view content(reinterpret_cast<const char*>(data), size);
  titan::Result<titan::report::Input> input = titan::report::Recognise("fuzz.json", content);
  if (!input.ok()) return 0;
  std::vector<titan::report::Input> inputs;
  inputs.push_back(std::move(input).value());
  titan::Result<titan::report::Report> report = titan::report::BuildReport(inputs, {}, "fuzz");
  if (report.ok()) (void)titan::report::RenderHtml(*report, "now");
  return 0;
}
