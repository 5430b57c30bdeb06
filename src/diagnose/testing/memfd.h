// A regular file in memory holding `data` (memfd), for fuzzers that drive a source's Read();
// the caller closes the descriptor.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <string_view>

namespace titan::diagnose::testing {

inline int MemoryFile(std::string_view data) {
  int fd = ::memfd_create("titan-diagnose-fuzz", MFD_CLOEXEC);
  if (fd < 0) return -1;
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  return fd;
}

}  // namespace titan::diagnose::testing
