// ParseDetectorSpec and MakeDetector: the one table of detector kinds, their keys, ranges and
// defaults. Every error names the bad part and lists what is allowed.
#include <cmath>
#include <optional>
#include <span>
#include <string>

#include <fmt/format.h>

#include "src/base/text.h"
#include "src/detect/cusum_detector.h"
#include "src/detect/detector.h"
#include "src/detect/mad_detector.h"
#include "src/detect/periodic_detector.h"
#include "src/detect/zscore_detector.h"

namespace titan {
namespace {

struct Param {
  const char* key;
  double min;
  double max;
  bool min_exclusive;  // (min, max] instead of [min, max]
  bool integer;
  double fallback;  // the default
};

// Keys of the threshold detectors; the window range is set per kind.
constexpr double kMaxWindow = 1e6;
constexpr Param kDirection = {"direction", -1, 1, false, true, 0};
constexpr Param kMaxDuration = {"max_duration", 2, 1e9, false, true, 1000};
constexpr Param kMinScale = {"min_scale", 0, 1e150, false, false, 0};
constexpr Param kMinSamples = {"min_samples", 2, kMaxWindow, false, true, 20};

constexpr Param kZscoreParams[] = {{"window", 2, kMaxWindow, false, true, 100},
                                   {"k", 0, 1e6, true, false, 3},
                                   kMinSamples,
                                   kDirection,
                                   kMaxDuration,
                                   kMinScale};
constexpr Param kMadParams[] = {
    {"window", 3, double(detect::SortedWindow::kMaxCapacity), false, true, 64},
    {"k", 0, 1e6, true, false, 3.5},
    kMinSamples,
    kDirection,
    kMaxDuration,
    kMinScale};
constexpr Param kCusumParams[] = {{"drift", 0, 100, false, false, 1},
                                  {"h", 0, 1e6, true, false, 8},
                                  {"alpha", 0, 1, true, false, 0.01},
                                  {"clamp", 0, 1e6, true, false, 3},
                                  kMinSamples,
                                  kDirection,
                                  kMinScale};
constexpr Param kPeriodicParams[] = {
    {"window", 2, kMaxWindow, false, true, 100},
    {"k", 0, 1e6, true, false, 3},
    kMinSamples,
    kDirection,
    kMaxDuration,
    kMinScale,
    {"min_occurrences", 3, PeriodicDetector::kHistory, false, true, 3},
    {"tolerance", 0, 0.49, false, false, 0.05}};

struct Kind {
  const char* name;
  std::span<const Param> params;
};
constexpr Kind kKinds[] = {{"zscore", kZscoreParams},
                           {"mad", kMadParams},
                           {"cusum", kCusumParams},
                           {"periodic", kPeriodicParams}};

const Kind* FindKind(std::string_view name) {
  for (const Kind& kind : kKinds) {
    if (name == kind.name) return &kind;
  }
  return nullptr;
}

const Param* FindParam(const Kind& kind, std::string_view key) {
  for (const Param& param : kind.params) {
    if (key == param.key) return &param;
  }
  return nullptr;
}

std::string KindNames() {
  std::string names;
  for (const Kind& kind : kKinds)
    names += fmt::format("{}{}", names.empty() ? "" : ", ", kind.name);
  return names;
}

std::string Describe(const Param& p) {
  if (std::string_view(p.key) == "direction") return "direction (spike | dip | both, default both)";
  return fmt::format("{} ({}{} {} .. {}, default {})", p.key, p.integer ? "integer " : "",
                     p.min_exclusive ? ">" : ">=", p.min, p.max, p.fallback);
}

std::string AllowedKeys(const Kind& kind) {
  std::string text;
  for (const Param& p : kind.params)
    text += fmt::format("{}{}", text.empty() ? "" : ", ", Describe(p));
  return text;
}

Status CheckValue(const Kind& kind, const Param& p, double value) {
  const bool below = p.min_exclusive ? !(value > p.min) : !(value >= p.min);
  if (std::isnan(value) || below || !(value <= p.max) ||
      (p.integer && value != std::floor(value))) {
    return InvalidArgumentError(fmt::format("{}: {}={} is out of range; allowed: {}", kind.name,
                                            p.key, value, Describe(p)));
  }
  return OkStatus();
}

// Checks kind, keys, ranges and the one cross-key rule (min_samples <= window).
Result<const Kind*> Validate(const DetectorSpec& spec) {
  const Kind* kind = FindKind(spec.kind);
  if (kind == nullptr) {
    return InvalidArgumentError(
        fmt::format("unknown detector kind \"{}\"; allowed: {}", spec.kind, KindNames()));
  }
  for (const auto& [key, value] : spec.params) {
    const Param* param = FindParam(*kind, key);
    if (param == nullptr) {
      return InvalidArgumentError(fmt::format("{}: unknown key \"{}\"; allowed keys: {}",
                                              kind->name, key, AllowedKeys(*kind)));
    }
    TITAN_RETURN_IF_ERROR(CheckValue(*kind, *param, value));
  }
  auto window = spec.params.find("window");
  auto min_samples = spec.params.find("min_samples");
  if (window != spec.params.end() && min_samples != spec.params.end() &&
      min_samples->second > window->second) {
    return InvalidArgumentError(
        fmt::format("{}: min_samples={} exceeds window={}; lower "
                    "min_samples or widen the window",
                    kind->name, min_samples->second, window->second));
  }
  return kind;
}

double Get(const DetectorSpec& spec, const Kind& kind, const char* key) {
  auto it = spec.params.find(key);
  if (it != spec.params.end()) return it->second;
  return FindParam(kind, key)->fallback;
}

detect::ThresholdOptions ThresholdFrom(const DetectorSpec& spec, const Kind& kind) {
  detect::ThresholdOptions o;
  o.window = static_cast<int64_t>(Get(spec, kind, "window"));
  o.k = Get(spec, kind, "k");
  // The default min_samples shrinks with a small window; an explicit one was validated.
  o.min_samples = std::min(static_cast<int64_t>(Get(spec, kind, "min_samples")), o.window);
  o.direction = static_cast<detect::Direction>(static_cast<int>(Get(spec, kind, "direction")));
  o.max_duration = static_cast<int64_t>(Get(spec, kind, "max_duration"));
  o.min_scale = Get(spec, kind, "min_scale");
  return o;
}

std::optional<double> ParseValue(std::string_view key, std::string_view text) {
  if (key == "direction") {
    if (text == "spike") return 1.0;
    if (text == "dip") return -1.0;
    if (text == "both") return 0.0;
  }
  double value;
  if (!ParseDouble(text, &value)) return std::nullopt;
  return value;
}

}  // namespace

Result<DetectorSpec> ParseDetectorSpec(std::string_view text) {
  const std::string_view input = text;
  auto error = [&](const std::string& what) {
    return InvalidArgumentError(fmt::format("detector spec \"{}\": {}", input, what));
  };
  DetectorSpec spec;
  const size_t colon = text.find(':');
  spec.kind = std::string(Trim(text.substr(0, colon)));
  if (colon != std::string_view::npos) {
    std::string_view rest = text.substr(colon + 1);
    while (true) {
      const size_t comma = rest.find(',');
      const std::string_view item = Trim(rest.substr(0, comma));
      const size_t equals = item.find('=');
      if (equals == std::string_view::npos) {
        return error(fmt::format("\"{}\" is not key=value (write kind:key=value,key=value)", item));
      }
      const std::string_view key = Trim(item.substr(0, equals));
      const std::string_view value_text = Trim(item.substr(equals + 1));
      std::optional<double> value = ParseValue(key, value_text);
      if (!value) {
        return error(
            fmt::format("value \"{}\" of key \"{}\" is not a finite number", value_text, key));
      }
      if (!spec.params.emplace(std::string(key), *value).second) {
        return error(fmt::format("key \"{}\" is given twice", key));
      }
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  Result<const Kind*> kind = Validate(spec);
  if (!kind.ok()) return kind.status().WithContext(fmt::format("detector spec \"{}\"", input));
  return spec;
}

std::string DetectorSpecHelp() {
  std::string help;
  for (const Kind& kind : kKinds) help += fmt::format("{}: {}\n", kind.name, AllowedKeys(kind));
  return help;
}

Result<std::unique_ptr<Detector>> MakeDetector(const DetectorSpec& spec) {
  TITAN_ASSIGN_OR_RETURN(const Kind* kind, Validate(spec));
  const std::string_view name = kind->name;
  std::unique_ptr<Detector> detector;
  if (name == "zscore") {
    detector = std::make_unique<ZscoreDetector>(ThresholdFrom(spec, *kind));
  } else if (name == "mad") {
    detector = std::make_unique<MadDetector>(ThresholdFrom(spec, *kind));
  } else if (name == "cusum") {
    CusumOptions o;
    o.drift = Get(spec, *kind, "drift");
    o.h = Get(spec, *kind, "h");
    o.alpha = Get(spec, *kind, "alpha");
    o.clamp = Get(spec, *kind, "clamp");
    o.min_samples = static_cast<int64_t>(Get(spec, *kind, "min_samples"));
    o.direction = static_cast<detect::Direction>(static_cast<int>(Get(spec, *kind, "direction")));
    o.min_scale = Get(spec, *kind, "min_scale");
    detector = std::make_unique<CusumDetector>(o);
  } else {
    PeriodicOptions o;
    o.inner = ThresholdFrom(spec, *kind);
    o.min_occurrences = static_cast<int64_t>(Get(spec, *kind, "min_occurrences"));
    o.tolerance = Get(spec, *kind, "tolerance");
    detector = std::make_unique<PeriodicDetector>(o);
  }
  return detector;
}

}  // namespace titan
