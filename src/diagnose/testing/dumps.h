// Test helpers: Flight Recorder dumps in the documented format (PyTorch's flight recorder
// tutorial: {"version", "pg_config", "pg_status", "entries"}), pickled as torch's C++ pickler
// does, and temporary files. Debian's torch 1.13 has no Flight Recorder, so no real dump can be
// produced on this machine.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "src/diagnose/testing/pickle_writer.h"

namespace titan::diagnose::testing {

struct DumpEntry {
  int64_t seq;
  std::string op = "nccl:all_reduce";
  int64_t size = 4;  // input_sizes [[3, size]]
  std::string state = "completed";
  std::string pg = "0";
  int64_t time_ns = 1'724'779'239'000'000'000;
};

// One rank's dump; `ranks` is process group "0"'s configuration ("[0, 1, ...]").
inline std::string FlightRecorderPickle(const std::vector<DumpEntry>& entries, int world) {
  PickleWriter w;
  w.EmptyDict().Mark();
  w.Str("version").Str("2.5");
  std::string ranks = "[";
  for (int r = 0; r < world; ++r) ranks += (r ? ", " : "") + std::to_string(r);
  ranks += "]";
  w.Str("pg_config").EmptyDict().Mark();
  w.Str("0")
      .EmptyDict()
      .Mark()
      .Str("name")
      .Str("0")
      .Str("desc")
      .Str("default_pg")
      .Str("ranks")
      .Str(ranks)
      .SetItems();
  w.SetItems();
  w.Str("entries").EmptyList().Mark();
  int64_t id = 0;
  for (const DumpEntry& e : entries) {
    w.EmptyDict().Mark();
    w.Str("record_id").Int(id++);
    w.Str("pg_id").Int(0);
    w.Str("process_group").Str(e.pg).Str("default_pg").Tuple2();
    w.Str("collective_seq_id").Int(e.seq);
    w.Str("p2p_seq_id").Int(0);
    w.Str("profiling_name").Str(e.op);
    w.Str("time_created_ns").Int(e.time_ns + e.seq);
    w.Str("input_sizes").EmptyList().Mark().IntList(3, e.size).Appends();
    w.Str("input_dtypes").EmptyList().Mark().Str("Float").Appends();
    w.Str("state").Str(e.state);
    w.Str("is_p2p").Bool(false);
    w.Str("timeout_ms").Int(600000);
    w.Str("frames").EmptyList().Mark();
    w.EmptyDict()
        .Mark()
        .Str("name")
        .Str("all_reduce")
        .Str("filename")
        .Str("/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py")
        .Str("line")
        .Int(2696)
        .SetItems();
    w.EmptyDict()
        .Mark()
        .Str("name")
        .Str("step")
        .Str("filename")
        .Str("/job/train.py")
        .Str("line")
        .Int(44)
        .SetItems();
    w.Appends();
    w.SetItems();
  }
  w.Appends();
  w.SetItems();
  w.Stop();
  return w.bytes();
}

// A directory removed with its contents at the end of the test.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/titan-diagnose-test-XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }
  std::string Write(const std::string& name, const std::string& content) const {
    const std::string p = path_ + "/" + name;
    std::filesystem::create_directories(std::filesystem::path(p).parent_path());
    FILE* f = std::fopen(p.c_str(), "wb");
    std::fwrite(content.data(), 1, content.size(), f);
    std::fclose(f);
    return p;
  }

 private:
  std::string path_;
};

}  // namespace titan::diagnose::testing
