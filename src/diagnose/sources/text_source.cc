// The line-log reader: any text log, read in bounded chunks. Each chunk's complete lines are
// scanned at once for candidate lines (LineMatcher: Hyperscan), and only those are looked at
// line by line (RE2, the rules' refiners). A few KiB of the lines before a chunk are kept so
// that a rule can look back (a torchrun summary's fields, a traceback's last frame) across
// chunk boundaries. A line longer than ReadLimits::max_line_bytes is analysed up to there and
// the rest skipped; a file larger than max_file_bytes is read from its start and its end.
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>

#include <fmt/format.h>

#include "src/diagnose/line_matcher.h"
#include "src/diagnose/log_time.h"
#include "src/diagnose/sources/source.h"

namespace titan::diagnose {
namespace {

constexpr size_t kHistoryBytes = 16 * 1024;       // kept before each chunk for look-backs
constexpr size_t kMarkerSampleBytes = 64 * 1024;  // markers counted to name a file's kind
constexpr int kTimeLookback = 6;                  // lines searched for a time when a line has none

// Previous lines within [floor, line) of one buffer.
class BufferLookback final : public Lookback {
 public:
  BufferLookback(const char* floor, const char* line) : floor_(floor), line_(line) {}
  std::string_view Line(int back) const override {
    const char* end = line_;  // one past the '\n' that ends the wanted line, walking back
    for (int i = 0; i < back; ++i) {
      if (end <= floor_) return {};
      const char* nl = end - 1;  // the '\n' ending the previous line
      const void* start =
          nl > floor_ ? memrchr(floor_, '\n', static_cast<size_t>(nl - floor_)) : nullptr;
      const char* begin = start == nullptr ? floor_ : static_cast<const char*>(start) + 1;
      if (i + 1 == back) {
        std::string_view l(begin, static_cast<size_t>(nl - begin));
        if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
        return l;
      }
      end = begin;
    }
    return {};
  }

 private:
  const char* floor_;
  const char* line_;
};

class TextReader {
 public:
  TextReader(const ReadLimits& limits, SourceOutput* out)
      : limits_(limits), out_(out), matcher_(LineMatcher::Default()) {}

  // Reads text already in memory (records a structured reader renders as lines).
  Status ReadMemory(std::string_view text) {
    TITAN_RETURN_IF_ERROR(Start());
    line_numbers_ = true;
    Feed(text);
    if (buf_.size() > history_) Process(buf_.size(), /*final=*/true);
    Finish();
    return OkStatus();
  }

  Status Read(int fd, int64_t size) {
    TITAN_RETURN_IF_ERROR(Start());
    if (size <= limits_.max_file_bytes) {
      TITAN_RETURN_IF_ERROR(ReadRegion(fd, 0, size, /*line_numbers=*/true));
    } else {
      const int64_t half = limits_.max_file_bytes / 2;
      TITAN_RETURN_IF_ERROR(ReadRegion(fd, 0, half, true));
      out_->file.notes.push_back(fmt::format(
          "{} bytes in the middle (offsets {}..{}) were not read: the file is larger than the "
          "{}-byte limit (--max-file-bytes), so its start and its end were read; lines after "
          "the gap have no line number",
          size - 2 * half, half, size - half, limits_.max_file_bytes));
      TITAN_RETURN_IF_ERROR(ReadRegion(fd, size - half, size, false));
    }
    Finish();
    return OkStatus();
  }

 private:
  Status Start() {
    auto scratch = matcher_.NewScratch();
    if (!scratch.ok()) return scratch.status();
    scratch_ = std::move(scratch).value();
    return OkStatus();
  }

  // Reads [begin, end) of the file in chunks.
  Status ReadRegion(int fd, int64_t begin, int64_t end, bool line_numbers) {
    line_numbers_ = line_numbers;
    buf_.clear();
    history_ = 0;
    skipping_ = begin > 0;  // a region that starts mid-file starts mid-line
    pending_offset_ = begin;
    // Not zeroed (pread fills it), and no larger than the region: zeroing 4 MiB for each of a
    // thousand 1 MB logs cost more than reading them.
    const size_t chunk_size = static_cast<size_t>(std::min<int64_t>(
        std::max<int64_t>(end - begin, 1), static_cast<int64_t>(limits_.chunk_bytes)));
    std::unique_ptr<char[]> chunk = std::make_unique_for_overwrite<char[]>(chunk_size);
    int64_t at = begin;
    while (at < end) {
      const size_t want = static_cast<size_t>(std::min<int64_t>(end - at, chunk_size));
      ssize_t n = ::pread(fd, chunk.get(), want, at);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        out_->file.notes.push_back(
            fmt::format("read error at byte {}: {} (the rest was not read)", at, strerror(errno)));
        break;
      }
      if (n == 0) break;  // the file shrank
      at += n;
      out_->file.bytes_read += n;
      Feed(std::string_view(chunk.get(), static_cast<size_t>(n)));
    }
    // The last line, without a '\n'.
    if (buf_.size() > history_) Process(buf_.size(), /*final=*/true);
    return OkStatus();
  }

  // Appends bytes, processing every complete line.
  void Feed(std::string_view data) {
    if (skipping_) {
      // The rest of a line too long to keep (or a region's partial first line): the part
      // analysed (if any) was counted as a line already.
      const void* nl = std::memchr(data.data(), '\n', data.size());
      const size_t skip =
          nl == nullptr ? data.size() : static_cast<const char*>(nl) - data.data() + 1;
      pending_offset_ += static_cast<int64_t>(skip);
      data.remove_prefix(skip);
      if (nl == nullptr) return;
      skipping_ = false;
    }
    buf_.append(data);
    const size_t pending = buf_.size() - history_;
    const void* last_nl = pending > 0 ? memrchr(buf_.data() + history_, '\n', pending) : nullptr;
    if (last_nl != nullptr) {
      Process(static_cast<const char*>(last_nl) - buf_.data() + 1, false);
    }
    if (buf_.size() - history_ > limits_.max_line_bytes) {
      // One line longer than the limit: analyse its head, skip the rest of it.
      const size_t keep = history_ + limits_.max_line_bytes;
      const int64_t dropped = static_cast<int64_t>(buf_.size() - keep);
      buf_.resize(keep);
      ++long_lines_;
      Process(buf_.size(), /*final=*/true);
      pending_offset_ += dropped;
      skipping_ = true;
    }
  }

  // Analyses buf_[history_, upto): whole lines (or, when `final`, what is left).
  void Process(size_t upto, bool final) {
    std::string_view region(buf_.data() + history_, upto - history_);
    candidates_.clear();
    CountMarkers(region);
    Status scanned = matcher_.Scan(region, scratch_, &candidates_);
    if (!scanned.ok()) {
      out_->file.notes.push_back(std::string(scanned.message()));
      candidates_.clear();
    }
    size_t counted = 0;  // bytes of region whose newlines are counted into line_no_
    int64_t newlines = 0;
    for (const CandidateLine& c : candidates_) {
      const int64_t k = CountNewlines(region.data() + counted, c.begin - counted);
      line_no_ += k;
      newlines += k;
      counted = c.begin;
      std::string_view line = region.substr(c.begin, c.end - c.begin);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      BufferLookback before(buf_.data(), region.data() + c.begin);
      OnLine(line, c.rules, line_numbers_ ? line_no_ + 1 : 0,
             pending_offset_ + static_cast<int64_t>(c.begin), before);
    }
    const int64_t k = CountNewlines(region.data() + counted, region.size() - counted);
    line_no_ += k;
    newlines += k;
    if (final && !region.empty() && region.back() != '\n') {
      ++line_no_;
      ++newlines;
    }
    lines_seen_ += newlines;
    pending_offset_ += static_cast<int64_t>(region.size());
    // Keep the last lines (at most kHistoryBytes, whole lines) as history for look-backs.
    size_t keep_from = upto > kHistoryBytes ? upto - kHistoryBytes : 0;
    if (keep_from > 0) {
      const void* nl = std::memchr(buf_.data() + keep_from, '\n', upto - keep_from);
      keep_from = nl == nullptr ? upto : static_cast<const char*>(nl) - buf_.data() + 1;
    }
    buf_.erase(0, keep_from);
    history_ = upto - keep_from;
  }

  // The file's kind is what the markers of its first kMarkerSampleBytes (whole lines) say; a file
  // with none there is counted on until one shows. Markers match nearly every line of a rank's
  // log, and counting them over every byte was two thirds of the scanning time.
  void CountMarkers(std::string_view region) {
    const bool sampling = marker_bytes_ < kMarkerSampleBytes;
    if (!sampling && marker_seen_) return;
    size_t n = region.size();
    const size_t budget = sampling ? kMarkerSampleBytes - marker_bytes_ : n;
    if (n > budget) {
      const void* nl = std::memchr(region.data() + budget, '\n', n - budget);
      if (nl != nullptr) n = static_cast<const char*>(nl) - region.data() + 1;
    }
    Status counted = matcher_.CountMarkers(region.substr(0, n), scratch_, &marker_lines_);
    if (!counted.ok()) out_->file.notes.push_back(std::string(counted.message()));
    marker_bytes_ += n;
    for (int64_t lines : marker_lines_) marker_seen_ |= lines > 0;
  }

  LogTime TimeOf(std::string_view line, const Lookback& before) {
    LogTime t = ParseLineTime(line);
    if (t.kind != ClockKind::kNone) {
      last_time_ = t;
      return t;
    }
    for (int back = 1; back <= kTimeLookback; ++back) {
      std::string_view prev = before.Line(back);
      if (prev.data() == nullptr) break;
      t = ParseLineTime(prev);
      if (t.kind != ClockKind::kNone) return t;
    }
    return last_time_;
  }

  void OnLine(std::string_view line, const std::bitset<kMaxLineRules>& rules, int64_t line_no,
              int64_t offset, const Lookback& before) {
    bool found = false;
    for (size_t i = 0; i < matcher_.size(); ++i) {
      if (!rules.test(i)) continue;
      const LineRule& rule = matcher_.rule(i);
      if (found && rule.role == RuleRole::kFinding) continue;
      if (!matcher_.Confirm(i, line, &groups_)) continue;
      switch (rule.role) {
        case RuleRole::kMarker:  // counted by Scan (marker_lines_), never a candidate
          continue;
        case RuleRole::kHost:
          if (host_.empty() && !groups_.empty()) host_ = std::string(groups_[0]);
          ++family_counts_[static_cast<int>(rule.family)];
          continue;
        case RuleRole::kRankGpu: {
          std::string_view host;
          int64_t pid = -1;
          ParseNcclPrefix(line, &host, &pid);
          RankGpu rg{std::string(host), BusIdToPci(groups_.back()), CaptureInt(groups_[0])};
          if (!rg.gpu.empty() && rg.rank >= 0) out_->rank_gpus.push_back(std::move(rg));
          ++family_counts_[static_cast<int>(rule.family)];
          continue;
        }
        case RuleRole::kChain:
          chain_pending_ = true;
          continue;
        case RuleRole::kFileRank:
          file_rank_ = CaptureInt(groups_[0]);
          out_->pid_ranks.push_back({"", CaptureInt(groups_[1]), file_rank_});
          if (LogTime t = ParseLineTime(line); t.kind != ClockKind::kNone) last_time_ = t;
          ++family_counts_[static_cast<int>(rule.family)];
          continue;
        case RuleRole::kFinding:
          break;
      }
      Finding f = Prefilled(rule);
      RuleMatch m{line, groups_, before};
      if (rule.refine != nullptr && !rule.refine(m, &f)) continue;
      found = true;
      ++family_counts_[static_cast<int>(rule.family)];
      if (rule.id == "python_exception") {
        if (chain_pending_ && f.tier == Tier::kCause) {
          f.tier = Tier::kSymptom;
          f.detail = "raised while handling the exception above: a consequence of it";
        }
        chain_pending_ = false;
      }
      Complete(line, line_no, offset, before, &f);
      if (out_->findings.size() >= limits_.max_findings_per_file) {
        ++out_->file.findings_dropped;
        continue;
      }
      out_->findings.push_back(std::move(f));
    }
  }

  static Finding Prefilled(const LineRule& rule) {
    Finding f;
    f.rule = std::string(rule.id);
    f.fault = rule.fault;
    f.action = rule.action;
    f.tier = rule.tier;
    f.confidence = rule.confidence;
    f.blame = rule.blame;
    f.detail = std::string(rule.detail);
    return f;
  }

  void Complete(std::string_view line, int64_t line_no, int64_t offset, const Lookback& before,
                Finding* f) {
    f->evidence = LineEvidence(out_->file.path, line_no, line);
    f->evidence.offset = offset;
    f->evidence.time = TimeOf(line, before);
    std::string_view host;
    int64_t pid = -1;
    if (ParseNcclPrefix(line, &host, &pid)) {
      if (f->where.node.empty()) f->where.node = std::string(host);
      if (f->pid < 0) f->pid = pid;
    }
    if (f->where.rank < 0) f->where.rank = RankOfLine(line);
  }

  void Finish() {
    for (Finding& f : out_->findings) {
      if (f.where.node.empty() && !host_.empty()) f.where.node = host_;
      if (f.where.rank < 0 && file_rank_ >= 0) f.where.rank = file_rank_;
    }
    for (PidRank& p : out_->pid_ranks) {
      if (p.node.empty()) p.node = host_;
    }
    for (size_t i = 0; i < marker_lines_.size(); ++i) {
      family_counts_[static_cast<int>(matcher_.rule(i).family)] += marker_lines_[i];
    }
    int best = -1;
    int64_t best_count = 0;
    for (int i = 0; i < kFamilyCount; ++i) {
      if (family_counts_[i] > best_count) {
        best = i;
        best_count = family_counts_[i];
      }
    }
    out_->file.kind = best < 0 ? "unknown" : std::string(FamilyKind(static_cast<Family>(best)));
    if (best < 0) out_->file.notes.push_back("text with no line titan recognises");
    out_->file.lines = lines_seen_;
    out_->file.findings = static_cast<int64_t>(out_->findings.size());
    if (long_lines_ > 0) {
      out_->file.notes.push_back(fmt::format(
          "{} line(s) longer than {} bytes: each was analysed up to there (--max-line-bytes)",
          long_lines_, limits_.max_line_bytes));
    }
  }

  const ReadLimits& limits_;
  SourceOutput* out_;
  const LineMatcher& matcher_;
  LineMatcher::Scratch scratch_;
  std::string buf_;
  size_t history_ = 0;          // buf_[0, history_) was analysed and is kept for look-backs
  int64_t pending_offset_ = 0;  // file offset of buf_[history_]
  bool skipping_ = false;       // inside a line being skipped (too long, or a region's first)
  bool line_numbers_ = true;
  int64_t line_no_ = 0;  // lines before the current position
  int64_t lines_seen_ = 0;
  int64_t long_lines_ = 0;
  std::vector<CandidateLine> candidates_;
  std::vector<std::string_view> groups_;
  std::array<int64_t, kFamilyCount> family_counts_{};
  std::vector<int64_t> marker_lines_;  // per rule: the lines each marker rule matched
  size_t marker_bytes_ = 0;            // bytes counted for markers
  bool marker_seen_ = false;
  std::string host_;
  int64_t file_rank_ = -1;  // from titan run's header
  LogTime last_time_;
  bool chain_pending_ = false;
};

class TextSource final : public LogSource {
 public:
  std::string_view name() const override { return "text"; }
  int Sniff(const FileHead& head) const override { return LooksLikeText(head.bytes) ? 1 : 0; }
  Status Read(int fd, const FileHead& head, const ReadLimits& limits,
              SourceOutput* out) const override {
    TextReader reader(limits, out);
    return reader.Read(fd, head.size);
  }
};

}  // namespace

std::vector<Finding> FindingsOfText(std::string_view text, const std::string& file) {
  SourceOutput out;
  out.file.path = file;
  const ReadLimits limits;
  TextReader reader(limits, &out);
  if (!reader.ReadMemory(text).ok()) return {};
  return std::move(out.findings);
}

const LogSource* NewTextSource() {
  static const TextSource source;
  return &source;
}

}  // namespace titan::diagnose
