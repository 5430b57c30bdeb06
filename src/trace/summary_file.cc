#include "src/trace/summary_file.h"

#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "src/base/atomic_file.h"
#include "src/base/env.h"
#include "src/base/json_depth.h"
#include "src/trace/importers/byte_source.h"

namespace titan::trace {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

// ---- Writing -------------------------------------------------------------------------------

// Doubles: finite ones as numbers (nlohmann writes the shortest form that reads back exactly);
// NaN as null, infinities as "inf" / "-inf" (JSON has neither).
ojson Double(double v) {
  if (std::isnan(v)) return nullptr;
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

// A step: [name, number, begin_ns, end_ns, compute_ns, exposed_comm_ns, exposed_mem_ns, idle_ns].
ojson StepRecord(const StepBreakdown& b) {
  return ojson::array({b.name, b.number, b.begin_ns, b.end_ns, b.compute_ns, b.exposed_comm_ns,
                       b.exposed_mem_ns, b.idle_ns});
}

// Collectives: "collective_groups" lists the distinct [process group, collective] pairs; a call
// is [group index, seq, start - previous call's start, end - start, step, elements], differences
// taken modulo 2^64 (the first call's start is relative to 0). `ordinal` is not stored: it is the
// call's index among the rank's calls of the same group, recomputed on reading.
void WriteCollectives(const std::vector<CollectiveCall>& calls, ojson* rank) {
  std::map<std::pair<std::string, std::string>, size_t> group_of;
  ojson groups = ojson::array();
  ojson records = ojson::array();
  uint64_t previous_start = 0;
  for (const CollectiveCall& c : calls) {
    auto [it, inserted] = group_of.emplace(std::pair{c.process_group, c.collective}, groups.size());
    if (inserted) groups.push_back(ojson::array({c.process_group, c.collective}));
    const uint64_t start = static_cast<uint64_t>(c.start_ns);
    records.push_back(ojson::array({it->second, c.seq, static_cast<int64_t>(start - previous_start),
                                    static_cast<int64_t>(static_cast<uint64_t>(c.end_ns) - start),
                                    c.step, c.elements}));
    previous_start = start;
  }
  (*rank)["collective_groups"] = std::move(groups);
  (*rank)["collectives"] = std::move(records);
}

ojson RankRecord(const RankSummary& s) {
  ojson r;
  r["rank"] = s.rank;
  r["world_size"] = s.world_size;
  r["path"] = s.path;
  r["format"] = std::string(TraceFormatName(s.format));
  r["has_gpu"] = s.has_gpu;
  r["wall_clock"] = s.wall_clock;
  r["epoch_offset_ns"] = s.epoch_offset_ns;
  r["input_bytes"] = s.input_bytes;
  r["ops"] = s.ops;
  r["warnings"] = s.warnings;
  const ImportStats& st = s.stats;
  // [events, complete, flow, metadata, other phase, unknown category, negative dur, missing]
  r["import"] = ojson::array({st.events, st.complete_events, st.flow_events, st.metadata_events,
                              st.other_phase_events, st.unknown_category, st.negative_durations,
                              st.missing_fields});
  ojson steps = ojson::array();
  for (const StepBreakdown& b : s.steps) steps.push_back(StepRecord(b));
  r["steps"] = std::move(steps);
  r["total"] = StepRecord(s.total);
  // A gap: [begin_ns, length_ns, step, next_op, launched_by, cpu_before, launch_after_gap_ns].
  ojson gaps = ojson::array();
  for (const IdleGap& g : s.top_gaps) {
    gaps.push_back(ojson::array({g.begin_ns, g.length_ns, g.step, g.next_op, g.launched_by,
                                 g.cpu_before, g.launch_after_gap_ns}));
  }
  r["gaps"] = std::move(gaps);
  const Distribution& d = s.launch_delay;  // [count, p50, p90, p99, max]
  r["launch_delay_ns"] = ojson::array({d.count, d.p50_ns, d.p90_ns, d.p99_ns, d.max_ns});
  r["dataloader_ns"] = s.dataloader_ns;
  r["verdict"] = s.verdict;
  r["evidence"] = s.evidence;
  WriteCollectives(s.collectives, &r);
  return r;
}

ojson HtaRecord(const HtaRankResult& h) {
  ojson r;
  r["rank"] = h.rank;
  r["filtered"] = h.filtered;
  r["integer_times"] = h.integer_times;
  // [idle, compute, non-compute, kernel] us, then [idle, compute, non-compute] %.
  r["temporal"] = ojson::array({Double(h.idle_us), Double(h.compute_us), Double(h.non_compute_us),
                                Double(h.kernel_us), Double(h.idle_pct), Double(h.compute_pct),
                                Double(h.non_compute_pct)});
  ojson types = ojson::array();
  for (const auto& [label, us] : h.kernel_type_us) types.push_back(ojson::array({label, us}));
  r["kernel_type_us"] = std::move(types);
  ojson kernels = ojson::array();  // [name, sum, max, min, stddev, mean, kernel type, rank]
  for (const HtaKernelRow& k : h.kernels) {
    kernels.push_back(ojson::array({k.name, Double(k.sum_us), Double(k.max_us), Double(k.min_us),
                                    Double(k.stddev), Double(k.mean_us), k.kernel_type, k.rank}));
  }
  r["kernels"] = std::move(kernels);
  ojson idle = ojson::array();  // [stream, category, idle time us, ratio]
  for (const HtaIdleRow& i : h.idle) {
    idle.push_back(ojson::array({i.stream, i.category, Double(i.idle_time_us), Double(i.ratio)}));
  }
  r["idle"] = std::move(idle);
  ojson stats = ojson::array();  // [stream, category, count, mean, std, min, p25, p50, p75, max]
  for (const HtaIdleStatsRow& i : h.idle_stats) {
    stats.push_back(
        ojson::array({i.stream, i.category, Double(i.count), Double(i.mean), Double(i.std),
                      Double(i.min), Double(i.p25), Double(i.p50), Double(i.p75), Double(i.max)}));
  }
  r["idle_stats"] = std::move(stats);
  r["comm_comp_overlap_pct"] = Double(h.comm_comp_overlap_pct);
  return r;
}

// ---- Reading -------------------------------------------------------------------------------
// A Value is one JSON value and its place in the document; the place ("ranks[2].steps[0][3]") is
// spelled out only for an error message.

struct Value {
  const json* j;
  const Value* parent = nullptr;
  const char* key = nullptr;  // member name, or nullptr for an array element
  size_t index = 0;

  std::string Where() const {
    if (parent == nullptr) return key ? key : "the document";
    std::string up = parent->parent == nullptr && parent->key == nullptr ? "" : parent->Where();
    if (key != nullptr) return up.empty() ? key : up + "." + key;
    return fmt::format("{}[{}]", up, index);
  }
  Status Bad(std::string_view what) const {
    return InvalidArgumentError(fmt::format("{}: {}", Where(), what));
  }
  size_t size() const { return j->size(); }
  Value operator[](size_t i) const { return Value{&(*j)[i], this, nullptr, i}; }
};

Result<Value> Member(const Value& v, const char* key) {
  if (!v.j->is_object()) return v.Bad("expected an object");
  auto it = v.j->find(key);
  if (it == v.j->end()) return Value{nullptr, &v, key}.Bad("missing");
  return Value{&*it, &v, key};
}

// `v` must be an array of exactly `n` elements (any length when n is 0).
Status CheckArray(const Value& v, size_t n = 0) {
  if (!v.j->is_array()) return v.Bad("expected an array");
  if (n != 0 && v.size() != n) {
    return v.Bad(fmt::format("expected {} elements, found {}", n, v.size()));
  }
  return OkStatus();
}

Status Read(const Value& v, int64_t* out) {
  if (v.j->is_number_unsigned()) {
    uint64_t u = v.j->get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return v.Bad("integer out of range");
    }
    *out = static_cast<int64_t>(u);
    return OkStatus();
  }
  if (!v.j->is_number_integer()) return v.Bad("expected an integer");
  *out = v.j->get<int64_t>();
  return OkStatus();
}

Status Read(const Value& v, uint64_t* out) {
  if (!v.j->is_number_unsigned()) return v.Bad("expected a non-negative integer");
  *out = v.j->get<uint64_t>();
  return OkStatus();
}

// An integer in [lo, hi] into a narrower type.
template <typename Int>
Status ReadInRange(const Value& v, int64_t lo, int64_t hi, Int* out) {
  int64_t i = 0;
  TITAN_RETURN_IF_ERROR(Read(v, &i));
  if (i < lo || i > hi) return v.Bad(fmt::format("{} is outside [{}, {}]", i, lo, hi));
  *out = static_cast<Int>(i);
  return OkStatus();
}

Status Read(const Value& v, int* out) { return ReadInRange(v, INT32_MIN, INT32_MAX, out); }

// Times and durations: within kMaxTraceTimeNs (src/trace/model.h), as every time titan writes
// is, so that the analyses can add and subtract them without overflow.
Status CheckTime(const Value& v, int64_t ns) {
  if (IsTraceTime(ns)) return OkStatus();
  return v.Bad(fmt::format("{} ns is outside +-2^62 ns (146 years): not a time from a trace", ns));
}
Status ReadTime(const Value& v, int64_t* out) {
  TITAN_RETURN_IF_ERROR(Read(v, out));
  return CheckTime(v, *out);
}
// A length in [0, max]: the difference of two times can exceed kMaxTraceTimeNs.
Status ReadLength(const Value& v, int64_t* out, int64_t max = INT64_MAX) {
  return ReadInRange(v, 0, max, out);
}

Status Read(const Value& v, bool* out) {
  if (!v.j->is_boolean()) return v.Bad("expected true or false");
  *out = v.j->get<bool>();
  return OkStatus();
}

Status Read(const Value& v, std::string* out) {
  if (!v.j->is_string()) return v.Bad("expected a string");
  *out = v.j->get<std::string>();
  return OkStatus();
}

Status Read(const Value& v, double* out) {
  const json& j = *v.j;
  if (j.is_null()) {
    *out = std::numeric_limits<double>::quiet_NaN();
  } else if (j.is_number()) {
    *out = j.get<double>();
  } else if (j.is_string() && (j.get_ref<const std::string&>() == "inf" ||
                               j.get_ref<const std::string&>() == "-inf")) {
    *out = (j.get_ref<const std::string&>() == "inf" ? 1 : -1) *
           std::numeric_limits<double>::infinity();
  } else {
    return v.Bad("expected a number, null (NaN), \"inf\" or \"-inf\"");
  }
  return OkStatus();
}

Status Read(const Value& v, std::vector<std::string>* out) {
  TITAN_RETURN_IF_ERROR(CheckArray(v));
  out->resize(v.size());
  for (size_t i = 0; i < v.size(); ++i) TITAN_RETURN_IF_ERROR(Read(v[i], &(*out)[i]));
  return OkStatus();
}

template <typename T>
Status ReadMember(const Value& object, const char* key, T* out) {
  TITAN_ASSIGN_OR_RETURN(Value m, Member(object, key));
  return Read(m, out);
}

// A fixed-length array record whose elements all have type T.
template <typename T>
Status ReadRecord(const Value& v, std::initializer_list<T*> fields) {
  TITAN_RETURN_IF_ERROR(CheckArray(v, fields.size()));
  size_t i = 0;
  for (T* field : fields) TITAN_RETURN_IF_ERROR(Read(v[i++], field));
  return OkStatus();
}

// A variable-length array, each element read by read(element, &out[i]).
template <typename T, typename F>
Status ReadArray(const Value& object, const char* key, std::vector<T>* out, F read) {
  TITAN_ASSIGN_OR_RETURN(Value v, Member(object, key));
  TITAN_RETURN_IF_ERROR(CheckArray(v));
  out->resize(v.size());
  for (size_t i = 0; i < v.size(); ++i) TITAN_RETURN_IF_ERROR(read(v[i], &(*out)[i]));
  return OkStatus();
}

// A step's parts (compute, exposed communication and memory, idle) each lie within its length,
// as titan computes them (the total's too: steps do not overlap).
Status ReadStep(const Value& v, StepBreakdown* b) {
  TITAN_RETURN_IF_ERROR(CheckArray(v, 8));
  TITAN_RETURN_IF_ERROR(Read(v[0], &b->name));
  TITAN_RETURN_IF_ERROR(Read(v[1], &b->number));
  TITAN_RETURN_IF_ERROR(ReadTime(v[2], &b->begin_ns));
  TITAN_RETURN_IF_ERROR(ReadTime(v[3], &b->end_ns));
  if (b->end_ns < b->begin_ns) return v[3].Bad("the step ends before it begins");
  int64_t* parts[] = {&b->compute_ns, &b->exposed_comm_ns, &b->exposed_mem_ns, &b->idle_ns};
  for (size_t i = 0; i < 4; ++i)
    TITAN_RETURN_IF_ERROR(ReadLength(v[i + 4], parts[i], b->wall_ns()));
  return OkStatus();
}

Status ReadGap(const Value& v, IdleGap* g) {
  TITAN_RETURN_IF_ERROR(CheckArray(v, 7));
  TITAN_RETURN_IF_ERROR(ReadTime(v[0], &g->begin_ns));
  TITAN_RETURN_IF_ERROR(ReadLength(v[1], &g->length_ns));
  TITAN_RETURN_IF_ERROR(Read(v[2], &g->step));
  TITAN_RETURN_IF_ERROR(Read(v[3], &g->next_op));
  TITAN_RETURN_IF_ERROR(Read(v[4], &g->launched_by));
  TITAN_RETURN_IF_ERROR(Read(v[5], &g->cpu_before));
  return Read(v[6], &g->launch_after_gap_ns);
}

Status ReadCollectives(const Value& rank, RankSummary* s) {
  using Group = std::pair<std::string, std::string>;
  std::vector<Group> groups;
  TITAN_RETURN_IF_ERROR(
      ReadArray(rank, "collective_groups", &groups, [](const Value& v, Group* g) -> Status {
        TITAN_RETURN_IF_ERROR(CheckArray(v, 2));
        TITAN_RETURN_IF_ERROR(Read(v[0], &g->first));
        return Read(v[1], &g->second);
      }));
  // Two entries with the same names would count one pair's ordinals twice.
  if (std::set<Group>(groups.begin(), groups.end()).size() != groups.size()) {
    TITAN_ASSIGN_OR_RETURN(Value v, Member(rank, "collective_groups"));
    return v.Bad("a group is listed twice");
  }
  std::vector<int64_t> ordinals(groups.size(), 0);
  uint64_t start = 0;
  return ReadArray(rank, "collectives", &s->collectives,
                   [&](const Value& v, CollectiveCall* c) -> Status {
                     TITAN_RETURN_IF_ERROR(CheckArray(v, 6));
                     size_t group = 0;
                     int64_t start_delta = 0, duration = 0;
                     TITAN_RETURN_IF_ERROR(
                         ReadInRange(v[0], 0, static_cast<int64_t>(groups.size()) - 1, &group));
                     TITAN_RETURN_IF_ERROR(Read(v[1], &c->seq));
                     TITAN_RETURN_IF_ERROR(Read(v[2], &start_delta));
                     TITAN_RETURN_IF_ERROR(ReadTime(v[3], &duration));
                     TITAN_RETURN_IF_ERROR(Read(v[4], &c->step));
                     TITAN_RETURN_IF_ERROR(Read(v[5], &c->elements));
                     c->process_group = groups[group].first;
                     c->collective = groups[group].second;
                     c->ordinal = ordinals[group]++;
                     start += static_cast<uint64_t>(start_delta);  // modulo 2^64, as written
                     c->start_ns = static_cast<int64_t>(start);
                     TITAN_RETURN_IF_ERROR(CheckTime(v[2], c->start_ns));
                     c->end_ns = c->start_ns + duration;  // both within the bound
                     return CheckTime(v[3], c->end_ns);
                   });
}

Status ReadRank(const Value& v, RankSummary* s) {
  {
    TITAN_ASSIGN_OR_RETURN(Value m, Member(v, "rank"));
    TITAN_RETURN_IF_ERROR(ReadInRange(m, 0, INT32_MAX, &s->rank));
  }
  {
    // -1: unknown; else a world that holds this rank, at most kMaxWorldSize.
    TITAN_ASSIGN_OR_RETURN(Value m, Member(v, "world_size"));
    TITAN_RETURN_IF_ERROR(ReadInRange(m, -1, kMaxWorldSize, &s->world_size));
    if (s->world_size == 0) return m.Bad("world size 0 is impossible (-1 means unknown)");
    if (s->world_size > 0 && s->rank >= s->world_size) {
      return m.Bad(fmt::format("rank {} cannot be in a world of {} ranks", s->rank, s->world_size));
    }
  }
  TITAN_RETURN_IF_ERROR(ReadMember(v, "path", &s->path));
  {
    TITAN_ASSIGN_OR_RETURN(Value m, Member(v, "format"));
    std::string format;
    TITAN_RETURN_IF_ERROR(Read(m, &format));
    if (format == TraceFormatName(TraceFormat::kKineto)) {
      s->format = TraceFormat::kKineto;
    } else if (format == TraceFormatName(TraceFormat::kLegacyAutograd)) {
      s->format = TraceFormat::kLegacyAutograd;
    } else {
      return m.Bad(fmt::format("unknown trace format \"{}\"", format));
    }
  }
  TITAN_RETURN_IF_ERROR(ReadMember(v, "has_gpu", &s->has_gpu));
  TITAN_RETURN_IF_ERROR(ReadMember(v, "wall_clock", &s->wall_clock));
  {
    TITAN_ASSIGN_OR_RETURN(Value m, Member(v, "epoch_offset_ns"));
    TITAN_RETURN_IF_ERROR(ReadTime(m, &s->epoch_offset_ns));
  }
  TITAN_RETURN_IF_ERROR(ReadMember(v, "input_bytes", &s->input_bytes));
  TITAN_RETURN_IF_ERROR(ReadMember(v, "ops", &s->ops));
  TITAN_RETURN_IF_ERROR(ReadMember(v, "warnings", &s->warnings));
  {
    TITAN_ASSIGN_OR_RETURN(Value m, Member(v, "import"));
    ImportStats& st = s->stats;
    TITAN_RETURN_IF_ERROR(
        ReadRecord<uint64_t>(m, {&st.events, &st.complete_events, &st.flow_events,
                                 &st.metadata_events, &st.other_phase_events, &st.unknown_category,
                                 &st.negative_durations, &st.missing_fields}));
  }
  TITAN_RETURN_IF_ERROR(ReadArray(v, "steps", &s->steps, ReadStep));
  {
    TITAN_ASSIGN_OR_RETURN(Value m, Member(v, "total"));
    TITAN_RETURN_IF_ERROR(ReadStep(m, &s->total));
  }
  TITAN_RETURN_IF_ERROR(ReadArray(v, "gaps", &s->top_gaps, ReadGap));
  {
    TITAN_ASSIGN_OR_RETURN(Value m, Member(v, "launch_delay_ns"));
    Distribution& d = s->launch_delay;
    TITAN_RETURN_IF_ERROR(CheckArray(m, 5));
    TITAN_RETURN_IF_ERROR(ReadLength(m[0], &d.count, INT64_MAX));
    int64_t* delays[] = {&d.p50_ns, &d.p90_ns, &d.p99_ns, &d.max_ns};  // differences of times
    for (size_t i = 0; i < 4; ++i) TITAN_RETURN_IF_ERROR(Read(m[i + 1], delays[i]));
  }
  {
    TITAN_ASSIGN_OR_RETURN(Value m, Member(v, "dataloader_ns"));
    TITAN_RETURN_IF_ERROR(ReadLength(m, &s->dataloader_ns));
  }
  TITAN_RETURN_IF_ERROR(ReadMember(v, "verdict", &s->verdict));
  TITAN_RETURN_IF_ERROR(ReadMember(v, "evidence", &s->evidence));
  return ReadCollectives(v, s);
}

Status ReadKernelRow(const Value& v, HtaKernelRow* k) {
  TITAN_RETURN_IF_ERROR(CheckArray(v, 8));
  TITAN_RETURN_IF_ERROR(Read(v[0], &k->name));
  double* doubles[] = {&k->sum_us, &k->max_us, &k->min_us, &k->stddev, &k->mean_us};
  for (size_t i = 0; i < 5; ++i) TITAN_RETURN_IF_ERROR(Read(v[i + 1], doubles[i]));
  TITAN_RETURN_IF_ERROR(Read(v[6], &k->kernel_type));
  return Read(v[7], &k->rank);
}

// The first two elements of an idle row: [stream, category (0..2), ...].
Status ReadStreamCategory(const Value& v, size_t n, int64_t* stream, int* category) {
  TITAN_RETURN_IF_ERROR(CheckArray(v, n));
  TITAN_RETURN_IF_ERROR(Read(v[0], stream));
  return ReadInRange(v[1], 0, 2, category);
}

Status ReadHta(const Value& v, HtaRankResult* h) {
  {
    TITAN_ASSIGN_OR_RETURN(Value m, Member(v, "rank"));
    TITAN_RETURN_IF_ERROR(ReadInRange(m, 0, INT32_MAX, &h->rank));
  }
  TITAN_RETURN_IF_ERROR(ReadMember(v, "filtered", &h->filtered));
  // Optional: summaries written before it existed printed every time as a float.
  if (v.j->is_object() && v.j->contains("integer_times")) {
    TITAN_RETURN_IF_ERROR(ReadMember(v, "integer_times", &h->integer_times));
  }
  {
    TITAN_ASSIGN_OR_RETURN(Value m, Member(v, "temporal"));
    TITAN_RETURN_IF_ERROR(
        ReadRecord<double>(m, {&h->idle_us, &h->compute_us, &h->non_compute_us, &h->kernel_us,
                               &h->idle_pct, &h->compute_pct, &h->non_compute_pct}));
  }
  TITAN_RETURN_IF_ERROR(ReadArray(v, "kernel_type_us", &h->kernel_type_us,
                                  [](const Value& e, std::pair<std::string, int64_t>* t) {
                                    TITAN_RETURN_IF_ERROR(CheckArray(e, 2));
                                    TITAN_RETURN_IF_ERROR(Read(e[0], &t->first));
                                    return Read(e[1], &t->second);
                                  }));
  TITAN_RETURN_IF_ERROR(ReadArray(v, "kernels", &h->kernels, ReadKernelRow));
  TITAN_RETURN_IF_ERROR(ReadArray(v, "idle", &h->idle, [](const Value& e, HtaIdleRow* r) {
    TITAN_RETURN_IF_ERROR(ReadStreamCategory(e, 4, &r->stream, &r->category));
    TITAN_RETURN_IF_ERROR(Read(e[2], &r->idle_time_us));
    return Read(e[3], &r->ratio);
  }));
  TITAN_RETURN_IF_ERROR(
      ReadArray(v, "idle_stats", &h->idle_stats, [](const Value& e, HtaIdleStatsRow* r) {
        TITAN_RETURN_IF_ERROR(ReadStreamCategory(e, 10, &r->stream, &r->category));
        double* fields[] = {&r->count, &r->mean, &r->std, &r->min,
                            &r->p25,   &r->p50,  &r->p75, &r->max};
        for (size_t i = 0; i < 8; ++i) TITAN_RETURN_IF_ERROR(Read(e[i + 2], fields[i]));
        return OkStatus();
      }));
  return ReadMember(v, "comm_comp_overlap_pct", &h->comm_comp_overlap_pct);
}

Status ReadOptions(const Value& v, SummaryFileOptions* o) {
  {
    TITAN_ASSIGN_OR_RETURN(Value m, Member(v, "top_gaps"));
    TITAN_RETURN_IF_ERROR(ReadInRange(m, 0, INT32_MAX, &o->top_gaps));
  }
  TITAN_RETURN_IF_ERROR(ReadMember(v, "hta_compat", &o->hta_compat));
  TITAN_RETURN_IF_ERROR(ReadMember(v, "hta_kernel_delay_us", &o->hta.consecutive_kernel_delay_us));
  TITAN_RETURN_IF_ERROR(ReadMember(v, "hta_num_kernels", &o->hta.num_kernels));
  return ReadMember(v, "hta_duration_ratio", &o->hta.duration_ratio);
}

Status ReadDocument(const Value& doc, NodeSummary* out) {
  {
    TITAN_ASSIGN_OR_RETURN(Value m, Member(doc, "kind"));
    if (!m.j->is_string() || m.j->get_ref<const std::string&>() != kSummaryKind) {
      return m.Bad(fmt::format("is {}, not \"{}\"", m.j->dump(), kSummaryKind));
    }
  }
  TITAN_RETURN_IF_ERROR(ReadMember(doc, "version", &out->version));
  if (out->version != kSummaryVersion) {
    return FailedPreconditionError(fmt::format(
        "summary format version {}, but this titan reads version {}: summarize and analyze with "
        "the same titan release (re-run titan trace summarize on that node)",
        out->version, kSummaryVersion));
  }
  TITAN_RETURN_IF_ERROR(ReadMember(doc, "job", &out->job));
  TITAN_RETURN_IF_ERROR(ReadMember(doc, "host", &out->host));
  TITAN_RETURN_IF_ERROR(ReadMember(doc, "seconds", &out->seconds));
  {
    TITAN_ASSIGN_OR_RETURN(Value m, Member(doc, "options"));
    TITAN_RETURN_IF_ERROR(ReadOptions(m, &out->options));
  }
  TITAN_RETURN_IF_ERROR(ReadMember(doc, "errors", &out->errors));
  TITAN_RETURN_IF_ERROR(ReadArray(doc, "ranks", &out->ranks, ReadRank));
  TITAN_ASSIGN_OR_RETURN(Value ranks, Member(doc, "ranks"));
  for (size_t i = 1; i < out->ranks.size(); ++i) {
    if (out->ranks[i - 1].rank >= out->ranks[i].rank) {
      return ranks[i].Bad(
          fmt::format("rank {} after rank {}: ranks must be listed once each, in "
                      "increasing order",
                      out->ranks[i].rank, out->ranks[i - 1].rank));
    }
  }
  TITAN_RETURN_IF_ERROR(ReadArray(doc, "hta", &out->hta, ReadHta));
  TITAN_ASSIGN_OR_RETURN(Value hta, Member(doc, "hta"));
  if (out->options.hta_compat ? hta.size() != out->ranks.size() : hta.size() != 0) {
    return hta.Bad(fmt::format("has {} entries for {} ranks with hta_compat {}", hta.size(),
                               out->ranks.size(), out->options.hta_compat));
  }
  for (size_t i = 0; i < out->hta.size(); ++i) {
    if (out->hta[i].rank != out->ranks[i].rank) {
      return hta[i].Bad(fmt::format("is for rank {}, but ranks[{}] is rank {}", out->hta[i].rank, i,
                                    out->ranks[i].rank));
    }
  }
  return OkStatus();
}

}  // namespace

std::string EncodeSummary(const NodeSummary& summary) {
  ojson doc;
  doc["kind"] = std::string(kSummaryKind);
  doc["version"] = summary.version;
  doc["job"] = summary.job;
  doc["host"] = summary.host;
  doc["seconds"] = Double(summary.seconds);
  const SummaryFileOptions& o = summary.options;
  doc["options"] = {{"top_gaps", o.top_gaps},
                    {"hta_compat", o.hta_compat},
                    {"hta_kernel_delay_us", Double(o.hta.consecutive_kernel_delay_us)},
                    {"hta_num_kernels", o.hta.num_kernels},
                    {"hta_duration_ratio", Double(o.hta.duration_ratio)}};
  doc["errors"] = summary.errors;
  ojson ranks = ojson::array();
  for (const RankSummary& s : summary.ranks) ranks.push_back(RankRecord(s));
  doc["ranks"] = std::move(ranks);
  ojson hta = ojson::array();
  for (const HtaRankResult& h : summary.hta) hta.push_back(HtaRecord(h));
  doc["hta"] = std::move(hta);
  // Names come from traces that simdjson validated as UTF-8; `replace` only guards against a
  // bug elsewhere turning into an exception here.
  return doc.dump(-1, ' ', false, ojson::error_handler_t::replace);
}

Result<NodeSummary> DecodeSummary(std::string_view text, std::string_view origin) {
  const std::string what = fmt::format("{}: not a titan trace summary", origin);
  TITAN_RETURN_IF_ERROR(CheckJsonDepth(text, origin));
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    return InvalidArgumentError(
        fmt::format("{} (malformed JSON): write it again with titan trace summarize", what));
  }
  NodeSummary out;
  Status s = ReadDocument(Value{&doc}, &out);
  if (s.code() == StatusCode::kFailedPrecondition) return s.WithContext(origin);
  if (!s.ok()) {
    return InvalidArgumentError(
        fmt::format("{} ({}): write it again with titan trace summarize", what, s.message()));
  }
  return out;
}

Result<uint64_t> WriteSummaryFile(const std::string& path, const NodeSummary& summary) {
  const std::string text = EncodeSummary(summary) + "\n";
  TITAN_RETURN_IF_ERROR(WriteFileAtomically(path, text));
  return text.size();
}

Result<NodeSummary> ReadSummaryFile(const std::string& path) {
  // Refuses FIFOs and devices before Env::ReadFile would block on or read them.
  TITAN_ASSIGN_OR_RETURN(int fd, OpenRegularFile(path, "summary"));
  ::close(fd);
  TITAN_ASSIGN_OR_RETURN(std::string text, Env::ReadFile(path, kMaxSummaryBytes));
  return DecodeSummary(text, path);
}

bool LooksLikeSummaryFile(const std::string& path) {
  Result<int> fd = OpenRegularFile(path, "trace or summary");
  if (!fd.ok()) return false;
  char buffer[256];
  ssize_t n;
  do {
    n = ::read(*fd, buffer, sizeof(buffer));
  } while (n < 0 && errno == EINTR);
  ::close(*fd);
  std::string_view head(buffer, n > 0 ? static_cast<size_t>(n) : 0);
  auto skip_space = [&] {
    while (!head.empty() && std::isspace(static_cast<unsigned char>(head.front()))) {
      head.remove_prefix(1);
    }
  };
  auto expect = [&](std::string_view token) {
    skip_space();
    if (!head.starts_with(token)) return false;
    head.remove_prefix(token.size());
    return true;
  };
  return expect("{") && expect("\"kind\"") && expect(":") &&
         expect(fmt::format("\"{}\"", kSummaryKind));
}

}  // namespace titan::trace
