#include "src/checkpoint/manifest.h"

#include <xxhash.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <set>

#include <fmt/format.h>

#include "src/base/json_depth.h"
#include "src/base/text.h"

namespace titan::checkpoint {
namespace {

using nlohmann::json;

constexpr std::string_view kEnvelopeMagic = "titan-checkpoint v1 ";

bool IsSafeComponent(std::string_view part) {
  if (part.empty() || part.size() > 200 || part == "." || part == "..") return false;
  for (char c : part) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

json ShapeToJson(const std::vector<int64_t>& v) { return json(v); }

// Field accessors that turn a wrong type into an error message instead of an exception.
class Fields {
 public:
  Fields(const json& object, std::string where) : object_(object), where_(std::move(where)) {}
  Status Require(const char* key, json::value_t type, const json** out) const {
    if (!object_.is_object()) return Bad(fmt::format("is not a JSON object"));
    auto it = object_.find(key);
    if (it == object_.end()) return Bad(fmt::format("has no field \"{}\"", key));
    bool matches = it->type() == type || (type == json::value_t::number_integer &&
                                          it->type() == json::value_t::number_unsigned);
    if (!matches) return Bad(fmt::format("field \"{}\" has the wrong type", key));
    *out = &*it;
    return OkStatus();
  }
  Status Int(const char* key, int64_t min, int64_t max, int64_t* out) const {
    const json* value;
    TITAN_RETURN_IF_ERROR(Require(key, json::value_t::number_integer, &value));
    if (value->is_number_unsigned() && value->get<uint64_t>() > static_cast<uint64_t>(max)) {
      return Bad(fmt::format("field \"{}\" is out of range [{}, {}]", key, min, max));
    }
    int64_t v = value->get<int64_t>();
    if (v < min || v > max) {
      return Bad(fmt::format("field \"{}\" = {} is out of range [{}, {}]", key, v, min, max));
    }
    *out = v;
    return OkStatus();
  }
  Status String(const char* key, size_t max_size, std::string* out) const {
    const json* value;
    TITAN_RETURN_IF_ERROR(Require(key, json::value_t::string, &value));
    const std::string& s = value->get_ref<const std::string&>();
    if (s.size() > max_size) return Bad(fmt::format("field \"{}\" is too long", key));
    *out = s;
    return OkStatus();
  }
  Status IntList(const char* key, std::vector<int64_t>* out) const {
    const json* value;
    TITAN_RETURN_IF_ERROR(Require(key, json::value_t::array, &value));
    if (value->size() > kMaxRank) {
      return Bad(
          fmt::format("field \"{}\" has {} dimensions (at most {})", key, value->size(), kMaxRank));
    }
    out->clear();
    for (const json& e : *value) {
      if (!e.is_number_integer()) return Bad(fmt::format("field \"{}\" holds a non-integer", key));
      if (e.is_number_unsigned() && e.get<uint64_t>() > (uint64_t{1} << 48)) {
        return Bad(fmt::format("field \"{}\" holds an absurd size", key));
      }
      int64_t v = e.get<int64_t>();
      if (v < 0 || v > (int64_t{1} << 48)) {
        return Bad(fmt::format("field \"{}\" holds {} (must be in [0, 2^48])", key, v));
      }
      out->push_back(v);
    }
    return OkStatus();
  }
  Status Bad(std::string what) const {
    return InvalidArgumentError(fmt::format("{} {}", where_, what));
  }

 private:
  const json& object_;
  std::string where_;
};

json ManifestToJson(const Manifest& m) {
  json tensors = json::array();
  for (const TensorEntry& t : m.tensors) {
    json shards = json::array();
    for (const ShardEntry& s : t.shards) {
      json chunks = json::array();
      for (const ChunkRef& c : s.chunks) {
        chunks.push_back({{"file", c.file},
                          {"offset", c.offset},
                          {"bytes", c.size_bytes},
                          {"xxh3_128", HashToHex(c.hash)}});
      }
      shards.push_back({{"offsets", ShapeToJson(s.offsets)},
                        {"lengths", ShapeToJson(s.lengths)},
                        {"chunks", std::move(chunks)}});
    }
    tensors.push_back({{"name", t.name},
                       {"dtype", DTypeName(t.dtype)},
                       {"shape", ShapeToJson(t.shape)},
                       {"shards", std::move(shards)}});
  }
  return json{{"format", "titan-checkpoint"},
              {"version", kFormatVersion},
              {"kind", m.kind},
              {"step", m.step},
              {"world_size", m.world_size},
              {"rank", m.rank},
              {"save_id", m.save_id},
              {"created_unix_ns", m.created_unix_ns},
              {"layout", m.layout},
              {"files", m.files},
              {"tensors", std::move(tensors)},
              {"items", m.items},
              {"rank_items", m.rank_items}};
}

Status ParseShard(const json& js, const TensorEntry& tensor, size_t shard_index, const Manifest& m,
                  const std::string& where, ShardEntry* shard) {
  Fields f(js, fmt::format("{}: tensor \"{}\" shard {}", where, tensor.name, shard_index));
  TITAN_RETURN_IF_ERROR(f.IntList("offsets", &shard->offsets));
  TITAN_RETURN_IF_ERROR(f.IntList("lengths", &shard->lengths));
  if (shard->offsets.size() != tensor.shape.size() ||
      shard->lengths.size() != tensor.shape.size()) {
    return f.Bad("has offsets/lengths whose rank differs from the tensor's shape");
  }
  for (size_t d = 0; d < tensor.shape.size(); ++d) {
    if (shard->offsets[d] + shard->lengths[d] > tensor.shape[d]) {
      return f.Bad(fmt::format("reaches beyond the tensor's shape in dimension {}", d));
    }
  }
  int64_t elements = NumElements(shard->lengths);
  uint64_t expected_bytes = static_cast<uint64_t>(elements) * DTypeSize(tensor.dtype);
  const json* chunks;
  TITAN_RETURN_IF_ERROR(f.Require("chunks", json::value_t::array, &chunks));
  uint64_t total = 0;
  for (size_t i = 0; i < chunks->size(); ++i) {
    const json& cj = (*chunks)[i];
    Fields cf(
        cj, fmt::format("{}: tensor \"{}\" shard {} chunk {}", where, tensor.name, shard_index, i));
    ChunkRef c;
    int64_t file, offset, size;
    TITAN_RETURN_IF_ERROR(cf.Int("file", 0, static_cast<int64_t>(m.files.size()) - 1, &file));
    TITAN_RETURN_IF_ERROR(cf.Int("offset", 0, int64_t{1} << 56, &offset));
    TITAN_RETURN_IF_ERROR(cf.Int("bytes", 1, static_cast<int64_t>(kMaxChunkBytes), &size));
    std::string hex;
    TITAN_RETURN_IF_ERROR(cf.String("xxh3_128", 32, &hex));
    if (!HashFromHex(hex, &c.hash)) return cf.Bad("has a malformed xxh3_128 checksum");
    c.file = static_cast<uint32_t>(file);
    c.offset = static_cast<uint64_t>(offset);
    c.size_bytes = static_cast<uint64_t>(size);
    total += c.size_bytes;
    if (total > expected_bytes) break;
    shard->chunks.push_back(c);
  }
  if (total != expected_bytes) {
    return f.Bad(fmt::format(
        "has chunks totalling {}{} bytes but its slice ([{}] of {}) needs {} bytes; the "
        "tensor's dtype, shape or chunks were changed after the save",
        total > expected_bytes ? "more than " : "", total, fmt::join(shard->lengths, ","),
        DTypeName(tensor.dtype), expected_bytes));
  }
  return OkStatus();
}

Status ParseTensor(const json& js, size_t index, const Manifest& m, const std::string& where,
                   TensorEntry* t) {
  Fields f(js, fmt::format("{}: tensor {}", where, index));
  TITAN_RETURN_IF_ERROR(f.String("name", 4096, &t->name));
  if (t->name.empty()) return f.Bad("has an empty name");
  Fields nf(js, fmt::format("{}: tensor \"{}\"", where, t->name));
  std::string dtype;
  TITAN_RETURN_IF_ERROR(nf.String("dtype", 32, &dtype));
  auto parsed = ParseDType(dtype);
  if (!parsed) return nf.Bad(fmt::format("has unknown dtype \"{}\"", dtype));
  t->dtype = *parsed;
  TITAN_RETURN_IF_ERROR(nf.IntList("shape", &t->shape));
  int64_t elements = NumElements(t->shape);
  if (elements < 0 || static_cast<uint64_t>(elements) > kMaxTensorBytes / DTypeSize(t->dtype)) {
    return nf.Bad("has an absurd size (more than 2^50 bytes)");
  }
  const json* shards;
  TITAN_RETURN_IF_ERROR(nf.Require("shards", json::value_t::array, &shards));
  t->shards.resize(shards->size());
  for (size_t i = 0; i < shards->size(); ++i) {
    TITAN_RETURN_IF_ERROR(ParseShard((*shards)[i], *t, i, m, where, &t->shards[i]));
  }
  return OkStatus();
}

Status ParseBody(const json& js, const std::string& where, Manifest* m) {
  Fields f(js, where);
  std::string format;
  TITAN_RETURN_IF_ERROR(f.String("format", 64, &format));
  if (format != "titan-checkpoint") return f.Bad("is not a titan checkpoint manifest");
  int64_t version, step, world_size, rank, created;
  TITAN_RETURN_IF_ERROR(f.Int("version", 1, 1000, &version));
  if (version != kFormatVersion) {
    return f.Bad(
        fmt::format("has format version {}; this titan reads version {}", version, kFormatVersion));
  }
  TITAN_RETURN_IF_ERROR(f.String("kind", 32, &m->kind));
  if (m->kind != "manifest" && m->kind != "rank_done") {
    return f.Bad(fmt::format("has unknown kind \"{}\"", m->kind));
  }
  TITAN_RETURN_IF_ERROR(f.Int("step", 0, int64_t{1} << 62, &step));
  TITAN_RETURN_IF_ERROR(f.Int("world_size", 1, 1 << 24, &world_size));
  TITAN_RETURN_IF_ERROR(f.Int("rank", 0, world_size - 1, &rank));
  TITAN_RETURN_IF_ERROR(f.Int("created_unix_ns", 0, INT64_MAX, &created));
  TITAN_RETURN_IF_ERROR(f.String("save_id", 64, &m->save_id));
  m->step = step;
  m->world_size = static_cast<int>(world_size);
  m->rank = static_cast<int>(rank);
  m->created_unix_ns = created;
  const json* layout;
  const json* items;
  const json* files;
  const json* tensors;
  TITAN_RETURN_IF_ERROR(f.Require("layout", json::value_t::object, &layout));
  TITAN_RETURN_IF_ERROR(f.Require("items", json::value_t::object, &items));
  TITAN_RETURN_IF_ERROR(f.Require("files", json::value_t::array, &files));
  TITAN_RETURN_IF_ERROR(f.Require("tensors", json::value_t::array, &tensors));
  m->layout = *layout;
  m->items = *items;
  const json* rank_items;
  TITAN_RETURN_IF_ERROR(f.Require("rank_items", json::value_t::array, &rank_items));
  if (rank_items->size() > static_cast<size_t>(world_size)) {
    return f.Bad("has more rank_items than ranks");
  }
  for (const json& item : *rank_items) {
    if (!item.is_object()) return f.Bad("has a rank_items entry that is not an object");
    m->rank_items.push_back(item);
  }
  for (const json& file : *files) {
    if (!file.is_string() || !IsSafeDataPath(file.get_ref<const std::string&>())) {
      return f.Bad(fmt::format(
          "names data file {} which is not of the form step_N/NAME (no '..', no absolute "
          "paths, only [A-Za-z0-9._-]); refusing to read outside the checkpoint directory",
          file.dump()));
    }
    m->files.push_back(file.get<std::string>());
  }
  std::set<std::string_view> names;
  m->tensors.resize(tensors->size());
  for (size_t i = 0; i < tensors->size(); ++i) {
    TITAN_RETURN_IF_ERROR(ParseTensor((*tensors)[i], i, *m, where, &m->tensors[i]));
    if (!names.insert(m->tensors[i].name).second) {
      return f.Bad(fmt::format("names tensor \"{}\" twice", m->tensors[i].name));
    }
    // A committed checkpoint holds every element of every tensor once (a done marker holds a
    // rank's part only).
    if (m->kind != "manifest") continue;
    if (std::optional<std::string> problem = ShardTilingProblem(m->tensors[i])) {
      return f.Bad(fmt::format("has tensor \"{}\" whose shards do not tile it: {}",
                               m->tensors[i].name, *problem));
    }
  }
  return OkStatus();
}

}  // namespace

int64_t NumElements(const std::vector<int64_t>& lengths) {
  int64_t n = 1;
  for (int64_t d : lengths) {
    if (d < 0) return -1;
    if (d != 0 && n > static_cast<int64_t>(kMaxTensorBytes) / d) return -1;
    n *= d;
  }
  return n;
}

std::optional<std::string> ShardTilingProblem(const TensorEntry& tensor) {
  const int64_t total = NumElements(tensor.shape);
  int64_t covered = 0;  // stops counting past `total` (no overflow)
  for (const ShardEntry& s : tensor.shards) {
    covered += NumElements(s.lengths);
    if (covered > total) break;
  }
  if (covered < total) {
    return fmt::format("they hold {} of its {} elements", covered, total);
  }
  // As many elements as the tensor (or more): a tiling exactly when no two shards overlap.
  // Mark the cells of the grid cut by every shard boundary; a cell marked twice is an overlap.
  const size_t dims = tensor.shape.size();
  std::vector<std::vector<int64_t>> cuts(dims);
  for (size_t d = 0; d < dims; ++d) {
    cuts[d] = {0, tensor.shape[d]};
    for (const ShardEntry& s : tensor.shards) {
      cuts[d].push_back(s.offsets[d]);
      cuts[d].push_back(s.offsets[d] + s.lengths[d]);
    }
    std::sort(cuts[d].begin(), cuts[d].end());
    cuts[d].erase(std::unique(cuts[d].begin(), cuts[d].end()), cuts[d].end());
  }
  constexpr uint64_t kMaxCells = uint64_t{1} << 22;
  uint64_t cells = 1;
  for (size_t d = 0; d < dims; ++d) {
    cells *= std::max<size_t>(cuts[d].size() - 1, 1);
    if (cells > kMaxCells) {
      return fmt::format("its {} shards are too fragmented to check (over {} grid cells)",
                         tensor.shards.size(), kMaxCells);
    }
  }
  constexpr uint32_t kFree = UINT32_MAX;
  std::vector<uint32_t> owner(cells, kFree);
  std::vector<size_t> lo(dims), hi(dims), at(dims);
  for (size_t i = 0; i < tensor.shards.size(); ++i) {
    const ShardEntry& s = tensor.shards[i];
    const bool empty = NumElements(s.lengths) == 0;
    for (size_t d = 0; d < dims && !empty; ++d) {
      auto index = [&](int64_t v) {
        return static_cast<size_t>(std::lower_bound(cuts[d].begin(), cuts[d].end(), v) -
                                   cuts[d].begin());
      };
      lo[d] = at[d] = index(s.offsets[d]);
      hi[d] = index(s.offsets[d] + s.lengths[d]);
    }
    if (empty) continue;
    for (;;) {  // every cell of shard i, as an odometer over the dimensions
      uint64_t cell = 0;
      for (size_t d = 0; d < dims; ++d) cell = cell * (cuts[d].size() - 1) + at[d];
      if (owner[cell] != kFree) {
        return fmt::format("shards {} and {} overlap", owner[cell], i);
      }
      owner[cell] = static_cast<uint32_t>(i);
      size_t d = dims;
      while (d > 0 && ++at[d - 1] == hi[d - 1]) {
        at[d - 1] = lo[d - 1];
        --d;
      }
      if (d == 0) break;
    }
  }
  return std::nullopt;
}

bool IsSafeDataPath(std::string_view path) {
  size_t slash = path.find('/');
  if (slash == std::string_view::npos) return false;
  std::string_view dir = path.substr(0, slash);
  std::string_view file = path.substr(slash + 1);
  return IsSafeComponent(dir) && IsSafeComponent(file) && dir.substr(0, 5) == "step_";
}

std::string SerializeManifest(const Manifest& manifest) {
  std::string body = ManifestToJson(manifest).dump(1);
  body += '\n';
  return fmt::format("{}xxh3-64={:016x} bytes={}\n{}", kEnvelopeMagic,
                     XXH3_64bits(body.data(), body.size()), body.size(), body);
}

Result<Manifest> ParseManifest(std::string_view bytes, std::string_view where_view) {
  std::string where(where_view);
  size_t newline = bytes.find('\n');
  if (bytes.substr(0, kEnvelopeMagic.size()) != kEnvelopeMagic || newline == std::string::npos ||
      newline > 128) {
    return DataLossError(
        fmt::format("{}: not a titan checkpoint manifest (the first line must start with \"{}\")",
                    where, kEnvelopeMagic));
  }
  std::string_view header = bytes.substr(kEnvelopeMagic.size(), newline - kEnvelopeMagic.size());
  std::string_view body = bytes.substr(newline + 1);
  std::string_view hash_field = NextField(&header);
  std::string_view size_field = NextField(&header);
  uint64_t declared_size = 0;
  uint64_t declared_hash = 0;
  bool header_ok = hash_field.substr(0, 8) == "xxh3-64=" && hash_field.size() == 24 &&
                   size_field.substr(0, 6) == "bytes=" &&
                   ParseUint64(size_field.substr(6), &declared_size) && Trim(header).empty();
  if (header_ok) {
    for (char c : hash_field.substr(8)) {
      int v = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
      if (v < 0) header_ok = false;
      declared_hash = (declared_hash << 4) | static_cast<uint64_t>(v & 15);
    }
  }
  if (!header_ok) {
    return DataLossError(fmt::format("{}: the manifest's first line is malformed", where));
  }
  if (declared_size != body.size()) {
    return DataLossError(fmt::format(
        "{}: the manifest body has {} bytes but its header says {} (truncated or corrupt)", where,
        body.size(), declared_size));
  }
  uint64_t actual_hash = XXH3_64bits(body.data(), body.size());
  if (actual_hash != declared_hash) {
    return DataLossError(fmt::format(
        "{}: manifest checksum mismatch (xxh3-64 of the body is {:016x}, header says {:016x}); "
        "the file is corrupt: use an older checkpoint",
        where, actual_hash, declared_hash));
  }
  TITAN_RETURN_IF_ERROR(CheckJsonDepth(body, where));
  json js = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (js.is_discarded()) {
    return InvalidArgumentError(fmt::format("{}: the manifest body is not valid JSON", where));
  }
  Manifest manifest;
  try {
    TITAN_RETURN_IF_ERROR(ParseBody(js, where, &manifest));
  } catch (const json::exception& e) {
    return InvalidArgumentError(fmt::format("{}: malformed manifest: {}", where, e.what()));
  }
  return manifest;
}

}  // namespace titan::checkpoint
