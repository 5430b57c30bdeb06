// A Diagnosis for machines and for people.
//
// JSON (`titan diagnose --json FILE`):
//   {"kind": "titan.diagnose",
//    "incidents": [ {"class", "action", "culprit": {"rank", "node", "gpu"},
//                    "root": {"file", "line", "text", "time"}, "symptoms": [ same shape,
//                    and "rank" where the line names one ],
//                    "confidence", "why", "rule", "symptoms_total", "xid", "collective",
//                    "escalated", "escalation", "first", "last"} ],   the primary first
//    "files": [ {"path", "kind", "bytes", "bytes_read", "lines", "findings", "notes", "error"} ],
//    "notes": [...]}
// Unknown values are null: a culprit field the logs do not decide, a line number where the
// middle of a huge file was skipped, a time a line does not carry. "gpu" is a PCI address in
// the normal form 0000:a1:00.0.
//
// Text: the primary incident first, each in a few lines (class -> action, culprit, the root
// line with its file:line and time, what it means, how many symptoms and the first of them),
// then one line per file.
//
// Thread safety: pure functions.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "src/diagnose/diagnose.h"

namespace titan::diagnose {

nlohmann::json DiagnosisJson(const Diagnosis& d);
nlohmann::json IncidentJson(const Incident& inc);
nlohmann::json EvidenceJson(const Evidence& e);
nlohmann::json CulpritJson(const Culprit& c);

// `color`: ANSI emphasis for a terminal.
std::string DiagnosisText(const Diagnosis& d, bool color = false);
// One line: "gpu_hardware -> drain_node (node node1, GPU 0000:a1:00.0): Xid 79 ... [0.85]".
std::string IncidentLine(const Incident& inc);

}  // namespace titan::diagnose
