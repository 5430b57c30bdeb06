#include "src/diagnose/flight_recorder.h"

#include <algorithm>
#include <climits>
#include <functional>
#include <map>
#include <set>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace titan::diagnose {
namespace {

using Entry = FlightRecord::Entry;

// One rank's collectives of one process group, by sequence number.
struct RankView {
  const FlightRecord* record = nullptr;
  std::vector<const Entry*> by_seq;  // sorted by seq
  std::vector<size_t> signature;     // hash of op, sizes, dtypes, parallel to by_seq
  int64_t first_seq = 0, last_seq = -1;
  // Index of `seq` in by_seq, -1 if absent (sequence numbers are usually contiguous).
  int64_t IndexOf(int64_t seq) const {
    const int64_t guess = seq - first_seq;
    if (guess >= 0 && guess < static_cast<int64_t>(by_seq.size()) && by_seq[guess]->seq == seq)
      return guess;
    auto it = std::lower_bound(by_seq.begin(), by_seq.end(), seq,
                               [](const Entry* e, int64_t s) { return e->seq < s; });
    return it != by_seq.end() && (*it)->seq == seq ? it - by_seq.begin() : -1;
  }
  const Entry* Find(int64_t seq) const {
    const int64_t i = IndexOf(seq);
    return i < 0 ? nullptr : by_seq[i];
  }
};

size_t Signature(const Entry& e) {
  const std::hash<std::string> h;
  return h(e.op) ^ (h(e.sizes) * 31) ^ (h(e.dtypes) * 131);
}

std::string RankList(const std::vector<int64_t>& ranks) {
  if (ranks.size() <= 8) return fmt::format("{}", fmt::join(ranks, ","));
  return fmt::format("{},... ({} ranks)",
                     fmt::join(std::vector<int64_t>(ranks.begin(), ranks.begin() + 8), ","),
                     ranks.size());
}

Finding Base(const std::string& pg, const std::string& pg_desc, const Entry& e,
             const FlightRecord& file_of) {
  Finding f;
  f.rule = "flight_recorder";
  f.tier = Tier::kCause;
  f.evidence.file = file_of.file;
  f.evidence.line = 0;
  if (e.time_created_ns > 0) f.evidence.time = {ClockKind::kWall, e.time_created_ns};
  f.collective = fmt::format("pg {} ({}) seq {} {} sizes {} dtypes {}", pg, pg_desc, e.seq, e.op,
                             e.sizes, e.dtypes);
  return f;
}

}  // namespace

std::vector<Finding> AnalyzeFlightRecords(const std::vector<FlightRecord>& records) {
  std::vector<Finding> out;
  // Process group -> (configured ranks, description).
  std::map<std::string, std::vector<int64_t>> configured;
  std::map<std::string, std::string> descs;
  std::map<int64_t, const FlightRecord*> by_rank;
  for (const FlightRecord& r : records) {
    if (r.rank >= 0) by_rank[r.rank] = &r;
    for (const auto& [pg, ranks] : r.groups) {
      if (!configured.count(pg)) configured[pg] = ranks;
    }
  }
  // Each group's ranks' collectives.
  std::map<std::string, std::map<int64_t, RankView>> views;
  for (const FlightRecord& r : records) {
    if (r.rank < 0) continue;
    for (const Entry& e : r.entries) {
      if (e.p2p || e.seq < 0) continue;
      RankView& v = views[e.pg][r.rank];
      v.record = &r;
      v.by_seq.push_back(&e);
      if (!descs.count(e.pg)) descs[e.pg] = e.pg_desc;
    }
  }
  // Ranks of a group's configuration that left no dump.
  std::set<int64_t> reported_missing;
  for (const auto& [pg, ranks] : configured) {
    if (by_rank.empty()) break;
    for (int64_t rank : ranks) {
      if (by_rank.count(rank) || reported_missing.count(rank)) continue;
      reported_missing.insert(rank);
      Finding f;
      f.rule = "flight_recorder_missing";
      f.tier = Tier::kGeneric;
      f.fault = FaultClass::kUnknown;
      f.confidence = 0.4;
      f.where.rank = rank;
      f.blame.rank = true;
      f.evidence.file = by_rank.begin()->second->file;
      f.evidence.text = fmt::format(
          "no Flight Recorder dump from rank {} (process group {} lists it): the rank died or "
          "hung where it could not dump",
          rank, pg);
      f.detail = f.evidence.text;
      out.push_back(std::move(f));
    }
  }
  for (auto& [pg, ranks] : views) {
    for (auto& [rank, v] : ranks) {
      std::sort(v.by_seq.begin(), v.by_seq.end(),
                [](const Entry* a, const Entry* b) { return a->seq < b->seq; });
      v.first_seq = v.by_seq.front()->seq;
      v.last_seq = v.by_seq.back()->seq;
      for (const Entry* e : v.by_seq) v.signature.push_back(Signature(*e));
    }
    int64_t max_last = INT64_MIN, lo = INT64_MIN;
    for (const auto& [rank, v] : ranks) {
      max_last = std::max(max_last, v.last_seq);
      lo = std::max(lo, v.first_seq);  // below this some ring buffer lost the entries
    }
    // The first sequence number at which the ranks disagree on what was issued.
    int64_t mismatch_seq = INT64_MAX;
    std::vector<int64_t> odd_ranks;
    int64_t mismatches = 0;
    int64_t hi = INT64_MAX;
    for (const auto& [rank, v] : ranks) hi = std::min(hi, v.last_seq);
    for (int64_t seq = lo; seq <= hi; ++seq) {
      bool differ = false;
      size_t first_sig = 0;
      bool have = false;
      for (const auto& [rank, v] : ranks) {
        const int64_t i = v.IndexOf(seq);
        if (i < 0) continue;
        if (!have) {
          first_sig = v.signature[i];
          have = true;
        } else if (v.signature[i] != first_sig) {
          differ = true;
          break;
        }
      }
      if (!differ) continue;
      std::map<size_t, std::vector<int64_t>> by_sig;
      for (const auto& [rank, v] : ranks) {
        const int64_t i = v.IndexOf(seq);
        if (i >= 0) by_sig[v.signature[i]].push_back(rank);
      }
      ++mismatches;
      if (mismatch_seq != INT64_MAX) continue;
      mismatch_seq = seq;
      // A minority that differs from the majority is the suspect; an even split names no one.
      size_t largest = 0;
      for (const auto& [sig, rs] : by_sig) largest = std::max(largest, rs.size());
      for (const auto& [sig, rs] : by_sig) {
        if (rs.size() < largest) odd_ranks.insert(odd_ranks.end(), rs.begin(), rs.end());
      }
    }
    // The first sequence number some rank never issued.
    int64_t missing_seq = INT64_MAX;
    std::vector<int64_t> behind;
    for (const auto& [rank, v] : ranks) {
      if (v.last_seq < max_last) missing_seq = std::min(missing_seq, v.last_seq + 1);
    }
    for (const auto& [rank, v] : ranks) {
      if (v.last_seq + 1 == missing_seq) behind.push_back(rank);
    }
    const std::string& desc = descs[pg];
    if (missing_seq != INT64_MAX && missing_seq <= mismatch_seq) {
      // Evidence: a rank that issued the collective the others never joined.
      const Entry* issued = nullptr;
      const FlightRecord* issued_by = nullptr;
      std::vector<int64_t> joined;
      for (const auto& [rank, v] : ranks) {
        if (const Entry* e = v.Find(missing_seq)) {
          joined.push_back(rank);
          if (issued == nullptr) {
            issued = e;
            issued_by = v.record;
          }
        }
      }
      if (issued == nullptr) continue;
      Finding f = Base(pg, desc, *issued, *issued_by);
      f.fault = FaultClass::kHangCollectiveMismatch;
      f.action = Action::kFixCode;
      f.confidence = behind.size() == 1 ? 0.75 : 0.55;
      if (behind.size() == 1) {
        f.where.rank = behind.front();
        f.blame.rank = true;
      }
      const RankView& late = ranks.at(behind.front());
      const Entry* last = late.by_seq.back();
      f.evidence.text = fmt::format(
          "process group {} ({}): collective #{} {} (sizes {}, {}) was issued by rank(s) {} and "
          "never by rank(s) {}",
          pg, desc, missing_seq, issued->op, issued->sizes, issued->state, RankList(joined),
          RankList(behind));
      f.detail = fmt::format(
          "rank(s) {} never joined collective #{} of process group {} ({}): their last "
          "collective was #{} {} ({}){}; they are stuck elsewhere (their stacks say where) or "
          "took another code path",
          RankList(behind), missing_seq, pg, desc, last->seq, last->op, last->state,
          last->frame.empty() ? "" : " at " + last->frame);
      if (mismatches > 0) f.detail += fmt::format("; {} later mismatch(es) follow", mismatches);
      out.push_back(std::move(f));
      continue;
    }
    if (mismatch_seq != INT64_MAX) {
      const RankView& any = ranks.begin()->second;
      const Entry* e = any.Find(mismatch_seq);
      Finding f = Base(pg, desc, *e, *any.record);
      f.fault = FaultClass::kHangCollectiveMismatch;
      f.action = Action::kFixCode;
      f.confidence = odd_ranks.size() == 1 ? 0.75 : 0.6;
      if (odd_ranks.size() == 1) {
        f.where.rank = odd_ranks.front();
        f.blame.rank = true;
      }
      std::string variants;
      std::map<std::string, std::vector<int64_t>> by_sig;
      for (const auto& [rank, v] : ranks) {
        if (const Entry* x = v.Find(mismatch_seq)) {
          by_sig[fmt::format("{} {} {}", x->op, x->sizes, x->dtypes)].push_back(rank);
        }
      }
      for (const auto& [sig, rs] : by_sig) {
        variants += fmt::format("{}ranks {}: {}", variants.empty() ? "" : "; ", RankList(rs), sig);
      }
      f.evidence.text =
          fmt::format("process group {} ({}): collective #{} differs between ranks: {}", pg, desc,
                      mismatch_seq, variants);
      f.detail = fmt::format(
          "the ranks issued different collectives at #{} of process group {}{}: the code took "
          "different paths on different ranks; fix it{}",
          mismatch_seq, pg,
          odd_ranks.size() == 1 ? fmt::format(" (rank {} differs from the rest)", odd_ranks[0])
                                : "",
          mismatches > 1 ? fmt::format(" ({} mismatches in all)", mismatches) : "");
      out.push_back(std::move(f));
      continue;
    }
    // Every rank issued everything: the first collective not completed everywhere.
    for (int64_t seq = lo; seq <= hi; ++seq) {
      std::vector<int64_t> pending;
      const Entry* e = nullptr;
      const FlightRecord* rec = nullptr;
      for (const auto& [rank, v] : ranks) {
        const Entry* x = v.Find(seq);
        if (x == nullptr) continue;
        if (x->state != "completed") {
          pending.push_back(rank);
          if (e == nullptr) {
            e = x;
            rec = v.record;
          }
        }
      }
      if (pending.empty()) continue;
      Finding f = Base(pg, desc, *e, *rec);
      f.tier = Tier::kGeneric;
      f.fault = FaultClass::kUnknown;
      f.confidence = 0.3;
      f.evidence.text = fmt::format(
          "process group {} ({}): every rank issued collective #{} {} (sizes {}) and it did not "
          "complete on rank(s) {}",
          pg, desc, seq, e->op, e->sizes, RankList(pending));
      f.detail =
          "the collective was joined by every rank and never finished: NCCL or the "
          "transport hung (network, a GPU fault); the kernel logs of the window say more";
      out.push_back(std::move(f));
      break;
    }
  }
  return out;
}

}  // namespace titan::diagnose
