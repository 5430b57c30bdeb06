#include "src/agent/detection.h"

#include <algorithm>
#include <chrono>

#include "src/base/clock.h"
#include "src/base/log.h"

namespace titan {
namespace {

const SignalDesc kTransientsTotal{"titan_transients_total",
                                  "Transients detected, by signal family, detector and direction.",
                                  SignalKind::kCounter,
                                  {"signal", "detector", "direction"},
                                  {}};
const SignalDesc kTransientsDropped{
    "titan_transients_dropped_total",
    "Detections not processed because the rate limit or queue bound was hit.",
    SignalKind::kCounter,
    {},
    {}};

constexpr size_t kMaxQueue = 256;

// The detectors of one series; runs on the series' recording thread.
class SeriesDetectors : public SeriesObserver {
 public:
  SeriesDetectors(TransientPipeline* pipeline, std::vector<std::unique_ptr<Detector>> detectors)
      : pipeline_(pipeline), detectors_(std::move(detectors)) {}

  void OnGauge(Series& series, int64_t time_ns, double value) override {
    Detection detection;
    for (auto& detector : detectors_) {
      if (detector->Update(time_ns, value, &detection)) pipeline_->Submit(series, detection);
    }
  }

 private:
  TransientPipeline* pipeline_;
  std::vector<std::unique_ptr<Detector>> detectors_;
};

Result<std::vector<DetectorSpec>> ParseSpecList(std::string_view text) {
  std::vector<DetectorSpec> specs;
  if (text == "off") return specs;
  while (!text.empty()) {
    const size_t semi = text.find(';');
    TITAN_ASSIGN_OR_RETURN(DetectorSpec spec, ParseDetectorSpec(text.substr(0, semi)));
    TITAN_RETURN_IF_ERROR(MakeDetector(spec).status());  // validate now, not at first sample
    specs.push_back(std::move(spec));
    if (semi == std::string_view::npos) break;
    text.remove_prefix(semi + 1);
  }
  return specs;
}

}  // namespace

bool GlobMatch(std::string_view pattern, std::string_view text) {
  size_t p = 0, t = 0, star = std::string_view::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == text[t]) {
      ++p;
      ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

DetectorRules::DetectorRules(bool detect_all) : detect_all_(detect_all) {
  // The user's practice for step times: slower than the mean + 3 sigma of a 100-step window;
  // and a slow step recurring every N steps (a checkpoint, an eval) reported with its period.
  rules_.push_back(
      {"titan_step_duration_seconds",
       {{"zscore", {{"window", 100}, {"k", 3}}}, {"periodic", {{"window", 100}, {"k", 3}}}}});
  // A GPU utilisation dip or spike: robust to the sawtooth of normal training, and deaf to
  // wiggles under 2 points of utilisation.
  rules_.push_back({"titan_gpu_utilization_ratio", {{"mad", {{"k", 6}, {"min_scale", 0.02}}}}});
}

Status DetectorRules::Add(std::string_view rule) {
  const size_t eq = rule.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    return InvalidArgumentError(fmt::format(
        "--detect '{}': expected FAMILY=SPEC (e.g. titan_gpu_utilization_ratio=mad:k=4) or "
        "FAMILY=off",
        rule));
  }
  auto specs = ParseSpecList(rule.substr(eq + 1));
  if (!specs.ok()) return specs.status().WithContext(fmt::format("--detect '{}'", rule));
  rules_.insert(rules_.begin(), Rule{std::string(rule.substr(0, eq)), std::move(*specs)});
  return OkStatus();
}

std::vector<DetectorSpec> DetectorRules::SpecsFor(const SignalDesc& desc) const {
  if (desc.kind != SignalKind::kGauge) return {};
  for (const Rule& rule : rules_) {
    if (GlobMatch(rule.pattern, desc.name)) return rule.specs;
  }
  if (detect_all_ && desc.detect) return {DetectorSpec{"mad", {{"k", 6}}}};
  return {};
}

TransientPipeline::TransientPipeline(MetricRegistry& registry, EventLog& log, double max_per_second,
                                     GroupingOptions grouping)
    : registry_(registry),
      log_(log),
      correlator_(registry, log),
      max_per_second_(max_per_second),
      grouping_(grouping),
      dropped_(registry.GetOrCreate(kTransientsDropped, {}, 0)),
      worker_([this] { Run(); }) {}

TransientPipeline::~TransientPipeline() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  worker_.join();
}

void TransientPipeline::AttachTo(const DetectorRules& rules) {
  registry_.SetObserverFactory(
      [this, rules](const Series& series) -> std::unique_ptr<SeriesObserver> {
        std::vector<std::unique_ptr<Detector>> detectors;
        for (const DetectorSpec& spec : rules.SpecsFor(series.desc())) {
          auto detector = MakeDetector(spec);
          if (detector.ok()) detectors.push_back(std::move(*detector));
        }
        if (detectors.empty()) return nullptr;
        return std::make_unique<SeriesDetectors>(this, std::move(detectors));
      });
}

void TransientPipeline::Submit(Series& series, const Detection& detection) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (queue_.size() < kMaxQueue) {
      queue_.push_back({&series, detection});
      wake_.notify_one();
      return;
    }
  }
  if (dropped_) dropped_->AddCounter(WallNowNs(), 1);
}

void TransientPipeline::Drain() {
  std::unique_lock<std::mutex> lock(mutex_);
  flush_ = true;
  wake_.notify_one();
  idle_.wait(lock, [this] { return queue_.empty() && !busy_ && open_groups_ == 0; });
}

void TransientPipeline::AddToGroup(const Pending& pending, int64_t now_mono, double* tokens) {
  const Detection& d = pending.detection;
  const std::string_view family = pending.series->desc().name;
  if (Series* counter = registry_.GetOrCreate(kTransientsTotal,
                                              {std::string(family), d.detector, d.direction}, 0)) {
    counter->AddCounter(WallNowNs(), 1);
  }
  for (Group& group : groups_) {
    if (group.family != family || group.direction != d.direction ||
        d.start_ns > group.to_ns + grouping_.window_ns ||
        d.end_ns + grouping_.window_ns < group.from_ns) {
      continue;
    }
    // The same series again: one member if the two overlap (zscore and periodic on one step),
    // else a transient of its own (another group).
    auto same = std::find_if(group.members.begin(), group.members.end(),
                             [&](const Pending& m) { return m.series == pending.series; });
    if (same != group.members.end() &&
        (d.start_ns > same->detection.end_ns || d.end_ns < same->detection.start_ns)) {
      continue;
    }
    group.from_ns = std::min(group.from_ns, d.start_ns);
    group.to_ns = std::max(group.to_ns, d.end_ns);
    if (same == group.members.end()) {
      group.members.push_back(pending);
      return;
    }
    // Judged by the more extreme of the two, spanning both.
    Detection merged = d.score > same->detection.score ? d : same->detection;
    merged.start_ns = std::min(d.start_ns, same->detection.start_ns);
    merged.end_ns = std::max(d.end_ns, same->detection.end_ns);
    merged.samples = std::max(d.samples, same->detection.samples);
    merged.period = std::max(d.period, same->detection.period);
    same->detection = merged;
    return;
  }
  if (*tokens < 1) {
    if (dropped_) dropped_->AddCounter(WallNowNs(), 1);
    return;
  }
  *tokens -= 1;
  groups_.push_back(
      {family, d.direction, d.start_ns, d.end_ns, now_mono + grouping_.hold_ns, {pending}});
}

void TransientPipeline::Emit(Group& group) {
  std::vector<Pending>& members = group.members;
  std::vector<int32_t> ranks;
  for (const Pending& m : members) ranks.push_back(RankOf(*m.series));
  std::vector<size_t> order(members.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::make_pair(ranks[a], members[a].series->Key()) <
           std::make_pair(ranks[b], members[b].series->Key());
  });
  TransientEvent event;
  std::vector<const Series*> sources;
  const Pending* worst = &members.front();
  for (size_t i : order) {
    sources.push_back(members[i].series);
    event.members.push_back({members[i].series->Key(), ranks[i], members[i].detection});
    if (members[i].detection.score > worst->detection.score) worst = &members[i];
  }
  event.signal = worst->series->Key();
  event.detection = worst->detection;
  event.detection.start_ns = group.from_ns;
  event.detection.end_ns = group.to_ns;
  correlator_.Explain(sources, &event);
  Log(LogLevel::kInfo, "transient", "{}", event.summary);
  event.id = log_.AddTransient(event);
  if (listener_) listener_(event);
}

void TransientPipeline::Run() {
  // Token bucket: max_per_second_ tokens a second, burst of the same size; a new group takes one.
  double tokens = max_per_second_;
  int64_t refilled_ns = MonoNowNs();
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    auto woken = [this] { return stop_ || flush_ || !queue_.empty(); };
    if (groups_.empty()) {
      wake_.wait(lock, woken);
    } else {
      int64_t due = INT64_MAX;
      for (const Group& group : groups_) due = std::min(due, group.due_mono_ns);
      wake_.wait_for(lock, std::chrono::nanoseconds(std::max<int64_t>(0, due - MonoNowNs())),
                     woken);
    }
    if (stop_) return;
    std::deque<Pending> batch;
    batch.swap(queue_);
    const bool flush = flush_;
    busy_ = true;
    lock.unlock();

    const int64_t now = MonoNowNs();
    tokens = std::min(max_per_second_, tokens + NsToSeconds(now - refilled_ns) * max_per_second_);
    refilled_ns = now;
    for (const Pending& pending : batch) AddToGroup(pending, now, &tokens);
    std::erase_if(groups_, [&](Group& group) {
      if (!flush && group.due_mono_ns > now) return false;
      Emit(group);
      return true;
    });

    lock.lock();
    busy_ = false;
    open_groups_ = groups_.size();
    if (flush && queue_.empty()) flush_ = false;
    if (queue_.empty() && open_groups_ == 0) idle_.notify_all();
  }
}

}  // namespace titan
