#include "src/load/arrivals.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include <fmt/format.h>

#include "src/base/clock.h"
#include "src/base/duration.h"
#include "src/base/text.h"
#include "src/load/rng.h"

namespace titan::load {
namespace {

constexpr std::string_view kForms =
    "accepted forms: R (same as poisson:rate=R) | constant:rate=R | poisson:rate=R | "
    "gamma:rate=R,burstiness=B | burst:quiet=D,size=N[,repeat=K][,rate=R] | "
    "stages:R1xD1,R2xD2,..[,shape=constant] | ramp:from=R0,to=R1,over=D[,shape=constant] "
    "(R in requests/s, D a duration like 500ms, 30s or 2m)";
constexpr double kMinBurstiness = 1e-3;
constexpr double kMaxBurstiness = 1e3;
constexpr uint64_t kMaxRepeat = 1'000'000'000;
constexpr uint64_t kArrivalStream = 0x61727269;  // "arri": MixSeed stream of arrival gaps

Status SpecError(std::string_view text, std::string_view what) {
  return InvalidArgumentError(fmt::format("arrival spec '{}': {}; {}", text, what, kForms));
}

// Parses "key=value,key=value" into pairs; rejects duplicates and keys not in `allowed`.
Result<std::vector<std::pair<std::string_view, std::string_view>>> ParseParams(
    std::string_view text, std::string_view params,
    std::initializer_list<std::string_view> allowed) {
  std::vector<std::pair<std::string_view, std::string_view>> out;
  while (!params.empty()) {
    const size_t comma = params.find(',');
    std::string_view item = Trim(params.substr(0, comma));
    params = comma == std::string_view::npos ? std::string_view() : params.substr(comma + 1);
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      return SpecError(text, fmt::format("expected key=value, got '{}'", item));
    }
    std::string_view key = Trim(item.substr(0, eq));
    std::string_view value = Trim(item.substr(eq + 1));
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      std::string names;
      for (std::string_view a : allowed) names += (names.empty() ? "" : ", ") + std::string(a);
      return SpecError(text, fmt::format("unknown key '{}' (this form takes {})", key, names));
    }
    for (const auto& [k, v] : out) {
      if (k == key) return SpecError(text, fmt::format("'{}' given twice", key));
    }
    out.emplace_back(key, value);
  }
  return out;
}

const std::string_view* Find(const std::vector<std::pair<std::string_view, std::string_view>>& ps,
                             std::string_view key) {
  for (const auto& p : ps) {
    if (p.first == key) return &p.second;
  }
  return nullptr;
}

// A rate in [min_rate, kMaxArrivalRate].
Status ParseRate(std::string_view text, std::string_view key, std::string_view value,
                 double min_rate, double* out) {
  if (!ParseDouble(value, out) || *out < min_rate || *out > kMaxArrivalRate) {
    return SpecError(text, fmt::format("{} must be a number of requests/s in [{}, {}], got '{}'",
                                       key, min_rate, kMaxArrivalRate, value));
  }
  return OkStatus();
}

Status ParseDuration(std::string_view text, std::string_view key, std::string_view value,
                     int64_t* out_ns) {
  if (!ParseDurationNs(value, out_ns)) {
    return SpecError(text, fmt::format("{} must be a positive duration like 500ms, 30s or 2m, "
                                       "got '{}'",
                                       key, value));
  }
  return OkStatus();
}

Status ParseShape(std::string_view text, std::string_view value, bool* evenly_spaced) {
  if (value == "constant") {
    *evenly_spaced = true;
  } else if (value == "poisson") {
    *evenly_spaced = false;
  } else {
    return SpecError(text, fmt::format("shape must be poisson or constant, got '{}'", value));
  }
  return OkStatus();
}

Result<ArrivalSpec> ParseStages(std::string_view text, std::string_view params) {
  ArrivalSpec spec;
  spec.kind = ArrivalKind::kStages;
  int64_t total_ns = 0;
  bool any_positive = false;
  while (!params.empty()) {
    const size_t comma = params.find(',');
    std::string_view item = Trim(params.substr(0, comma));
    params = comma == std::string_view::npos ? std::string_view() : params.substr(comma + 1);
    if (item.starts_with("shape=")) {
      TITAN_RETURN_IF_ERROR(ParseShape(text, Trim(item.substr(6)), &spec.evenly_spaced));
      continue;
    }
    const size_t x = item.find('x');
    if (x == std::string_view::npos) {
      return SpecError(text,
                       fmt::format("expected a stage RATExDURATION like 10x30s, got '{}'", item));
    }
    ArrivalStage stage;
    TITAN_RETURN_IF_ERROR(
        ParseRate(text, "a stage's rate", Trim(item.substr(0, x)), 0, &stage.rate));
    TITAN_RETURN_IF_ERROR(
        ParseDuration(text, "a stage's duration", Trim(item.substr(x + 1)), &stage.duration_ns));
    if (spec.stages.size() == kMaxStages) {
      return SpecError(text, fmt::format("more than {} stages", kMaxStages));
    }
    if (stage.duration_ns > std::numeric_limits<int64_t>::max() / 2 - total_ns) {
      return SpecError(text, "the stages last longer than 146 years");
    }
    total_ns += stage.duration_ns;
    any_positive = any_positive || stage.rate >= kMinArrivalRate;
    spec.stages.push_back(stage);
  }
  if (spec.stages.empty()) return SpecError(text, "stages: needs at least one RATExDURATION");
  if (!any_positive) {
    return SpecError(text, fmt::format("every stage has rate 0 (below {})", kMinArrivalRate));
  }
  return spec;
}

}  // namespace

Result<ArrivalSpec> ParseArrivalSpec(std::string_view text) {
  text = Trim(text);
  ArrivalSpec spec;
  if (text.empty()) return SpecError(text, "empty");
  if (double rate = 0; ParseDouble(text, &rate)) {
    TITAN_RETURN_IF_ERROR(ParseRate(text, "the rate", text, kMinArrivalRate, &spec.rate));
    return spec;
  }
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos) {
    return SpecError(text, "expected a rate or KIND:PARAMETERS");
  }
  std::string_view kind = Trim(text.substr(0, colon));
  std::string_view params = text.substr(colon + 1);
  if (kind == "stages") return ParseStages(text, params);

  if (kind == "constant" || kind == "poisson") {
    TITAN_ASSIGN_OR_RETURN(auto ps, ParseParams(text, params, {"rate"}));
    spec.kind = kind == "constant" ? ArrivalKind::kConstant : ArrivalKind::kPoisson;
    const std::string_view* rate = Find(ps, "rate");
    if (rate == nullptr) return SpecError(text, "missing rate=R");
    TITAN_RETURN_IF_ERROR(ParseRate(text, "rate", *rate, kMinArrivalRate, &spec.rate));
    return spec;
  }
  if (kind == "gamma") {
    TITAN_ASSIGN_OR_RETURN(auto ps, ParseParams(text, params, {"rate", "burstiness"}));
    spec.kind = ArrivalKind::kGamma;
    const std::string_view* rate = Find(ps, "rate");
    const std::string_view* b = Find(ps, "burstiness");
    if (rate == nullptr || b == nullptr) return SpecError(text, "needs rate=R and burstiness=B");
    TITAN_RETURN_IF_ERROR(ParseRate(text, "rate", *rate, kMinArrivalRate, &spec.rate));
    if (!ParseDouble(*b, &spec.burstiness) || spec.burstiness < kMinBurstiness ||
        spec.burstiness > kMaxBurstiness) {
      return SpecError(text, fmt::format("burstiness must be a number in [{}, {}], got '{}'",
                                         kMinBurstiness, kMaxBurstiness, *b));
    }
    return spec;
  }
  if (kind == "burst") {
    TITAN_ASSIGN_OR_RETURN(auto ps, ParseParams(text, params, {"quiet", "size", "repeat", "rate"}));
    spec.kind = ArrivalKind::kBurst;
    spec.rate = 0;
    const std::string_view* quiet = Find(ps, "quiet");
    const std::string_view* size = Find(ps, "size");
    if (quiet == nullptr || size == nullptr) return SpecError(text, "needs quiet=D and size=N");
    TITAN_RETURN_IF_ERROR(ParseDuration(text, "quiet", *quiet, &spec.quiet_ns));
    if (!ParseUint64(*size, &spec.burst_size) || spec.burst_size < 1 ||
        spec.burst_size > kMaxBurstSize) {
      return SpecError(
          text, fmt::format("size must be an integer in [1, {}], got '{}'", kMaxBurstSize, *size));
    }
    if (const std::string_view* repeat = Find(ps, "repeat")) {
      if (!ParseUint64(*repeat, &spec.repeat) || spec.repeat > kMaxRepeat) {
        return SpecError(text, fmt::format("repeat must be an integer in [0, {}] (0: until the "
                                           "run ends), got '{}'",
                                           kMaxRepeat, *repeat));
      }
    }
    if (const std::string_view* rate = Find(ps, "rate")) {
      TITAN_RETURN_IF_ERROR(ParseRate(text, "rate", *rate, 0, &spec.rate));
    }
    return spec;
  }
  if (kind == "ramp") {
    TITAN_ASSIGN_OR_RETURN(auto ps, ParseParams(text, params, {"from", "to", "over", "shape"}));
    spec.kind = ArrivalKind::kRamp;
    const std::string_view* from = Find(ps, "from");
    const std::string_view* to = Find(ps, "to");
    const std::string_view* over = Find(ps, "over");
    if (from == nullptr || to == nullptr || over == nullptr) {
      return SpecError(text, "needs from=R0, to=R1 and over=D");
    }
    TITAN_RETURN_IF_ERROR(ParseRate(text, "from", *from, 0, &spec.from_rate));
    TITAN_RETURN_IF_ERROR(ParseRate(text, "to", *to, 0, &spec.to_rate));
    TITAN_RETURN_IF_ERROR(ParseDuration(text, "over", *over, &spec.over_ns));
    if (spec.from_rate + spec.to_rate < kMinArrivalRate) {
      return SpecError(text, "from and to are both 0");
    }
    if (const std::string_view* shape = Find(ps, "shape")) {
      TITAN_RETURN_IF_ERROR(ParseShape(text, *shape, &spec.evenly_spaced));
    }
    return spec;
  }
  return SpecError(text, fmt::format("unknown kind '{}'", kind));
}

std::string ToString(const ArrivalSpec& spec) {
  const char* shape = spec.evenly_spaced ? ",shape=constant" : "";
  switch (spec.kind) {
    case ArrivalKind::kConstant:
      return fmt::format("constant:rate={}", spec.rate);
    case ArrivalKind::kPoisson:
      return fmt::format("poisson:rate={}", spec.rate);
    case ArrivalKind::kGamma:
      return fmt::format("gamma:rate={},burstiness={}", spec.rate, spec.burstiness);
    case ArrivalKind::kBurst: {
      std::string out = fmt::format("burst:quiet={},size={},repeat={}",
                                    FormatDuration(spec.quiet_ns), spec.burst_size, spec.repeat);
      if (spec.rate > 0) out += fmt::format(",rate={}", spec.rate);
      return out;
    }
    case ArrivalKind::kStages: {
      std::string out = "stages:";
      for (size_t i = 0; i < spec.stages.size(); ++i) {
        out += fmt::format("{}{}x{}", i == 0 ? "" : ",", spec.stages[i].rate,
                           FormatDuration(spec.stages[i].duration_ns));
      }
      return out + shape;
    }
    case ArrivalKind::kRamp:
      return fmt::format("ramp:from={},to={},over={}{}", spec.from_rate, spec.to_rate,
                         FormatDuration(spec.over_ns), shape);
  }
  return "";
}

double MeanRate(const ArrivalSpec& spec) {
  switch (spec.kind) {
    case ArrivalKind::kConstant:
    case ArrivalKind::kPoisson:
    case ArrivalKind::kGamma:
      return spec.rate;
    case ArrivalKind::kBurst:
      return static_cast<double>(spec.burst_size) / NsToSeconds(spec.quiet_ns) + spec.rate;
    case ArrivalKind::kStages: {
      double requests = 0, seconds = 0;
      for (const ArrivalStage& s : spec.stages) {
        requests += s.rate * NsToSeconds(s.duration_ns);
        seconds += NsToSeconds(s.duration_ns);
      }
      return seconds > 0 ? requests / seconds : 0;
    }
    case ArrivalKind::kRamp:
      return (spec.from_rate + spec.to_rate) / 2;
  }
  return 0;
}

ArrivalSpec WithRate(const ArrivalSpec& spec, double rate) {
  ArrivalSpec out = spec;
  const double mean = MeanRate(spec);
  if (!(mean > 0) || !(rate > 0)) return out;
  const double k = rate / mean;
  auto scale = [k](double r, double min_rate) {
    return r == 0 ? 0.0 : std::clamp(r * k, min_rate, kMaxArrivalRate);
  };
  switch (out.kind) {
    case ArrivalKind::kConstant:
    case ArrivalKind::kPoisson:
    case ArrivalKind::kGamma:
      out.rate = std::clamp(rate, kMinArrivalRate, kMaxArrivalRate);
      break;
    case ArrivalKind::kBurst: {
      const double size = std::round(static_cast<double>(spec.burst_size) * k);
      out.burst_size = static_cast<uint64_t>(std::clamp(size, 1.0, double{kMaxBurstSize}));
      out.rate = scale(spec.rate, kMinArrivalRate);
      break;
    }
    case ArrivalKind::kStages:
      for (ArrivalStage& s : out.stages) s.rate = scale(s.rate, 0);
      break;
    case ArrivalKind::kRamp:
      out.from_rate = scale(spec.from_rate, 0);
      out.to_rate = scale(spec.to_rate, 0);
      break;
  }
  return out;
}

namespace {

// Applies the run's limits (duration, request count) to a generator of offsets.
class LimitedProcess : public ArrivalProcess {
 public:
  LimitedProcess(int64_t duration_ns, uint64_t max_requests)
      : duration_ns_(duration_ns), max_requests_(max_requests) {}

  std::optional<int64_t> Next() final {
    if (done_ || (max_requests_ != 0 && emitted_ >= max_requests_)) return std::nullopt;
    std::optional<int64_t> t = Generate();
    if (!t || (duration_ns_ != 0 && *t >= duration_ns_)) {
      done_ = true;
      return std::nullopt;
    }
    t = std::max(*t, last_ns_);  // rounding never reorders arrivals
    last_ns_ = *t;
    ++emitted_;
    return t;
  }

 protected:
  // The next offset of the unlimited process, or nullopt when it has ended.
  virtual std::optional<int64_t> Generate() = 0;

  // Rounds a time in ns to int64; nullopt past int64's range (~292 years).
  static std::optional<int64_t> ToNs(double t_ns) {
    if (!(t_ns < 9.2e18)) return std::nullopt;
    return static_cast<int64_t>(std::llround(t_ns));
  }

 private:
  const int64_t duration_ns_;
  const uint64_t max_requests_;
  uint64_t emitted_ = 0;
  int64_t last_ns_ = 0;
  bool done_ = false;
};

// A piece of a piecewise-linear rate: rate0 at start_s rising linearly to rate1 at end_s (end
// may be +inf, then rate1 == rate0). Seconds and requests/s, so that decimal rates and
// durations multiply exactly (4/s for 1 s is exactly 4 expected arrivals).
struct Segment {
  double start_s;
  double end_s;
  double rate0;
  double rate1;
  double lambda_start = 0;  // expected arrivals before start_s
  double lambda_end = 0;    // ... before end_s (+inf for an endless positive segment)
};

// Non-homogeneous Poisson (or evenly spaced) arrivals by inversion of Lambda(t).
class SegmentProcess : public LimitedProcess {
 public:
  SegmentProcess(std::vector<Segment> segments, bool evenly_spaced, uint64_t seed,
                 int64_t duration_ns, uint64_t max_requests)
      : LimitedProcess(duration_ns, max_requests),
        segments_(std::move(segments)),
        evenly_spaced_(evenly_spaced),
        rng_(MixSeed(seed, kArrivalStream)) {
    double lambda = 0;
    for (Segment& s : segments_) {
      s.lambda_start = lambda;
      const double len = s.end_s - s.start_s;
      const double mean_rate = (s.rate0 + s.rate1) / 2;
      lambda = mean_rate == 0 ? lambda : lambda + mean_rate * len;  // inf * 0 is nan: avoid
      s.lambda_end = lambda;
    }
  }

 protected:
  std::optional<int64_t> Generate() override {
    if (evenly_spaced_) {
      target_ = first_ ? 0 : target_ + 1;
      first_ = false;
    } else {
      target_ += rng_.Exponential();
    }
    while (index_ < segments_.size()) {
      const Segment& s = segments_[index_];
      // An arrival exactly at a segment's end belongs to the next segment.
      if (s.lambda_end > s.lambda_start && target_ < s.lambda_end) break;
      ++index_;
    }
    if (index_ == segments_.size()) return std::nullopt;
    const Segment& s = segments_[index_];
    // Solve a x^2 + b x = c for the offset x into the segment, in the stable form.
    const double c = std::max(0.0, target_ - s.lambda_start);
    const double b = s.rate0;
    const double a = std::isinf(s.end_s) ? 0 : (s.rate1 - s.rate0) / (2 * (s.end_s - s.start_s));
    const double denom = b + std::sqrt(std::max(0.0, b * b + 4 * a * c));
    const double x = denom > 0 ? 2 * c / denom : 0;
    return ToNs(std::min(s.start_s + x, s.end_s) * 1e9);
  }

 private:
  std::vector<Segment> segments_;
  const bool evenly_spaced_;
  Rng rng_;
  size_t index_ = 0;
  double target_ = 0;
  bool first_ = true;
};

// A renewal process with gamma gaps of shape `shape` and mean `mean_gap_ns`.
class GammaProcess : public LimitedProcess {
 public:
  GammaProcess(double shape, double mean_gap_ns, uint64_t seed, int64_t duration_ns,
               uint64_t max_requests)
      : LimitedProcess(duration_ns, max_requests),
        shape_(shape),
        scale_ns_(mean_gap_ns / shape),
        rng_(MixSeed(seed, kArrivalStream)) {}

 protected:
  std::optional<int64_t> Generate() override {
    t_ns_ += rng_.Gamma(shape_) * scale_ns_;
    return ToNs(t_ns_);
  }

 private:
  const double shape_;
  const double scale_ns_;
  Rng rng_;
  double t_ns_ = 0;
};

// Bursts of `size` at quiet, 2 quiet, .. plus background Poisson arrivals at `rate`.
class BurstProcess : public LimitedProcess {
 public:
  BurstProcess(const ArrivalSpec& spec, uint64_t seed, int64_t duration_ns, uint64_t max_requests)
      : LimitedProcess(duration_ns, max_requests),
        quiet_ns_(spec.quiet_ns),
        size_(spec.burst_size),
        repeat_(spec.repeat),
        background_rate_per_ns_(spec.rate / 1e9),
        rng_(MixSeed(seed, kArrivalStream)),
        burst_ns_(spec.quiet_ns) {
    if (background_rate_per_ns_ > 0) background_ns_ = rng_.Exponential() / background_rate_per_ns_;
  }

 protected:
  std::optional<int64_t> Generate() override {
    const bool bursts_left = (repeat_ == 0 || bursts_done_ < repeat_) && burst_ns_ >= 0;
    const bool background = background_rate_per_ns_ > 0;
    if (bursts_left && (!background || static_cast<double>(burst_ns_) <= background_ns_)) {
      const int64_t t = burst_ns_;
      if (++in_burst_ == size_) {
        in_burst_ = 0;
        ++bursts_done_;
        burst_ns_ = burst_ns_ > std::numeric_limits<int64_t>::max() - quiet_ns_
                        ? -1
                        : burst_ns_ + quiet_ns_;
      }
      return t;
    }
    if (!background) return std::nullopt;
    const double t = background_ns_;
    background_ns_ += rng_.Exponential() / background_rate_per_ns_;
    return ToNs(t);
  }

 private:
  const int64_t quiet_ns_;
  const uint64_t size_;
  const uint64_t repeat_;
  const double background_rate_per_ns_;
  Rng rng_;
  int64_t burst_ns_;  // the next burst's instant; -1 past int64's range
  uint64_t bursts_done_ = 0;
  uint64_t in_burst_ = 0;
  double background_ns_ = 0;
};

Status Validate(const ArrivalSpec& spec) {
  // Round-tripping through the parser checks every bound in one place.
  Result<ArrivalSpec> again = ParseArrivalSpec(ToString(spec));
  if (!again.ok()) return again.status();
  return OkStatus();
}

}  // namespace

Result<std::unique_ptr<ArrivalProcess>> MakeArrivals(const ArrivalSpec& spec, uint64_t seed,
                                                     int64_t duration_ns, uint64_t max_requests) {
  TITAN_RETURN_IF_ERROR(Validate(spec));
  if (duration_ns < 0) {
    return InvalidArgumentError(fmt::format(
        "arrivals: the run duration must be >= 0 ns (0: no limit), got {}", duration_ns));
  }
  constexpr double kInf = std::numeric_limits<double>::infinity();
  std::vector<Segment> segments;
  bool evenly = spec.evenly_spaced;
  switch (spec.kind) {
    case ArrivalKind::kGamma:
      return std::unique_ptr<ArrivalProcess>(std::make_unique<GammaProcess>(
          spec.burstiness, 1e9 / spec.rate, seed, duration_ns, max_requests));
    case ArrivalKind::kBurst:
      return std::unique_ptr<ArrivalProcess>(
          std::make_unique<BurstProcess>(spec, seed, duration_ns, max_requests));
    case ArrivalKind::kConstant:
      evenly = true;
      [[fallthrough]];
    case ArrivalKind::kPoisson:
      segments.push_back({0, kInf, spec.rate, spec.rate});
      break;
    case ArrivalKind::kStages: {
      double start = 0;
      for (const ArrivalStage& s : spec.stages) {
        const double end = start + NsToSeconds(s.duration_ns);
        segments.push_back({start, end, s.rate, s.rate});
        start = end;
      }
      break;
    }
    case ArrivalKind::kRamp: {
      const double over = NsToSeconds(spec.over_ns);
      segments.push_back({0, over, spec.from_rate, spec.to_rate});
      segments.push_back({over, kInf, spec.to_rate, spec.to_rate});
      break;
    }
  }
  return std::unique_ptr<ArrivalProcess>(std::make_unique<SegmentProcess>(
      std::move(segments), evenly, seed, duration_ns, max_requests));
}

}  // namespace titan::load
