// PyTorch NCCL Flight Recorder dumps: one file per rank (TORCH_NCCL_DEBUG_INFO_TEMP_FILE or
// TORCH_FR_DUMP_TEMP_FILE prefix + rank), pickled by torch's C++ pickler (read here by the
// restricted reader in plain_pickle.h, never by unpickling) or written as JSON. The documented
// shape: {"version", "pg_config": {pg: {"name", "desc", "ranks"}}, "pg_status",
// "entries": [{"record_id", "pg_id", "process_group": [name, desc], "collective_seq_id",
// "p2p_seq_id", "profiling_name", "time_created_ns", "input_sizes", "input_dtypes", "state",
// "is_p2p", "frames": [{"name", "filename", "line"}], ...}]}. The rank is the dump's "rank" when
// it has one, else the digits that end the file name (as torchfrtrace reads it).
#include <cctype>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "src/base/json_depth.h"
#include "src/diagnose/sources/plain_pickle.h"
#include "src/diagnose/sources/source.h"

namespace titan::diagnose {
namespace {

constexpr size_t kMaxEntriesPerDump = 200'000;

// Uniform access to a pickle tree or a JSON document.
struct PickleView {
  const PickleTree& t;
  using Node = PickleTree::Id;
  using Kind = PickleTree::Kind;
  static constexpr Node kNull = 0;
  Node Get(Node n, std::string_view key) const { return t.Get(n, key); }
  bool IsString(Node n) const { return n != 0 && t.node(n).kind == Kind::kString; }
  bool IsInt(Node n) const { return n != 0 && t.node(n).kind == Kind::kInt; }
  bool IsList(Node n) const { return n != 0 && t.node(n).kind == Kind::kList; }
  bool IsDict(Node n) const { return n != 0 && t.node(n).kind == Kind::kDict; }
  bool IsTrue(Node n) const {
    return n != 0 && (t.node(n).kind == Kind::kBool || t.node(n).kind == Kind::kInt) &&
           t.node(n).i != 0;
  }
  std::string_view Str(Node n) const { return IsString(n) ? t.node(n).s : std::string_view(); }
  int64_t Int(Node n, int64_t fallback = -1) const {
    if (IsInt(n)) return t.node(n).i;
    if (n != 0 && t.node(n).kind == Kind::kFloat) return static_cast<int64_t>(t.node(n).d);
    return fallback;
  }
  std::vector<Node> Items(Node n) const { return t.Items(n); }
  // Dict items as (key text, value).
  std::vector<std::pair<std::string, Node>> Pairs(Node n) const {
    std::vector<std::pair<std::string, Node>> out;
    std::vector<Node> kv = t.Items(n);
    for (size_t i = 0; i + 1 < kv.size(); i += 2) {
      const auto& k = t.node(kv[i]);
      out.emplace_back(k.kind == Kind::kInt ? std::to_string(k.i) : std::string(k.s), kv[i + 1]);
    }
    return out;
  }
  // A small value as text: "[[3, 4]]", "Float".
  void Text(Node n, int depth, std::string* out) const {
    if (n == 0 || depth > 8) return;
    const auto& v = t.node(n);
    switch (v.kind) {
      case Kind::kInt:
        *out += std::to_string(v.i);
        break;
      case Kind::kFloat:
        *out += fmt::format("{}", v.d);
        break;
      case Kind::kString:
      case Kind::kBytes:
        *out += v.s;
        break;
      case Kind::kBool:
        *out += v.i ? "True" : "False";
        break;
      case Kind::kNone:
        *out += "None";
        break;
      case Kind::kList:
      case Kind::kDict: {
        *out += '[';
        bool first = true;
        for (Node item : t.Items(n)) {
          if (!first) *out += ", ";
          first = false;
          if (out->size() > 512) {
            *out += "...";
            break;
          }
          Text(item, depth + 1, out);
        }
        *out += ']';
        break;
      }
    }
  }
};

struct JsonView {
  using Node = const nlohmann::json*;
  static constexpr Node kNull = nullptr;
  Node Get(Node n, std::string_view key) const {
    if (n == nullptr || !n->is_object()) return nullptr;
    auto it = n->find(key);
    return it == n->end() ? nullptr : &*it;
  }
  bool IsString(Node n) const { return n != nullptr && n->is_string(); }
  bool IsInt(Node n) const { return n != nullptr && n->is_number_integer(); }
  bool IsList(Node n) const { return n != nullptr && n->is_array(); }
  bool IsDict(Node n) const { return n != nullptr && n->is_object(); }
  bool IsTrue(Node n) const {
    return n != nullptr && ((n->is_boolean() && n->get<bool>()) ||
                            (n->is_number_integer() && n->get<int64_t>() != 0));
  }
  std::string_view Str(Node n) const {
    return IsString(n) ? std::string_view(n->get_ref<const std::string&>()) : std::string_view();
  }
  int64_t Int(Node n, int64_t fallback = -1) const {
    if (n == nullptr || !n->is_number()) return fallback;
    return n->is_number_float() ? static_cast<int64_t>(n->get<double>()) : n->get<int64_t>();
  }
  std::vector<Node> Items(Node n) const {
    std::vector<Node> out;
    if (IsList(n)) {
      for (const auto& v : *n) out.push_back(&v);
    }
    return out;
  }
  std::vector<std::pair<std::string, Node>> Pairs(Node n) const {
    std::vector<std::pair<std::string, Node>> out;
    if (IsDict(n)) {
      for (auto it = n->begin(); it != n->end(); ++it) out.emplace_back(it.key(), &it.value());
    }
    return out;
  }
  void Text(Node n, int depth, std::string* out) const {
    if (n == nullptr) return;
    if (n->is_string()) {
      *out += n->get_ref<const std::string&>();
    } else if (n->is_array()) {
      *out += '[';
      bool first = true;
      for (const auto& v : *n) {
        if (!first) *out += ", ";
        first = false;
        if (out->size() > 512 || depth > 8) {
          *out += "...";
          break;
        }
        Text(&v, depth + 1, out);
      }
      *out += ']';
    } else {
      *out += n->dump();
    }
  }
};

// "[0, 1, 2]" (pg_config's ranks are written as a string) or a list of ints.
template <typename View>
std::vector<int64_t> RanksOf(const View& v, typename View::Node n) {
  std::vector<int64_t> out;
  if (v.IsList(n)) {
    for (auto item : v.Items(n)) out.push_back(v.Int(item));
    return out;
  }
  std::string_view s = v.Str(n);
  int64_t cur = -1;
  for (char c : s) {
    if (std::isdigit(static_cast<unsigned char>(c))) {
      cur = (cur < 0 ? 0 : cur * 10) + (c - '0');
      if (cur > 100'000'000) return out;
    } else if (cur >= 0) {
      out.push_back(cur);
      cur = -1;
    }
  }
  if (cur >= 0) out.push_back(cur);
  return out;
}

template <typename View>
std::string TextOf(const View& v, typename View::Node n) {
  std::string out;
  v.Text(n, 0, &out);
  return out;
}

// The innermost frame outside torch: where the user's code issued the collective.
template <typename View>
std::string UserFrame(const View& v, typename View::Node frames) {
  std::string fallback;
  for (auto f : v.Items(frames)) {
    std::string_view file = v.Str(v.Get(f, "filename"));
    std::string text = fmt::format("{}:{} in {}", file.substr(file.rfind('/') + 1),
                                   v.Int(v.Get(f, "line"), 0), v.Str(v.Get(f, "name")));
    if (fallback.empty()) fallback = text;
    if (file.find("torch/") == std::string_view::npos) return text;
  }
  return fallback;
}

template <typename View>
Status Extract(const View& v, typename View::Node root, const std::string& path,
               SourceOutput* out) {
  if (!v.IsDict(root)) return InvalidArgumentError(path + ": a Flight Recorder dump is a dict");
  auto entries = v.Get(root, "entries");
  if (!v.IsList(entries)) {
    return InvalidArgumentError(path + ": this Flight Recorder dump has no \"entries\" list");
  }
  FlightRecord rec;
  rec.file = path;
  rec.version = std::string(v.Str(v.Get(root, "version")));
  rec.rank = v.Int(v.Get(root, "rank"));
  if (rec.rank < 0) {
    // torchfrtrace's reading: the digits that end the name (before an extension, here).
    size_t end = path.size();
    for (std::string_view ext : {".json", ".pkl", ".pickle"}) {
      if (std::string_view(path).ends_with(ext)) end -= ext.size();
    }
    size_t begin = end;
    while (begin > 0 && std::isdigit(static_cast<unsigned char>(path[begin - 1]))) --begin;
    if (begin < end && end - begin <= 9) rec.rank = std::stoll(path.substr(begin, end - begin));
  }
  if (rec.rank < 0) {
    out->file.notes.push_back(
        "the dump names no rank (no \"rank\" key, no digits ending the file name): it is read "
        "but cannot be compared with the other ranks'");
  }
  for (const auto& [pg, config] : v.Pairs(v.Get(root, "pg_config"))) {
    std::string name(v.Str(v.Get(config, "name")));
    rec.groups.emplace_back(name.empty() ? pg : name, RanksOf(v, v.Get(config, "ranks")));
  }
  const auto items = v.Items(entries);
  rec.entries_total = static_cast<int64_t>(items.size());
  const size_t skip = items.size() > kMaxEntriesPerDump ? items.size() - kMaxEntriesPerDump : 0;
  if (skip > 0) {
    out->file.notes.push_back(
        fmt::format("{} entries; the last {} were read", items.size(), kMaxEntriesPerDump));
  }
  for (size_t i = skip; i < items.size(); ++i) {
    auto e = items[i];
    if (!v.IsDict(e)) continue;
    FlightRecord::Entry x;
    x.record_id = v.Int(v.Get(e, "record_id"));
    auto pg = v.Get(e, "process_group");
    std::vector<typename View::Node> pg_items = v.Items(pg);
    if (pg_items.size() >= 2) {
      x.pg = std::string(v.Str(pg_items[0]));
      x.pg_desc = std::string(v.Str(pg_items[1]));
    } else {
      x.pg = std::to_string(v.Int(v.Get(e, "pg_id"), 0));
    }
    x.p2p = v.IsTrue(v.Get(e, "is_p2p"));
    x.seq = v.Int(v.Get(e, x.p2p ? "p2p_seq_id" : "collective_seq_id"));
    x.op = std::string(v.Str(v.Get(e, "profiling_name")));
    x.sizes = TextOf(v, v.Get(e, "input_sizes"));
    x.dtypes = TextOf(v, v.Get(e, "input_dtypes"));
    x.state = std::string(v.Str(v.Get(e, "state")));
    x.time_created_ns = v.Int(v.Get(e, "time_created_ns"), 0);
    x.frame = UserFrame(v, v.Get(e, "frames"));
    rec.entries.push_back(std::move(x));
  }
  out->flight_records.push_back(std::move(rec));
  out->file.kind = "flight_recorder";
  return OkStatus();
}

class FlightRecorderSource final : public LogSource {
 public:
  std::string_view name() const override { return "flight_recorder"; }
  int Sniff(const FileHead& head) const override {
    const std::string_view b = head.bytes;
    const bool keys = b.find("entries") != std::string_view::npos &&
                      (b.find("pg_config") != std::string_view::npos ||
                       b.find("version") != std::string_view::npos);
    if (LooksLikePickle(b)) return keys ? 50 : 5;  // a pickle is never text: only this reads it
    const size_t first = b.find_first_not_of(" \t\r\n");
    if (first != std::string_view::npos && b[first] == '{' && keys &&
        b.find("\"entries\"") != std::string_view::npos &&
        (b.find("\"profiling_name\"") != std::string_view::npos ||
         b.find("\"pg_config\"") != std::string_view::npos)) {
      return 50;
    }
    return 0;
  }
  Status Read(int fd, const FileHead& head, const ReadLimits& limits,
              SourceOutput* out) const override {
    const std::string path(head.path);
    TITAN_ASSIGN_OR_RETURN(std::string data,
                           ReadDocument(fd, head, limits, "flight_recorder", out));
    if (LooksLikePickle(data)) {
      TITAN_ASSIGN_OR_RETURN(PickleTree tree, ReadPlainPickle(data, path));
      PickleView view{tree};
      return Extract(view, tree.root(), path, out);
    }
    TITAN_ASSIGN_OR_RETURN(nlohmann::json doc,
                           ParseJsonDocument(data, path, "a Flight Recorder JSON dump"));
    JsonView view;
    return Extract(view, &doc, path, out);
  }
};

}  // namespace

const LogSource* NewFlightRecorderSource() {
  static const FlightRecorderSource source;
  return &source;
}

}  // namespace titan::diagnose
