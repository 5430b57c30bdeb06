// titan diagnose: the root cause of a failed, hung or slow job from every log it left.
//
//   Diagnose(paths) = collect files (directories recursively) -> read each with the source that
//   recognises its content (sources/source.h; on all cores) -> cross-rank Flight Recorder
//   analysis -> incidents (incidents.h) -> Diagnosis (JSON and text in report.h).
//
// Bounded whatever the input: at most `max_files` files (a directory of a million files is cut
// there, and says so), per-file limits in ReadLimits, regular files only (a FIFO or device is
// refused, never opened for a blocking read).
//
// Thread safety: Diagnose may run on several threads at once.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "src/base/status.h"
#include "src/diagnose/incidents.h"
#include "src/diagnose/sources/source.h"

namespace titan::diagnose {

struct DiagnoseOptions {
  ReadLimits limits;
  IncidentOptions incidents;
  int64_t max_files = 100'000;
  int threads = 0;  // 0: one per core
  // Called now and then while files are read (files done, files in all); may be empty.
  std::function<void(size_t, size_t)> progress;
};

struct Diagnosis {
  std::vector<Incident> incidents;  // the primary first
  std::vector<FileReport> files;
  std::vector<std::string> notes;  // about the inputs as a whole (files not read, ...)
};

// The regular files under `paths` (files as given; directories walked without following
// symbolic links), sorted per directory, at most `max_files` (notes say what was left out).
// NOT_FOUND for a path that does not exist.
Result<std::vector<std::string>> CollectInputs(const std::vector<std::string>& paths,
                                               int64_t max_files, std::vector<std::string>* notes);

// Reads one file with the source that recognises it. Never fails: what went wrong is the
// report's error or notes.
SourceOutput ReadLogFile(const std::string& path, const ReadLimits& limits);

// Incidents from files already read (in input order).
Diagnosis DiagnoseOutputs(std::vector<SourceOutput> outputs, const IncidentOptions& options);

Result<Diagnosis> Diagnose(const std::vector<std::string>& paths, const DiagnoseOptions& options);

}  // namespace titan::diagnose
