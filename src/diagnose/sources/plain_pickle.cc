#include "src/diagnose/sources/plain_pickle.h"

#include <cmath>
#include <cstring>
#include <unordered_map>

#include <fmt/format.h>

#include "src/base/text.h"

namespace titan::diagnose {

// The pickle virtual machine, restricted to plain values.
class PickleMachine {
 public:
  PickleMachine(std::string_view data, std::string_view what, int64_t max_nodes, PickleTree* tree)
      : data_(data), what_(what), max_nodes_(max_nodes), t_(*tree) {}

  Status Run() {
    while (true) {
      if (at_ >= data_.size()) return Fail("the pickle ends without STOP (truncated file?)");
      op_at_ = at_;
      const unsigned char op = static_cast<unsigned char>(data_[at_++]);
      op_ = op;
      Status s = Step(op);
      if (!s.ok()) return s;
      if (stopped_) return OkStatus();
    }
  }

 private:
  using Id = PickleTree::Id;
  using Kind = PickleTree::Kind;
  static constexpr Id kMark = 0xffffffffu;        // a MARK on the stack (Python keeps a metastack)
  static constexpr Id kGlobalBase = 0xfffffff0u;  // the accepted globals, as stack values

  enum Global : Id { kBuildList = kGlobalBase, kOrderedDict };

  Status Fail(std::string why) const {
    return InvalidArgumentError(fmt::format(
        "{}: not a plain-value pickle at byte {} (opcode 0x{:02x}): {}", what_, op_at_, op_, why));
  }

  Result<std::string_view> Take(size_t n) {
    if (n > data_.size() - at_)
      return Fail(fmt::format("{} bytes announced, {} left", n, data_.size() - at_));
    std::string_view s = data_.substr(at_, n);
    at_ += n;
    return s;
  }
  Result<uint64_t> Uint(size_t bytes) {
    TITAN_ASSIGN_OR_RETURN(std::string_view s, Take(bytes));
    uint64_t v = 0;
    for (size_t i = bytes; i-- > 0;) v = (v << 8) | static_cast<unsigned char>(s[i]);
    return v;
  }
  Result<std::string_view> Line() {
    const void* nl = std::memchr(data_.data() + at_, '\n', data_.size() - at_);
    if (nl == nullptr) return Fail("a text argument without its newline");
    size_t n = static_cast<const char*>(nl) - (data_.data() + at_);
    std::string_view s = data_.substr(at_, n);
    at_ += n + 1;
    return s;
  }

  static PickleTree::Node Scalar(Kind kind, int64_t i = 0, double d = 0) {
    PickleTree::Node n;
    n.kind = kind;
    n.i = i;
    n.d = d;
    return n;
  }
  Result<Id> New(PickleTree::Node n) {
    if (static_cast<int64_t>(t_.nodes_.size()) >= max_nodes_) {
      return Fail(fmt::format("more than {} values", max_nodes_));
    }
    t_.nodes_.push_back(n);
    return static_cast<Id>(t_.nodes_.size() - 1);
  }
  Status Push(Result<Id> id) {
    if (!id.ok()) return id.status();
    stack_.push_back(*id);
    return OkStatus();
  }
  Status PushInt(int64_t v) { return Push(New(Scalar(Kind::kInt, v))); }
  Status PushString(std::string_view s, Kind kind = Kind::kString) {
    PickleTree::Node n;
    n.kind = kind;
    n.s = s;
    return Push(New(n));
  }
  Result<Id> Pop() {
    if (stack_.empty() || stack_.back() == kMark) return Fail("the stack is empty");
    Id v = stack_.back();
    stack_.pop_back();
    return v;
  }
  // The items above the topmost MARK, which is removed.
  Result<std::vector<Id>> PopMark() {
    size_t m = stack_.size();
    while (m > 0 && stack_[m - 1] != kMark) --m;
    if (m == 0) return Fail("no MARK to pop to");
    std::vector<Id> items(stack_.begin() + static_cast<std::ptrdiff_t>(m), stack_.end());
    stack_.resize(m - 1);
    return items;
  }
  bool IsKind(Id id, Kind kind) const {
    return id < t_.nodes_.size() && id != 0 && t_.nodes_[id].kind == kind;
  }
  Status Append(Id container, Id value) {
    if (value >= kGlobalBase) return Fail("a class object inside a container");
    if (t_.slots_.size() >= 0xfffffff0u) return Fail("too many items");
    t_.slots_.push_back({value, 0});
    const uint32_t slot = static_cast<uint32_t>(t_.slots_.size() - 1);
    PickleTree::Node& c = t_.nodes_[container];
    if (c.first == 0) {
      c.first = slot;
    } else {
      t_.slots_[c.last].next = slot;
    }
    c.last = slot;
    ++c.count;
    return OkStatus();
  }
  Result<Id> NewContainer(Kind kind, const std::vector<Id>& items) {
    PickleTree::Node n;
    n.kind = kind;
    TITAN_ASSIGN_OR_RETURN(Id id, New(n));
    for (Id v : items) TITAN_RETURN_IF_ERROR(Append(id, v));
    return id;
  }
  Status Memoize(uint64_t index) {
    if (stack_.empty() || stack_.back() == kMark) return Fail("memoizing an empty stack");
    memo_[index] = stack_.back();
    return OkStatus();
  }
  Status Recall(uint64_t index) {
    auto it = memo_.find(index);
    if (it == memo_.end()) return Fail(fmt::format("memo entry {} was never stored", index));
    stack_.push_back(it->second);
    return OkStatus();
  }
  Status Global(std::string_view module, std::string_view name) {
    if (module == "torch.jit._pickle" &&
        (name == "build_intlist" || name == "build_doublelist" || name == "build_boollist")) {
      stack_.push_back(kBuildList);
      return OkStatus();
    }
    if (module == "collections" && name == "OrderedDict") {
      stack_.push_back(kOrderedDict);
      return OkStatus();
    }
    return Fail(
        fmt::format("refusing to load {}.{}: only plain values are read (a Flight "
                    "Recorder dump holds no objects)",
                    Excerpt(module, 60), Excerpt(name, 60)));
  }
  Status Reduce() {
    TITAN_ASSIGN_OR_RETURN(Id args, Pop());
    TITAN_ASSIGN_OR_RETURN(Id callable, Pop());
    if (callable < kGlobalBase || !IsKind(args, Kind::kList)) {
      return Fail("REDUCE of something other than an accepted list or dict builder");
    }
    std::vector<Id> argv = t_.Items(args);
    if (callable == kBuildList) {
      if (argv.size() != 1 || !IsKind(argv[0], Kind::kList))
        return Fail("build_*list needs one list");
      stack_.push_back(argv[0]);
      return OkStatus();
    }
    // OrderedDict() or OrderedDict([(k, v), ...]).
    PickleTree::Node n;
    n.kind = Kind::kDict;
    TITAN_ASSIGN_OR_RETURN(Id dict, New(n));
    if (!argv.empty()) {
      if (!IsKind(argv[0], Kind::kList)) return Fail("OrderedDict needs a list of pairs");
      for (Id pair : t_.Items(argv[0])) {
        std::vector<Id> kv = IsKind(pair, Kind::kList) ? t_.Items(pair) : std::vector<Id>{};
        if (kv.size() != 2) return Fail("OrderedDict needs (key, value) pairs");
        TITAN_RETURN_IF_ERROR(Append(dict, kv[0]));
        TITAN_RETURN_IF_ERROR(Append(dict, kv[1]));
      }
    }
    stack_.push_back(dict);
    return OkStatus();
  }
  Status SetItems(const std::vector<Id>& kv) {
    if (kv.size() % 2 != 0) return Fail("SETITEMS with an odd number of values");
    TITAN_ASSIGN_OR_RETURN(Id dict, Pop());
    if (!IsKind(dict, Kind::kDict)) return Fail("SETITEM(S) on something not a dict");
    for (Id v : kv) TITAN_RETURN_IF_ERROR(Append(dict, v));
    stack_.push_back(dict);
    return OkStatus();
  }
  // Python's repr of a str/bytes in protocol 0 ("'abc'" with backslash escapes).
  Result<std::string_view> Unquote(std::string_view text) {
    if (text.size() < 2 || (text.front() != '\'' && text.front() != '"') ||
        text.back() != text.front()) {
      return Fail("a STRING argument that is not quoted");
    }
    return Unescape(text.substr(1, text.size() - 2));
  }
  // Backslash escapes: \n \t \r \xNN, and a backslash before any other byte keeps that byte.
  std::string_view Unescape(std::string_view s) {
    if (s.find('\\') == std::string_view::npos) return s;
    auto hex = [](char h) {
      return h >= '0' && h <= '9'                     ? h - '0'
             : (h | 0x20) >= 'a' && (h | 0x20) <= 'f' ? (h | 0x20) - 'a' + 10
                                                      : -1;
    };
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] != '\\' || i + 1 == s.size()) {
        out += s[i];
        continue;
      }
      const char c = s[++i];
      if (c == 'n') {
        out += '\n';
      } else if (c == 't') {
        out += '\t';
      } else if (c == 'r') {
        out += '\r';
      } else if (c == 'x' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
        out += static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2]));
        i += 2;
      } else {
        out += c;
      }
    }
    t_.decoded_.push_back(std::move(out));
    return t_.decoded_.back();
  }

  Status Step(unsigned char op) {
    switch (op) {
      case 0x80:  // PROTO
        return Take(1).status();
      case 0x95:  // FRAME
        return Take(8).status();
      case '.':  // STOP
        if (stack_.size() != 1 || stack_.back() >= kGlobalBase)
          return Fail("STOP with a stack that is not one value");
        t_.root_ = stack_.back();
        stopped_ = true;
        return OkStatus();
      case '(':  // MARK
        stack_.push_back(kMark);
        return OkStatus();
      case '0':  // POP
        if (stack_.empty()) return Fail("POP of an empty stack");
        stack_.pop_back();
        return OkStatus();
      case '1':  // POP_MARK
        return PopMark().status();
      case '2':  // DUP
        if (stack_.empty() || stack_.back() == kMark) return Fail("DUP of an empty stack");
        stack_.push_back(stack_.back());
        return OkStatus();
      case 'N':
        return Push(New(Scalar(Kind::kNone)));
      case 0x88:
        return Push(New(Scalar(Kind::kBool, 1)));
      case 0x89:
        return Push(New(Scalar(Kind::kBool, 0)));
      case 'I': {  // INT (text; "00"/"01" are False/True)
        TITAN_ASSIGN_OR_RETURN(std::string_view s, Line());
        if (s == "00" || s == "01") return Push(New(Scalar(Kind::kBool, s == "01")));
        int64_t v;
        if (!ParseInt64(s, &v)) return Fail("INT argument is not a number");
        return PushInt(v);
      }
      case 'L': {  // LONG (text, trailing L)
        TITAN_ASSIGN_OR_RETURN(std::string_view s, Line());
        if (!s.empty() && s.back() == 'L') s.remove_suffix(1);
        int64_t v;
        if (ParseInt64(s, &v)) return PushInt(v);
        double d;
        if (!ParseDouble(s, &d)) return Fail("LONG argument is not a number");
        return Push(New(Scalar(Kind::kFloat, 0, d)));
      }
      case 'J': {
        TITAN_ASSIGN_OR_RETURN(uint64_t v, Uint(4));
        return PushInt(static_cast<int32_t>(static_cast<uint32_t>(v)));
      }
      case 'K': {
        TITAN_ASSIGN_OR_RETURN(uint64_t v, Uint(1));
        return PushInt(static_cast<int64_t>(v));
      }
      case 'M': {
        TITAN_ASSIGN_OR_RETURN(uint64_t v, Uint(2));
        return PushInt(static_cast<int64_t>(v));
      }
      case 0x8a:    // LONG1
      case 0x8b: {  // LONG4
        TITAN_ASSIGN_OR_RETURN(uint64_t n, Uint(op == 0x8a ? 1 : 4));
        TITAN_ASSIGN_OR_RETURN(std::string_view b, Take(n));
        if (n == 0) return PushInt(0);
        if (n <= 8) {
          uint64_t v = 0;
          for (size_t i = n; i-- > 0;) v = (v << 8) | static_cast<unsigned char>(b[i]);
          if (n < 8 && (static_cast<unsigned char>(b[n - 1]) & 0x80)) v |= ~uint64_t{0} << (8 * n);
          return PushInt(static_cast<int64_t>(v));
        }
        double d = 0;
        for (size_t i = n; i-- > 0;) d = d * 256 + static_cast<unsigned char>(b[i]);
        if (static_cast<unsigned char>(b[n - 1]) & 0x80)
          d -= std::ldexp(1.0, static_cast<int>(8 * n));
        return Push(New(Scalar(Kind::kFloat, 0, d)));
      }
      case 'F': {
        TITAN_ASSIGN_OR_RETURN(std::string_view s, Line());
        double d;
        if (!ParseDouble(s, &d)) return Fail("FLOAT argument is not a number");
        return Push(New(Scalar(Kind::kFloat, 0, d)));
      }
      case 'G': {
        TITAN_ASSIGN_OR_RETURN(std::string_view b, Take(8));
        uint64_t bits = 0;
        for (char c : b) bits = (bits << 8) | static_cast<unsigned char>(c);
        double d;
        std::memcpy(&d, &bits, 8);
        return Push(New(Scalar(Kind::kFloat, 0, d)));
      }
      case 'S': {  // STRING (protocol 0 repr)
        TITAN_ASSIGN_OR_RETURN(std::string_view s, Line());
        TITAN_ASSIGN_OR_RETURN(std::string_view v, Unquote(s));
        return PushString(v);
      }
      case 'V': {  // UNICODE (raw-unicode-escape)
        TITAN_ASSIGN_OR_RETURN(std::string_view s, Line());
        return PushString(Unescape(s));
      }
      case 'T':     // BINSTRING
      case 'X':     // BINUNICODE
      case 'B':     // BINBYTES
      case 'U':     // SHORT_BINSTRING
      case 0x8c:    // SHORT_BINUNICODE
      case 'C':     // SHORT_BINBYTES
      case 0x8d:    // BINUNICODE8
      case 0x8e:    // BINBYTES8
      case 0x96: {  // BYTEARRAY8
        const size_t width = (op == 'U' || op == 0x8c || op == 'C') ? 1 : (op >= 0x8d ? 8 : 4);
        TITAN_ASSIGN_OR_RETURN(uint64_t n, Uint(width));
        TITAN_ASSIGN_OR_RETURN(std::string_view s, Take(n));
        const bool bytes = op == 'B' || op == 'C' || op == 0x8e || op == 0x96;
        return PushString(s, bytes ? Kind::kBytes : Kind::kString);
      }
      case ']':   // EMPTY_LIST
      case ')':   // EMPTY_TUPLE
      case 0x8f:  // EMPTY_SET
        return Push(NewContainer(Kind::kList, {}));
      case '}':
        return Push(NewContainer(Kind::kDict, {}));
      case 'l':     // LIST
      case 't':     // TUPLE
      case 0x91: {  // FROZENSET
        TITAN_ASSIGN_OR_RETURN(std::vector<Id> items, PopMark());
        for (Id v : items) {
          if (v >= kGlobalBase) return Fail("a class object inside a container");
        }
        return Push(NewContainer(Kind::kList, items));
      }
      case 0x85:
      case 0x86:
      case 0x87: {  // TUPLE1..3
        const size_t n = op - 0x84;
        if (stack_.size() < n) return Fail("TUPLEn with too few values");
        std::vector<Id> items(stack_.end() - static_cast<std::ptrdiff_t>(n), stack_.end());
        for (Id v : items) {
          if (v == kMark || v >= kGlobalBase) return Fail("TUPLEn over a MARK or class");
        }
        stack_.resize(stack_.size() - n);
        return Push(NewContainer(Kind::kList, items));
      }
      case 'd': {  // DICT
        TITAN_ASSIGN_OR_RETURN(std::vector<Id> items, PopMark());
        if (items.size() % 2 != 0) return Fail("DICT with an odd number of values");
        return Push(NewContainer(Kind::kDict, items));
      }
      case 'a': {  // APPEND
        TITAN_ASSIGN_OR_RETURN(Id v, Pop());
        if (stack_.empty() || !IsKind(stack_.back(), Kind::kList))
          return Fail("APPEND to something not a list");
        return Append(stack_.back(), v);
      }
      case 'e':     // APPENDS
      case 0x90: {  // ADDITEMS
        TITAN_ASSIGN_OR_RETURN(std::vector<Id> items, PopMark());
        if (stack_.empty() || !IsKind(stack_.back(), Kind::kList))
          return Fail("APPENDS to something not a list");
        for (Id v : items) TITAN_RETURN_IF_ERROR(Append(stack_.back(), v));
        return OkStatus();
      }
      case 's': {  // SETITEM
        TITAN_ASSIGN_OR_RETURN(Id v, Pop());
        TITAN_ASSIGN_OR_RETURN(Id k, Pop());
        return SetItems({k, v});
      }
      case 'u': {  // SETITEMS
        TITAN_ASSIGN_OR_RETURN(std::vector<Id> items, PopMark());
        return SetItems(items);
      }
      case 'p': {  // PUT
        TITAN_ASSIGN_OR_RETURN(std::string_view s, Line());
        int64_t v;
        if (!ParseInt64(s, &v) || v < 0) return Fail("PUT index is not a number");
        return Memoize(static_cast<uint64_t>(v));
      }
      case 'q': {
        TITAN_ASSIGN_OR_RETURN(uint64_t v, Uint(1));
        return Memoize(v);
      }
      case 'r': {
        TITAN_ASSIGN_OR_RETURN(uint64_t v, Uint(4));
        return Memoize(v);
      }
      case 0x94:  // MEMOIZE
        return Memoize(memo_.size());
      case 'g': {
        TITAN_ASSIGN_OR_RETURN(std::string_view s, Line());
        int64_t v;
        if (!ParseInt64(s, &v) || v < 0) return Fail("GET index is not a number");
        return Recall(static_cast<uint64_t>(v));
      }
      case 'h': {
        TITAN_ASSIGN_OR_RETURN(uint64_t v, Uint(1));
        return Recall(v);
      }
      case 'j': {
        TITAN_ASSIGN_OR_RETURN(uint64_t v, Uint(4));
        return Recall(v);
      }
      case 'c': {  // GLOBAL "module\nname\n"
        TITAN_ASSIGN_OR_RETURN(std::string_view module, Line());
        TITAN_ASSIGN_OR_RETURN(std::string_view name, Line());
        return Global(module, name);
      }
      case 0x93: {  // STACK_GLOBAL
        TITAN_ASSIGN_OR_RETURN(Id name, Pop());
        TITAN_ASSIGN_OR_RETURN(Id module, Pop());
        if (!IsKind(name, Kind::kString) || !IsKind(module, Kind::kString)) {
          return Fail("STACK_GLOBAL needs two strings");
        }
        return Global(t_.nodes_[module].s, t_.nodes_[name].s);
      }
      case 'R':
        return Reduce();
      case 'b':
        return Fail("BUILD (object state): refused, only plain values are read");
      case 'i':
      case 'o':
      case 0x81:
      case 0x92:
        return Fail("object construction (INST/OBJ/NEWOBJ): refused, only plain values are read");
      case 'P':
      case 'Q':
        return Fail("persistent id: refused, only plain values are read");
      case 0x82:
      case 0x83:
      case 0x84:
        return Fail("extension registry code: refused, only plain values are read");
      case 0x97:
      case 0x98:
        return Fail("out-of-band buffer: refused");
      default:
        return Fail("unknown opcode");
    }
  }

  std::string_view data_;
  std::string_view what_;
  int64_t max_nodes_;
  PickleTree& t_;
  size_t at_ = 0, op_at_ = 0;
  unsigned op_ = 0;
  bool stopped_ = false;
  std::vector<Id> stack_;
  std::unordered_map<uint64_t, Id> memo_;
};

std::vector<PickleTree::Id> PickleTree::Items(Id container) const {
  std::vector<Id> out;
  if (container == 0 || container >= nodes_.size()) return out;
  const Node& c = nodes_[container];
  if (c.kind != Kind::kList && c.kind != Kind::kDict) return out;
  out.reserve(c.count);
  for (uint32_t s = c.first; s != 0; s = slots_[s].next) out.push_back(slots_[s].value);
  return out;
}

PickleTree::Id PickleTree::Get(Id dict, std::string_view key) const {
  if (dict == 0 || dict >= nodes_.size() || nodes_[dict].kind != Kind::kDict) return 0;
  for (uint32_t s = nodes_[dict].first; s != 0;) {
    const uint32_t value_slot = slots_[s].next;
    if (value_slot == 0) return 0;
    const Node& k = nodes_[slots_[s].value];
    if (k.kind == Kind::kString && k.s == key) return slots_[value_slot].value;
    s = slots_[value_slot].next;
  }
  return 0;
}

Result<nlohmann::json> PickleTree::ToJson(Id id, int max_depth) const {
  if (max_depth < 0)
    return InvalidArgumentError("pickle nested too deep (or a container holds itself)");
  const Node& n = nodes_[id];
  switch (n.kind) {
    case Kind::kNone:
      return nlohmann::json(nullptr);
    case Kind::kBool:
      return nlohmann::json(n.i != 0);
    case Kind::kInt:
      return nlohmann::json(n.i);
    case Kind::kFloat:
      return nlohmann::json(n.d);
    case Kind::kString:
    case Kind::kBytes:
      return nlohmann::json(std::string(n.s));
    case Kind::kList: {
      nlohmann::json a = nlohmann::json::array();
      for (Id item : Items(id)) {
        TITAN_ASSIGN_OR_RETURN(nlohmann::json v, ToJson(item, max_depth - 1));
        a.push_back(std::move(v));
      }
      return a;
    }
    case Kind::kDict: {
      nlohmann::json o = nlohmann::json::object();
      std::vector<Id> kv = Items(id);
      for (size_t i = 0; i + 1 < kv.size(); i += 2) {
        const Node& k = nodes_[kv[i]];
        std::string key = k.kind == Kind::kString || k.kind == Kind::kBytes ? std::string(k.s)
                          : k.kind == Kind::kInt                            ? std::to_string(k.i)
                                                                            : "?";
        TITAN_ASSIGN_OR_RETURN(nlohmann::json v, ToJson(kv[i + 1], max_depth - 1));
        o[key] = std::move(v);
      }
      return o;
    }
  }
  return nlohmann::json(nullptr);
}

Result<PickleTree> ReadPlainPickle(std::string_view data, std::string_view what,
                                   int64_t max_nodes) {
  PickleTree tree;
  PickleMachine m(data, what, max_nodes, &tree);
  TITAN_RETURN_IF_ERROR(m.Run());
  return tree;
}

bool LooksLikePickle(std::string_view data) {
  return data.size() >= 3 && static_cast<unsigned char>(data[0]) == 0x80 &&
         static_cast<unsigned char>(data[1]) >= 2 && static_cast<unsigned char>(data[1]) <= 5;
}

}  // namespace titan::diagnose
