// One checked, atomic way to write a whole file: the content goes to a temporary file beside
// `path` (unique per process and call), every write is checked (a full disk is an error, not a
// truncated file reported as success), and only a complete file is renamed over `path`. On any
// error the temporary file is removed and `path` keeps its previous content. A symbolic link
// is followed (the link stays, its target gets the content); a path that is not a regular file
// (/dev/null, a FIFO, a socket) is written in place, since renaming over it would replace the
// node with a file; a directory is an error.
//
// Thread safety: safe from any thread; concurrent writers of one path: the last rename wins.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/status.h"

namespace titan {

// "-" writes to standard output instead (not atomic, still checked).
Status WriteFileAtomically(const std::string& path, std::string_view content);

// INVALID_ARGUMENT when `output` (the value of flag `flag`, e.g. "-o") is the same file as one
// of `inputs` (the same inode, through any path or link): writing it would destroy an input.
Status RefuseOutputThatIsAnInput(const std::string& output, const std::vector<std::string>& inputs,
                                 std::string_view flag);

// A command's output files, each named by the flag that gave it ("--json"); an empty path or "-"
// (standard output) is skipped.
struct OutputFlag {
  std::string_view flag;
  std::string path;
};
// INVALID_ARGUMENT when an output is the same file as one of `inputs` (as above), or two outputs
// name the same file (compared after resolving links and "..", so it works before they exist).
Status RefuseClashingOutputs(const std::vector<OutputFlag>& outputs,
                             const std::vector<std::string>& inputs);

// The same for output written piece by piece (a merged trace of gigabytes): Open() creates the
// temporary file, file() is its stdio stream, Commit() checks every write, flushes, syncs and
// renames it over `path`. Destroyed without a successful Commit(), the temporary file is removed
// and `path` is untouched. Not for "-". Thread safety: one thread per writer.
class AtomicFileWriter {
 public:
  AtomicFileWriter() = default;
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;
  ~AtomicFileWriter();

  Status Open(const std::string& path);
  FILE* file() const { return file_; }
  Status Commit();

 private:
  std::string path_, tmp_;
  bool in_place_ = false;  // a device, FIFO or socket: written directly, no rename
  FILE* file_ = nullptr;
};

}  // namespace titan
