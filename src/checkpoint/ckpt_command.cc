// `titan ckpt`: inspect and maintain checkpoint directories (ls, inspect, verify, diff, gc).
// All logic is in the library (catalog.h, reader.h); this file parses flags and prints.
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "src/base/clock.h"
#include "src/base/command_line.h"
#include "src/base/text.h"
#include "src/checkpoint/catalog.h"
#include "src/checkpoint/ckpt_command.h"
#include "src/checkpoint/copy.h"
#include "src/checkpoint/layout.h"
#include "src/checkpoint/mirror.h"
#include "src/checkpoint/reader.h"
#include "src/s3/config.h"

namespace titan {
namespace {

using namespace titan::checkpoint;

struct Target {
  std::shared_ptr<Storage> storage;
  int64_t step = 0;
  std::string where;
};

std::string Time(int64_t unix_ns) {
  std::time_t t = static_cast<std::time_t>(unix_ns / 1'000'000'000);
  std::tm tm;
  gmtime_r(&t, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buffer;
}

// "DIR/step_N" names one checkpoint; a plain DIR names its latest.
Result<Target> Resolve(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  size_t slash = path.rfind('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  Target target;
  if (ParseStepDirName(base, &target.step)) {
    std::string root = slash == std::string::npos ? "." : path.substr(0, slash);
    TITAN_ASSIGN_OR_RETURN(target.storage, OpenStorage(root, false));
  } else {
    TITAN_ASSIGN_OR_RETURN(target.storage, OpenStorage(path, false));
    TITAN_ASSIGN_OR_RETURN(std::optional<int64_t> latest, LatestStep(*target.storage));
    if (!latest) {
      return NotFoundError(fmt::format("{} holds no committed checkpoint", path));
    }
    target.step = *latest;
  }
  target.where = target.storage->Describe(StepDirName(target.step));
  return target;
}

uint64_t TensorBytes(const TensorEntry& t) {
  return static_cast<uint64_t>(NumElements(t.shape)) * DTypeSize(t.dtype);
}

int Fail(const Status& status) {
  std::fprintf(stderr, "titan ckpt: %s\n", status.ToString().c_str());
  return 1;
}

int Ls(const std::string& dir) {
  auto storage = OpenStorage(dir, false);
  if (!storage.ok()) return Fail(storage.status());
  auto steps = ListCommittedSteps(**storage);
  if (!steps.ok()) return Fail(steps.status());
  auto latest = LatestStep(**storage);
  if (!latest.ok()) return Fail(latest.status());
  // An object store is the durable tier; on a file system, DURABLE marks a checkpoint a
  // mirror has copied (mirror.h).
  bool object_store = s3::IsS3Url(dir);
  std::printf("%-12s %-6s %-20s %6s %8s %12s %12s  %s\n", "STEP", "LATEST", "CREATED", "WORLD",
              "TENSORS", "SIZE", "OWN_FILES", "TIER");
  for (int64_t step : *steps) {
    auto manifest = ReadManifest(**storage, step);
    if (!manifest.ok()) {
      std::printf("%-12lld %-6s unreadable: %s\n", static_cast<long long>(step),
                  *latest == step ? "*" : "", manifest.status().ToString().c_str());
      continue;
    }
    uint64_t logical = 0, own = 0;
    for (const TensorEntry& t : manifest->tensors) logical += TensorBytes(t);
    std::string prefix = StepDirName(step) + "/";
    for (const std::string& f : manifest->files) {
      if (f.rfind(prefix, 0) == 0) own += (*storage)->FileSize(f).value_or(0);
    }
    bool durable = object_store || (*storage)->FileSize(DurableMarkerPath(step)).ok();
    std::printf("%-12lld %-6s %-20s %6d %8zu %12s %12s  %s\n", static_cast<long long>(step),
                *latest == step ? "*" : "", Time(manifest->created_unix_ns).c_str(),
                manifest->world_size, manifest->tensors.size(), FormatBytes(logical).c_str(),
                FormatBytes(own).c_str(), durable ? "durable" : "local");
  }
  return 0;
}

int Inspect(const std::string& path, bool json) {
  auto target = Resolve(path);
  if (!target.ok()) return Fail(target.status());
  if (json) {
    auto bytes = target->storage->ReadFile(ManifestPath(target->step), kMaxManifestBytes);
    if (!bytes.ok()) return Fail(bytes.status());
    std::fwrite(bytes->data(), 1, bytes->size(), stdout);
    return 0;
  }
  auto manifest = ReadManifest(*target->storage, target->step);
  if (!manifest.ok()) return Fail(manifest.status());
  uint64_t logical = 0;
  for (const TensorEntry& t : manifest->tensors) logical += TensorBytes(t);
  std::printf(
      "checkpoint  %s\nstep        %lld\ncreated     %s\nworld size  %d\nlayout      "
      "%s\nsave id     %s\ntensors     %zu (%s)\nfiles       %zu\n",
      target->where.c_str(), static_cast<long long>(manifest->step),
      Time(manifest->created_unix_ns).c_str(), manifest->world_size,
      manifest->layout.dump().c_str(), manifest->save_id.c_str(), manifest->tensors.size(),
      FormatBytes(logical).c_str(), manifest->files.size());
  std::string items;
  for (auto it = manifest->items.begin(); it != manifest->items.end(); ++it) {
    if (it.key() == "skeleton") continue;
    std::string value = it.value().dump();
    if (value.size() > 60) value = value.substr(0, 57) + "...";
    items += fmt::format("\n  {} = {}", it.key(), value);
  }
  std::printf("items       %s\n", items.empty() ? "(none)" : items.c_str());
  std::printf("\n%-48s %-9s %-20s %6s %7s %10s\n", "TENSOR", "DTYPE", "SHAPE", "SHARDS", "CHUNKS",
              "SIZE");
  for (const TensorEntry& t : manifest->tensors) {
    size_t chunks = 0;
    for (const ShardEntry& s : t.shards) chunks += s.chunks.size();
    std::printf("%-48s %-9s %-20s %6zu %7zu %10s\n", t.name.c_str(),
                std::string(DTypeName(t.dtype)).c_str(),
                fmt::format("[{}]", fmt::join(t.shape, ",")).c_str(), t.shards.size(), chunks,
                FormatBytes(TensorBytes(t)).c_str());
  }
  std::printf("\nFILE\n");
  for (const std::string& f : manifest->files) std::printf("%s\n", f.c_str());
  return 0;
}

int Verify(const std::string& path) {
  auto target = Resolve(path);
  if (!target.ok()) return Fail(target.status());
  auto reader = CheckpointReader::Open(target->storage, target->step);
  if (!reader.ok()) return Fail(reader.status());
  CheckpointReader::VerifyReport report = (*reader)->VerifyAll();
  for (const Status& error : report.errors) {
    std::printf("BAD  %s\n", error.ToString().c_str());
  }
  std::printf("%s: %llu chunks, %s checked, %zu bad\n", target->where.c_str(),
              static_cast<unsigned long long>(report.chunks), FormatBytes(report.bytes).c_str(),
              report.errors.size());
  return report.errors.empty() ? 0 : 1;
}

// Per tensor: the list of (offsets, lengths, chunk hashes), to compare without reading data.
std::string LayoutDigest(const TensorEntry& t) {
  std::string digest = fmt::format("{} [{}]", DTypeName(t.dtype), fmt::join(t.shape, ","));
  std::vector<std::string> shards;
  for (const ShardEntry& s : t.shards) {
    std::string one = fmt::format("({};{})", fmt::join(s.offsets, ","), fmt::join(s.lengths, ","));
    for (const ChunkRef& c : s.chunks) one += HashToHex(c.hash);
    shards.push_back(one);
  }
  std::sort(shards.begin(), shards.end());
  for (const std::string& s : shards) digest += s;
  return digest;
}

int Diff(const std::string& a_path, const std::string& b_path) {
  auto a = Resolve(a_path);
  if (!a.ok()) return Fail(a.status());
  auto b = Resolve(b_path);
  if (!b.ok()) return Fail(b.status());
  auto ra = CheckpointReader::Open(a->storage, a->step);
  if (!ra.ok()) return Fail(ra.status());
  auto rb = CheckpointReader::Open(b->storage, b->step);
  if (!rb.ok()) return Fail(rb.status());
  std::map<std::string, const TensorEntry*> ta, tb;
  for (const TensorEntry& t : (*ra)->manifest().tensors) ta[t.name] = &t;
  for (const TensorEntry& t : (*rb)->manifest().tensors) tb[t.name] = &t;
  int differences = 0;
  uint64_t changed_bytes = 0, total_bytes = 0;
  for (const auto& [name, t] : ta) {
    if (!tb.count(name)) {
      std::printf("- %s %s [%s]\n", name.c_str(), std::string(DTypeName(t->dtype)).c_str(),
                  fmt::format("{}", fmt::join(t->shape, ",")).c_str());
      ++differences;
    }
  }
  for (const auto& [name, t] : tb) {
    total_bytes += TensorBytes(*t);
    auto other = ta.find(name);
    if (other == ta.end()) {
      std::printf("+ %s %s [%s]\n", name.c_str(), std::string(DTypeName(t->dtype)).c_str(),
                  fmt::format("{}", fmt::join(t->shape, ",")).c_str());
      ++differences;
      continue;
    }
    const TensorEntry* old = other->second;
    if (old->dtype != t->dtype || old->shape != t->shape) {
      std::printf("~ %s %s [%s] -> %s [%s]\n", name.c_str(),
                  std::string(DTypeName(old->dtype)).c_str(),
                  fmt::format("{}", fmt::join(old->shape, ",")).c_str(),
                  std::string(DTypeName(t->dtype)).c_str(),
                  fmt::format("{}", fmt::join(t->shape, ",")).c_str());
      ++differences;
      changed_bytes += TensorBytes(*t);
      continue;
    }
    bool same;
    if (LayoutDigest(*old) == LayoutDigest(*t)) {
      same = true;
    } else {
      // Different sharding or content: compare the bytes (read and verified).
      std::vector<char> x(TensorBytes(*t)), y(TensorBytes(*t));
      Status sa = (*ra)->ReadTensor(name, x.data(), x.size());
      if (!sa.ok()) return Fail(sa);
      Status sb = (*rb)->ReadTensor(name, y.data(), y.size());
      if (!sb.ok()) return Fail(sb);
      same = x == y;
    }
    if (!same) {
      std::printf("~ %s (content)\n", name.c_str());
      ++differences;
      changed_bytes += TensorBytes(*t);
    }
  }
  std::printf("%s vs %s: %d tensors differ (%s of %s)\n", a->where.c_str(), b->where.c_str(),
              differences, FormatBytes(changed_bytes).c_str(), FormatBytes(total_bytes).c_str());
  return differences == 0 ? 0 : 1;  // like diff(1)
}

int Gc(const std::string& dir, const RetentionPolicy& policy, bool dry_run, bool uncommitted) {
  auto storage = OpenStorage(dir, false);
  if (!storage.ok()) return Fail(storage.status());
  auto report = CollectGarbage(**storage, policy, dry_run, uncommitted);
  if (!report.ok()) return Fail(report.status());
  const char* verb = dry_run ? "would remove" : "removed";
  for (int64_t step : report->dropped_steps) {
    std::printf("%s checkpoint %s\n", dry_run ? "would drop" : "dropped",
                StepDirName(step).c_str());
  }
  for (const std::string& f : report->removed_files) std::printf("%s %s\n", verb, f.c_str());
  for (const std::string& f : report->aborted_writes) {
    std::printf("%s incomplete upload %s\n", dry_run ? "would abort" : "aborted", f.c_str());
  }
  for (const std::string& f : report->kept_referenced) {
    std::printf("kept %s (referenced by a newer checkpoint)\n", f.c_str());
  }
  for (const std::string& why : report->skipped) std::printf("left %s\n", why.c_str());
  std::printf("%s %zu files, %s\n", verb, report->removed_files.size(),
              FormatBytes(report->removed_bytes).c_str());
  return 0;
}

// True when checkpoint root `inner` is `outer` or lies inside it (each as its storage's
// Describe("") names it; local paths are resolved through links, which need not exist yet).
bool SameOrInside(std::string inner, std::string outer) {
  auto normal = [](std::string path) {
    if (path.rfind("s3://", 0) != 0) {
      std::error_code error;
      std::filesystem::path resolved = std::filesystem::weakly_canonical(path, error);
      if (!error) path = resolved.string();
    }
    while (path.size() > 1 && path.back() == '/') path.pop_back();
    return path + "/";
  };
  return normal(std::move(inner)).rfind(normal(std::move(outer)), 0) == 0;
}

int Cp(const std::string& source, const std::string& destination, int files_in_parallel) {
  auto from = Resolve(source);
  if (!from.ok()) return Fail(from.status());
  if (SameOrInside(destination, from->storage->Describe(""))) {
    std::fprintf(stderr,
                 "titan ckpt cp: the destination %s is the source's checkpoint directory %s or "
                 "inside it (the copy would land among the checkpoints it copies); give a "
                 "directory outside it\n",
                 destination.c_str(), from->storage->Describe("").c_str());
    return 2;
  }
  auto to = OpenStorage(destination, true);
  if (!to.ok()) return Fail(to.status());
  CopyOptions options;
  options.files_in_parallel = files_in_parallel;
  int64_t started_ns = MonoNowNs();
  int64_t last_ns = started_ns;
  options.on_progress = [&](uint64_t copied, uint64_t total) {
    int64_t now_ns = MonoNowNs();
    if (now_ns - last_ns < 2'000'000'000 || copied == total) return;
    last_ns = now_ns;
    std::fprintf(stderr, "titan ckpt cp: %s of %s\n", FormatBytes(copied).c_str(),
                 FormatBytes(total).c_str());
  };
  auto report = CopyCheckpoint(*from->storage, from->step, **to, options);
  if (!report.ok()) return Fail(report.status());
  double seconds = static_cast<double>(MonoNowNs() - started_ns) / 1e9;
  std::printf("copied %s to %s: %d files, %s in %.2f s (%.0f MiB/s)%s%s\n", from->where.c_str(),
              (*to)->Describe(StepDirName(from->step)).c_str(), report->files_copied,
              FormatBytes(report->copied_bytes).c_str(), seconds,
              static_cast<double>(report->copied_bytes) / (1 << 20) / std::max(seconds, 1e-9),
              report->files_present > 0
                  ? fmt::format(", {} already there", report->files_present).c_str()
                  : "",
              report->moved_latest ? "; latest updated" : "");
  return 0;
}

}  // namespace

int CkptCommand(int argc, char** argv) {
  CLI::App app{
      "titan ckpt: inspect and maintain titan checkpoints (written by titan.checkpoint).\n"
      "CKPT is DIR/step_NNNNNNNNNN, or DIR for its latest checkpoint. DIR is a directory or\n"
      "an object store location s3://bucket/prefix (credentials and endpoint from AWS_* and\n"
      "~/.aws, see docs/checkpoint.md).\n\n"
      "Examples:\n"
      "  titan ckpt ls /ckpt\n"
      "  titan ckpt inspect /ckpt/step_0000001000\n"
      "  titan ckpt verify /ckpt                       # every checksum of the latest\n"
      "  titan ckpt diff /ckpt/step_0000000900 /ckpt/step_0000001000\n"
      "  titan ckpt gc /ckpt --keep-last 3 --keep-every 1000 --dry-run\n"
      "  titan ckpt ls s3://ckpt/llama-70b\n"
      "  titan ckpt cp /local/ckpt s3://ckpt/llama-70b # latest, every chunk checked\n",
      "titan ckpt"};
  app.require_subcommand(1);
  std::string dir, a, b;
  bool json = false, dry_run = false;
  RetentionPolicy policy;
  auto* ls = app.add_subcommand("ls", "list committed checkpoints (* marks latest)");
  ls->add_option("DIR", dir, "checkpoint directory or s3://bucket/prefix")->required();
  auto* inspect = app.add_subcommand("inspect", "show a checkpoint's manifest");
  inspect->add_option("CKPT", a, "checkpoint")->required();
  inspect->add_flag("--json", json, "print the raw manifest");
  auto* verify = app.add_subcommand("verify", "read every chunk and check its checksum");
  verify->add_option("CKPT", a, "checkpoint")->required();
  auto* diff = app.add_subcommand("diff", "tensors added, removed or changed from A to B");
  diff->add_option("A", a, "checkpoint")->required();
  diff->add_option("B", b, "checkpoint")->required();
  auto* gc = app.add_subcommand(
      "gc", "apply retention and remove files no committed checkpoint references");
  gc->add_option("DIR", dir, "checkpoint directory or s3://bucket/prefix")->required();
  gc->add_option("--keep-last", policy.keep_last, "keep the newest K checkpoints (0: all)")
      ->check(CLI::Range(0, 1'000'000'000));
  gc->add_option("--keep-every", policy.keep_every, "also keep steps divisible by N")
      ->check(CLI::Range(0, 1'000'000'000));
  gc->add_flag("--dry-run", dry_run, "only print what would be removed");
  bool uncommitted = false;
  gc->add_flag("--uncommitted", uncommitted,
               "also remove uncommitted checkpoints newer than the latest (what a save killed "
               "before its commit leaves); only when no job is saving to DIR");
  int files_in_parallel = 4;
  auto* cp = app.add_subcommand(
      "cp", "copy a checkpoint to another root (directory or s3://), checking every chunk");
  cp->add_option("CKPT", a, "checkpoint")->required();
  cp->add_option("DEST", b, "destination root: directory or s3://bucket/prefix")->required();
  cp->add_option("--files", files_in_parallel, "data files copied at once")
      ->check(CLI::Range(1, 64));
  if (std::optional<int> done = ParseCommandLine(app, argc, argv)) return *done;
  if (*cp) return Cp(a, b, files_in_parallel);
  if (*ls) return Ls(dir);
  if (*inspect) return Inspect(a, json);
  if (*verify) return Verify(a);
  if (*diff) return Diff(a, b);
  return Gc(dir, policy, dry_run, uncommitted);
}

}  // namespace titan
