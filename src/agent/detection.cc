#include "src/agent/detection.h"

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

TransientPipeline::TransientPipeline(MetricRegistry& registry, EventLog& log, double max_per_second)
    : registry_(registry),
      log_(log),
      correlator_(registry, log),
      max_per_second_(max_per_second),
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
  idle_.wait(lock, [this] { return queue_.empty() && !busy_; });
}

void TransientPipeline::Run() {
  // Token bucket: max_per_second_ tokens a second, burst of the same size.
  double tokens = max_per_second_;
  int64_t refilled_ns = MonoNowNs();
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    Pending pending = queue_.front();
    queue_.pop_front();
    busy_ = true;
    lock.unlock();

    const int64_t now = MonoNowNs();
    tokens = std::min(max_per_second_, tokens + NsToSeconds(now - refilled_ns) * max_per_second_);
    refilled_ns = now;
    if (tokens >= 1) {
      tokens -= 1;
      TransientEvent event;
      event.signal = pending.series->Key();
      event.detection = pending.detection;
      correlator_.Explain(*pending.series, &event);
      if (Series* counter =
              registry_.GetOrCreate(kTransientsTotal,
                                    {pending.series->desc().name, pending.detection.detector,
                                     pending.detection.direction},
                                    0)) {
        counter->AddCounter(WallNowNs(), 1);
      }
      Log(LogLevel::kInfo, "transient", "{}", event.summary);
      event.id = log_.AddTransient(event);
      if (listener_) listener_(event);
    } else if (dropped_) {
      dropped_->AddCounter(WallNowNs(), 1);
    }

    lock.lock();
    busy_ = false;
    if (queue_.empty()) idle_.notify_all();
  }
}

}  // namespace titan
