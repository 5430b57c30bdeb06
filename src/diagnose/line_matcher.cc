#include "src/diagnose/line_matcher.h"

#include <hs/hs.h>
#include <re2/re2.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>

#include <fmt/format.h>

#include "src/base/check.h"

namespace titan::diagnose {
namespace {

// A pattern as the prefilter needs it: a trailing ".*" (alone or as a group's whole content)
// matches the empty string, so dropping it keeps the set of matching lines and spares Hyperscan a
// match report per character.
std::string PrefilterPattern(std::string_view pattern) {
  std::string p(pattern);
  while (true) {
    if (p.ends_with("(.*)")) {
      p.resize(p.size() - 4);
    } else if (p.ends_with(".*") && !p.ends_with("\\.*")) {
      p.resize(p.size() - 2);
    } else if (p.ends_with("(.*))")) {
      p.erase(p.size() - 5, 4);
    } else {
      break;
    }
  }
  return p;
}

}  // namespace

struct LineMatcher::Compiled {
  hs_database_t* lines_db = nullptr;    // finding and context rules
  hs_database_t* markers_db = nullptr;  // marker rules
  std::vector<std::unique_ptr<RE2>> re2;
  ~Compiled() {
    if (lines_db != nullptr) hs_free_database(lines_db);
    if (markers_db != nullptr) hs_free_database(markers_db);
  }
};

Status LineMatcher::CompileDatabase(bool markers, void** db) const {
  std::vector<const char*> expressions;
  std::vector<unsigned> flags, ids;
  for (size_t i = 0; i < rules_.size(); ++i) {
    if (markers_.test(i) != markers) continue;
    expressions.push_back(prefilter_patterns_[i].c_str());
    flags.push_back(HS_FLAG_MULTILINE);
    ids.push_back(static_cast<unsigned>(i));
  }
  hs_compile_error_t* error = nullptr;
  hs_database_t* compiled = nullptr;
  if (hs_compile_multi(expressions.data(), flags.data(), ids.data(),
                       static_cast<unsigned>(expressions.size()), HS_MODE_BLOCK, nullptr, &compiled,
                       &error) != HS_SUCCESS) {
    std::string what = error != nullptr && error->message ? error->message : "?";
    int at =
        error != nullptr && error->expression >= 0 ? static_cast<int>(ids[error->expression]) : -1;
    hs_free_compile_error(error);
    return InternalError(fmt::format("line rule {}: Hyperscan cannot compile /{}/: {}",
                                     at >= 0 ? rules_[at]->id : "?",
                                     at >= 0 ? prefilter_patterns_[at] : "", what));
  }
  *db = compiled;
  return OkStatus();
}

LineMatcher::~LineMatcher() = default;

LineMatcher::Scratch::Scratch(Scratch&& other) noexcept : scratch_(other.scratch_) {
  other.scratch_ = nullptr;
}
LineMatcher::Scratch& LineMatcher::Scratch::operator=(Scratch&& other) noexcept {
  std::swap(scratch_, other.scratch_);
  return *this;
}
LineMatcher::Scratch::~Scratch() {
  if (scratch_ != nullptr) hs_free_scratch(static_cast<hs_scratch_t*>(scratch_));
}

Result<std::unique_ptr<LineMatcher>> LineMatcher::Create() {
  std::unique_ptr<LineMatcher> m(new LineMatcher());
  m->rules_ = AllLineRules();
  if (m->rules_.size() > kMaxLineRules) {
    return InternalError(fmt::format("{} line rules, at most {}", m->rules_.size(), kMaxLineRules));
  }
  m->compiled_ = std::make_unique<Compiled>();
  RE2::Options options;
  options.set_log_errors(false);
  // Logs are bytes: Latin-1 matches any byte, so a line with invalid UTF-8 still matches.
  options.set_encoding(RE2::Options::EncodingLatin1);
  for (size_t i = 0; i < m->rules_.size(); ++i) {
    const LineRule& r = *m->rules_[i];
    auto re = std::make_unique<RE2>(re2::StringPiece(r.pattern.data(), r.pattern.size()), options);
    if (!re->ok()) {
      return InternalError(
          fmt::format("line rule {}: RE2 cannot compile /{}/: {}", r.id, r.pattern, re->error()));
    }
    m->compiled_->re2.push_back(std::move(re));
    m->prefilter_patterns_.push_back(PrefilterPattern(r.pattern));
    if (r.role == RuleRole::kMarker) m->markers_.set(i);
  }
  void* lines_db = nullptr;
  void* markers_db = nullptr;
  TITAN_RETURN_IF_ERROR(m->CompileDatabase(false, &lines_db));
  m->compiled_->lines_db = static_cast<hs_database_t*>(lines_db);
  TITAN_RETURN_IF_ERROR(m->CompileDatabase(true, &markers_db));
  m->compiled_->markers_db = static_cast<hs_database_t*>(markers_db);
  return m;
}

const LineMatcher& LineMatcher::Default() {
  static const LineMatcher* matcher = [] {
    auto m = Create();
    TITAN_CHECK(m.ok()) << m.status().ToString();
    return std::move(m).value().release();
  }();
  return *matcher;
}

Result<LineMatcher::Scratch> LineMatcher::NewScratch() const {
  Scratch s;
  hs_scratch_t* raw = nullptr;
  // One scratch serves both databases: the second call grows it to fit.
  if (hs_alloc_scratch(compiled_->lines_db, &raw) != HS_SUCCESS ||
      hs_alloc_scratch(compiled_->markers_db, &raw) != HS_SUCCESS) {
    if (raw != nullptr) hs_free_scratch(raw);
    return ResourceExhaustedError("allocating Hyperscan scratch space");
  }
  s.scratch_ = raw;
  return s;
}

namespace {

struct ScanState {
  const char* text;
  size_t size;
  std::vector<CandidateLine>* out;
  size_t first_new;                     // index in *out of this scan's first candidate
  size_t line_begin = 0, line_end = 0;  // the current candidate line
  bool have_line = false;
  bool unordered = false;
};

// The offset in the text that decides which line a match ending at `end` is on: a match ending
// at a '\n' (a pattern ending in "$" or a newline class) belongs to the line before it.
size_t LineProbe(const char* text, size_t size, size_t end) {
  return end > 0 && end <= size && text[end - 1] == '\n' ? end - 1 : end;
}

constexpr size_t kNoLine = SIZE_MAX;

struct MarkerScanState {
  const char* text;
  size_t size;
  int64_t* lines;                                 // per rule
  std::array<size_t, kMaxLineRules> counted_end;  // per rule: the end of the line last counted
};

int OnMarkerMatch(unsigned int id, unsigned long long /*from*/, unsigned long long to,
                  unsigned int /*flags*/, void* context) {
  auto* s = static_cast<MarkerScanState*>(context);
  // Hyperscan reports matches in order of their end: a match up to the end of the line the
  // marker last counted is on that line.
  const size_t probe = LineProbe(s->text, s->size, static_cast<size_t>(to));
  size_t& counted_end = s->counted_end[id];
  if (counted_end != kNoLine && probe <= counted_end) return 0;
  const void* next =
      probe < s->size ? std::memchr(s->text + probe, '\n', s->size - probe) : nullptr;
  counted_end = next == nullptr ? s->size : static_cast<const char*>(next) - s->text;
  ++s->lines[id];
  return 0;
}

int OnMatch(unsigned int id, unsigned long long /*from*/, unsigned long long to,
            unsigned int /*flags*/, void* context) {
  auto* s = static_cast<ScanState*>(context);
  size_t end = static_cast<size_t>(to);
  if (s->have_line && end >= s->line_begin && end <= s->line_end) {
    s->out->back().rules.set(id);
    return 0;
  }
  size_t probe = LineProbe(s->text, s->size, end);
  const void* nl = probe > 0 ? memrchr(s->text, '\n', probe) : nullptr;
  size_t begin = nl == nullptr ? 0 : static_cast<const char*>(nl) - s->text + 1;
  const void* next =
      begin < s->size ? std::memchr(s->text + begin, '\n', s->size - begin) : nullptr;
  size_t line_end = next == nullptr ? s->size : static_cast<const char*>(next) - s->text;
  if (s->have_line && begin < s->line_begin) s->unordered = true;
  CandidateLine c;
  c.begin = begin;
  c.end = line_end;
  c.rules.set(id);
  s->out->push_back(c);
  s->line_begin = begin;
  s->line_end = line_end;
  s->have_line = true;
  return 0;
}

}  // namespace

Status LineMatcher::CountMarkers(std::string_view text, Scratch& scratch,
                                 std::vector<int64_t>* marker_lines) const {
  if (marker_lines->size() < rules_.size()) marker_lines->resize(rules_.size());
  if (text.empty()) return OkStatus();
  if (text.size() > 0xffffffffu) return InvalidArgumentError("scan buffer larger than 4 GiB");
  MarkerScanState s{text.data(), text.size(), marker_lines->data(), {}};
  s.counted_end.fill(kNoLine);
  hs_error_t rc = hs_scan(compiled_->markers_db, text.data(), static_cast<unsigned>(text.size()), 0,
                          static_cast<hs_scratch_t*>(scratch.scratch_), OnMarkerMatch, &s);
  if (rc != HS_SUCCESS) return InternalError(fmt::format("Hyperscan scan failed ({})", rc));
  return OkStatus();
}

Status LineMatcher::Scan(std::string_view text, Scratch& scratch,
                         std::vector<CandidateLine>* out) const {
  if (text.empty()) return OkStatus();
  if (text.size() > 0xffffffffu) return InvalidArgumentError("scan buffer larger than 4 GiB");
  ScanState s{text.data(), text.size(), out, out->size()};
  hs_error_t rc = hs_scan(compiled_->lines_db, text.data(), static_cast<unsigned>(text.size()), 0,
                          static_cast<hs_scratch_t*>(scratch.scratch_), OnMatch, &s);
  if (rc != HS_SUCCESS) return InternalError(fmt::format("Hyperscan scan failed ({})", rc));
  if (s.unordered) {
    auto first = out->begin() + static_cast<std::ptrdiff_t>(s.first_new);
    std::stable_sort(first, out->end(), [](const CandidateLine& a, const CandidateLine& b) {
      return a.begin < b.begin;
    });
    // Merge entries of the same line.
    std::vector<CandidateLine> merged;
    for (auto it = first; it != out->end(); ++it) {
      if (!merged.empty() && merged.back().begin == it->begin) {
        merged.back().rules |= it->rules;
      } else {
        merged.push_back(*it);
      }
    }
    out->erase(first, out->end());
    out->insert(out->end(), merged.begin(), merged.end());
  }
  return OkStatus();
}

bool LineMatcher::Confirm(size_t index, std::string_view line,
                          std::vector<std::string_view>* groups) const {
  const RE2& re = *compiled_->re2[index];
  const int n = re.NumberOfCapturingGroups();
  re2::StringPiece pieces[24];
  if (n + 1 > 24) return false;
  if (!re.Match(re2::StringPiece(line.data(), line.size()), 0, line.size(), RE2::UNANCHORED, pieces,
                n + 1)) {
    return false;
  }
  groups->clear();
  for (int i = 1; i <= n; ++i) groups->emplace_back(pieces[i].data(), pieces[i].size());
  return true;
}

std::string LineMatcher::PatternList() const {
  std::string out;
  for (const std::string& p : prefilter_patterns_) out += p + "\n";
  return out;
}

}  // namespace titan::diagnose
