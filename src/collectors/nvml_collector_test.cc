// Tests of the NVML (GPU) collector against a fake libnvidia-ml.so.1 (nvml/fake_nvml.cc).
//
// The fake is a TEST DOUBLE for NVIDIA GPUs and their driver, which this machine lacks
// (DESIGN.md rule 7): a real shared library, loaded by the collector with dlopen() exactly as it
// loads the real one, whose readings, buffered samples, XID events and failures the tests script
// through its control functions. On a GPU host, bench/gpu_check.sh runs the same collector
// against the real driver.
#include <dlfcn.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "src/base/clock.h"
#include "src/collectors/nvml/fake_nvml_control.h"
#include "src/collectors/nvml_api.h"
#include "src/collectors/nvml_collector.h"
#include "src/collectors/nvml_signals.h"
#include "src/metrics/registry.h"

namespace titan {
namespace {

constexpr int kGpus = 8;

std::string FakeUuid(int gpu) {
  char text[64];
  std::snprintf(text, sizeof(text), "GPU-fa4e0000-0000-0000-0000-%012d", gpu);
  return text;
}

// The fake library's control functions, from the same loaded instance the collector uses.
class FakeNvml {
 public:
  explicit FakeNvml(const char* path) : handle_(dlopen(path, RTLD_NOW | RTLD_LOCAL)) {
    if (handle_ == nullptr) {
      ADD_FAILURE() << "cannot load the fake NVML " << path << ": " << dlerror();
      return;
    }
    Resolve("titanFakeNvmlReset", &reset);
    Resolve("titanFakeNvmlSet", &set);
    Resolve("titanFakeNvmlCycle", &cycle);
    Resolve("titanFakeNvmlFail", &fail);
    Resolve("titanFakeNvmlPushSample", &push_sample);
    Resolve("titanFakeNvmlInjectXid", &inject_xid);
    Resolve("titanFakeNvmlAutoSamples", &auto_samples);
    Resolve("titanFakeNvmlActiveInits", &active_inits);
    Resolve("titanFakeNvmlLiveEventSets", &live_event_sets);
    Resolve("titanFakeNvmlCalls", &calls);
  }
  ~FakeNvml() {
    if (handle_ != nullptr) dlclose(handle_);
  }
  bool loaded() const { return handle_ != nullptr && reset != nullptr; }
  void Set(unsigned gpu, const char* field, unsigned long long value) {
    ASSERT_EQ(set(gpu, field, value), 0) << field;
  }

  titanFakeNvmlResetFn reset = nullptr;
  titanFakeNvmlSetFn set = nullptr;
  titanFakeNvmlCycleFn cycle = nullptr;
  titanFakeNvmlFailFn fail = nullptr;
  titanFakeNvmlPushSampleFn push_sample = nullptr;
  titanFakeNvmlInjectXidFn inject_xid = nullptr;
  titanFakeNvmlAutoSamplesFn auto_samples = nullptr;
  titanFakeNvmlActiveInitsFn active_inits = nullptr;
  titanFakeNvmlLiveEventSetsFn live_event_sets = nullptr;
  titanFakeNvmlCallsFn calls = nullptr;

 private:
  template <typename Fn>
  void Resolve(const char* name, Fn* slot) {
    *slot = reinterpret_cast<Fn>(dlsym(handle_, name));
    if (*slot == nullptr) ADD_FAILURE() << "fake NVML lacks " << name;
  }
  void* handle_;
};

class NvmlCollectorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ctx_.registry = &registry_;
    ctx_.interval_ns = 100 * kNsPerMs;
    ctx_.invalid_sample = [this](std::string_view collector, std::string_view what) {
      std::lock_guard<std::mutex> lock(mutex_);
      EXPECT_EQ(collector, "nvml");
      invalid_.emplace_back(what);
    };
  }

  // Loads the fake (kept loaded for the test) and resets it to `gpus` GPUs.
  void UseFake(const char* path, unsigned gpus = kGpus) {
    fake_ = std::make_unique<FakeNvml>(path);
    ASSERT_TRUE(fake_->loaded());
    fake_->reset(gpus);
    library_ = path;
  }

  std::unique_ptr<Collector> Make(int64_t pcie_period_ns = kNsPerSecond) {
    NvmlCollectorOptions options;
    options.library_path = library_;
    options.pcie_period_ns = pcie_period_ns;
    return MakeNvmlCollector(options);
  }

  // The series of family `name` for `gpu` (and third label `extra`, if given), or nullptr.
  Series* Find(const std::string& name, int gpu, const std::string& extra = "") const {
    for (Series* series : registry_.AllSeries()) {
      const LabelValues& labels = series->labels();
      if (series->desc().name != name || labels.empty() || labels[0] != std::to_string(gpu)) {
        continue;
      }
      if (!extra.empty() && (labels.size() < 3 || labels[2] != extra)) continue;
      return series;
    }
    return nullptr;
  }
  bool HasFamily(const std::string& name) const {
    for (Series* series : registry_.AllSeries()) {
      if (series->desc().name == name) return true;
    }
    return false;
  }
  static std::vector<RecordedPoint> Points(const Series* series) {
    std::vector<RecordedPoint> points;
    series->RecorderRange(0, std::numeric_limits<int64_t>::max(), &points);
    return points;
  }
  // Last value of a series that must exist and have been recorded.
  double Last(const std::string& name, int gpu, const std::string& extra = "") const {
    Series* series = Find(name, gpu, extra);
    EXPECT_NE(series, nullptr) << name << " gpu " << gpu << " " << extra;
    if (series == nullptr) return NAN;
    if (series->desc().kind == SignalKind::kCounter) return series->CounterValue();
    EXPECT_GT(series->LastTimeNs(), 0) << name << " gpu " << gpu << " was never recorded";
    return series->Window(series->LastTimeNs(), 1).last;
  }
  std::vector<std::string> Invalid() {
    std::lock_guard<std::mutex> lock(mutex_);
    return invalid_;
  }
  // Polls `done` until it holds or 20 s pass (the background thread runs on its own schedule).
  template <typename Pred>
  static bool Eventually(Pred done) {
    const int64_t deadline = MonoNowNs() + 20 * kNsPerSecond;
    while (!done()) {
      if (MonoNowNs() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return true;
  }

  MetricRegistry registry_;
  CollectorContext ctx_;
  std::unique_ptr<FakeNvml> fake_;
  std::string library_;
  std::mutex mutex_;
  std::vector<std::string> invalid_;
};

TEST_F(NvmlCollectorTest, EightGpusLandInTheirOwnSeriesWithTheirLabels) {
  UseFake(TITAN_FAKE_NVML_FULL);
  for (unsigned i = 0; i < kGpus; ++i) {
    fake_->Set(i, "util", 10 + i);
    fake_->Set(i, "mem_util", 5 + i);
    fake_->Set(i, "mem_used", (i + 1ULL) << 30);
    fake_->Set(i, "power_mw", 100000 + 1000 * i);
    fake_->Set(i, "energy_mj", (i + 1) * 1000000ULL);
    fake_->Set(i, "sm_mhz", 1000 + i);
    fake_->Set(i, "mem_mhz", 2000 + i);
    fake_->Set(i, "temp", 30 + i);
    fake_->Set(i, "ecc_corrected", i);
    fake_->Set(i, "ecc_uncorrected", 7 * i);
  }
  auto collector = Make();
  ASSERT_TRUE(collector->Init(ctx_).ok());
  EXPECT_EQ(collector->name(), "nvml");
  const Status status = collector->Collect(WallNowNs());
  ASSERT_TRUE(status.ok()) << status.ToString();
  for (int i = 0; i < kGpus; ++i) {
    SCOPED_TRACE("gpu " + std::to_string(i));
    EXPECT_DOUBLE_EQ(Last("titan_gpu_utilization_ratio", i), (10 + i) / 100.0);
    EXPECT_DOUBLE_EQ(Last("titan_gpu_memory_utilization_ratio", i), (5 + i) / 100.0);
    EXPECT_DOUBLE_EQ(Last("titan_gpu_memory_used_bytes", i), (i + 1.0) * (1 << 30));
    EXPECT_DOUBLE_EQ(Last("titan_gpu_memory_total_bytes", i), 141.0 * (1 << 30));
    EXPECT_DOUBLE_EQ(Last("titan_gpu_power_watts", i), 100 + i);
    EXPECT_DOUBLE_EQ(Last("titan_gpu_energy_joules_total", i), (i + 1) * 1000.0);
    EXPECT_DOUBLE_EQ(Last("titan_gpu_sm_clock_hertz", i), (1000 + i) * 1e6);
    EXPECT_DOUBLE_EQ(Last("titan_gpu_memory_clock_hertz", i), (2000 + i) * 1e6);
    EXPECT_DOUBLE_EQ(Last("titan_gpu_temperature_celsius", i), 30 + i);
    EXPECT_DOUBLE_EQ(Last("titan_gpu_ecc_errors_total", i, "corrected"), i);
    EXPECT_DOUBLE_EQ(Last("titan_gpu_ecc_errors_total", i, "uncorrected"), 7 * i);
    // Labels: {gpu, uuid} on every series; the name only on titan_gpu_info.
    const Series* util = Find("titan_gpu_utilization_ratio", i);
    ASSERT_NE(util, nullptr);
    EXPECT_EQ(util->labels(), (LabelValues{std::to_string(i), FakeUuid(i)}));
    const Series* info = Find("titan_gpu_info", i);
    ASSERT_NE(info, nullptr);
    EXPECT_EQ(info->labels(), (LabelValues{std::to_string(i), FakeUuid(i), "NVIDIA H200 (fake)"}));
    for (const auto& reason : NvmlClockEventReasons()) {
      EXPECT_NE(Find("titan_gpu_throttle_seconds_total", i, reason.label), nullptr) << reason.label;
    }
  }
  // Nothing beyond the 8 GPUs.
  for (Series* series : registry_.AllSeries()) {
    EXPECT_LT(std::stoi(series->labels()[0]), kGpus) << series->Key();
    EXPECT_EQ(series->labels()[1], FakeUuid(std::stoi(series->labels()[0]))) << series->Key();
  }
  EXPECT_TRUE(Invalid().empty());
}

TEST_F(NvmlCollectorTest, BufferedDriverSamplesKeepADipBetweenTwoCollects) {
  UseFake(TITAN_FAKE_NVML_FULL);
  auto collector = Make();
  ASSERT_TRUE(collector->Init(ctx_).ok());
  // Driver samples every 20 ms, stamped after Init (the collector starts its cursor there).
  const unsigned long long base_us = WallNowNs() / kNsPerUs + 1'000'000;
  auto at_us = [&](int k) { return base_us + 20'000ULL * k; };
  for (int k = 0; k < 5; ++k) {
    ASSERT_EQ(fake_->push_sample(0, NVML_GPU_UTILIZATION_SAMPLES, at_us(k), 95), 0);
    ASSERT_EQ(fake_->push_sample(0, NVML_TOTAL_POWER_SAMPLES, at_us(k), 300000), 0);
  }
  const int64_t first_collect_ns = static_cast<int64_t>(at_us(5)) * kNsPerUs;
  ASSERT_TRUE(collector->Collect(first_collect_ns).ok());
  // Between the two Collect() calls: a 60 ms utilisation dip and a 20 ms power spike.
  for (int k = 5; k < 15; ++k) {
    const bool dip = k >= 8 && k <= 10;
    ASSERT_EQ(fake_->push_sample(0, NVML_GPU_UTILIZATION_SAMPLES, at_us(k), dip ? 3 : 95), 0);
    ASSERT_EQ(fake_->push_sample(0, NVML_TOTAL_POWER_SAMPLES, at_us(k), k == 9 ? 690000 : 300000),
              0);
  }
  const int64_t second_collect_ns = static_cast<int64_t>(at_us(15)) * kNsPerUs;
  ASSERT_TRUE(collector->Collect(second_collect_ns).ok());

  const Series* util = Find("titan_gpu_utilization_ratio", 0);
  ASSERT_NE(util, nullptr);
  const std::vector<RecordedPoint> points = Points(util);
  ASSERT_EQ(points.size(), 15u);  // every driver sample, none of the instantaneous readings
  for (int k = 0; k < 15; ++k) {
    EXPECT_EQ(points[k].time_ns, static_cast<int64_t>(at_us(k)) * kNsPerUs) << k;
    EXPECT_DOUBLE_EQ(points[k].value, (k >= 8 && k <= 10) ? 0.03 : 0.95) << k;
  }
  const WindowStats window = util->Window(second_collect_ns, 5);
  EXPECT_DOUBLE_EQ(window.min, 0.03);
  EXPECT_DOUBLE_EQ(window.max, 0.95);
  EXPECT_DOUBLE_EQ(window.last, 0.95);

  const Series* power = Find("titan_gpu_power_watts", 0);
  ASSERT_NE(power, nullptr);
  EXPECT_EQ(Points(power).size(), 15u);
  EXPECT_DOUBLE_EQ(power->Window(second_collect_ns, 5).max, 690);
  EXPECT_DOUBLE_EQ(power->Window(second_collect_ns, 5).last, 300);

  // A third Collect with no new sample records nothing new (the cursor moved past them all), and
  // GPU 1, whose buffer is dry, got its instantaneous readings instead.
  ASSERT_TRUE(collector->Collect(second_collect_ns + 50 * kNsPerMs).ok());
  EXPECT_EQ(Points(util).size(), 15u);
  EXPECT_EQ(Points(Find("titan_gpu_utilization_ratio", 1)).size(), 3u);
  EXPECT_DOUBLE_EQ(Last("titan_gpu_utilization_ratio", 1), 0.51);
  EXPECT_TRUE(Invalid().empty());
}

TEST_F(NvmlCollectorTest, DriverLikeSamplerGivesPointsBetweenCollects) {
  UseFake(TITAN_FAKE_NVML_FULL, 1);
  // Power sampled every 20 ms of real time, with a 700 W spike in every 5 samples.
  const unsigned long long power_mw[] = {300000, 300000, 700000, 300000, 300000};
  ASSERT_EQ(fake_->cycle(0, "power_mw", power_mw, 5), 0);
  ASSERT_EQ(fake_->auto_samples(0, NVML_TOTAL_POWER_SAMPLES, 20'000), 0);
  auto collector = Make();
  ASSERT_TRUE(collector->Init(ctx_).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(250));  // >= 12 samples are due
  const int64_t now_ns = WallNowNs();
  ASSERT_TRUE(collector->Collect(now_ns).ok());
  const Series* power = Find("titan_gpu_power_watts", 0);
  ASSERT_NE(power, nullptr);
  const std::vector<RecordedPoint> points = Points(power);
  EXPECT_GE(points.size(), 10u) << "one Collect() records every sample since Init";
  for (size_t k = 1; k < points.size(); ++k) {
    EXPECT_EQ(points[k].time_ns - points[k - 1].time_ns, 20 * kNsPerMs) << k;
  }
  EXPECT_DOUBLE_EQ(power->Window(now_ns, 5).max, 700);
  EXPECT_DOUBLE_EQ(power->Window(now_ns, 5).min, 300);
}

TEST_F(NvmlCollectorTest, ThrottleSecondsAccumulatePerReason) {
  UseFake(TITAN_FAKE_NVML_FULL);
  auto collector = Make();
  ASSERT_TRUE(collector->Init(ctx_).ok());
  const int64_t t0 = WallNowNs();
  fake_->Set(0, "reasons",
             TITAN_NVML_CLOCK_EVENT_SW_POWER_CAP | TITAN_NVML_CLOCK_EVENT_HW_SLOWDOWN);
  ASSERT_TRUE(collector->Collect(t0).ok());
  ASSERT_TRUE(collector->Collect(t0 + 100 * kNsPerMs).ok());
  fake_->Set(0, "reasons", TITAN_NVML_CLOCK_EVENT_HW_THERMAL_SLOWDOWN);
  ASSERT_TRUE(collector->Collect(t0 + 300 * kNsPerMs).ok());
  ASSERT_TRUE(collector->Collect(t0 + 400 * kNsPerMs).ok());
  // Each reading's reasons are charged with the time until the next reading.
  EXPECT_NEAR(Last("titan_gpu_throttle_seconds_total", 0, "sw_power_cap"), 0.3, 1e-9);
  EXPECT_NEAR(Last("titan_gpu_throttle_seconds_total", 0, "hw_slowdown"), 0.3, 1e-9);
  EXPECT_NEAR(Last("titan_gpu_throttle_seconds_total", 0, "hw_thermal_slowdown"), 0.1, 1e-9);
  EXPECT_EQ(Last("titan_gpu_throttle_seconds_total", 0, "gpu_idle"), 0);
  EXPECT_EQ(Last("titan_gpu_throttle_seconds_total", 1, "sw_power_cap"), 0);
  // A gap far beyond the sampling interval (a stalled loop) is not charged to anything.
  ASSERT_TRUE(collector->Collect(t0 + 60 * kNsPerSecond).ok());
  EXPECT_NEAR(Last("titan_gpu_throttle_seconds_total", 0, "hw_thermal_slowdown"), 0.1, 1e-9);
  ASSERT_TRUE(collector->Collect(t0 + 60 * kNsPerSecond + 50 * kNsPerMs).ok());
  EXPECT_NEAR(Last("titan_gpu_throttle_seconds_total", 0, "hw_thermal_slowdown"), 0.15, 1e-9);
}

TEST_F(NvmlCollectorTest, BogusValuesAreDroppedAndReported) {
  UseFake(TITAN_FAKE_NVML_FULL);
  fake_->Set(1, "util", 808334905);  // the value from the issue
  fake_->Set(2, "temp", 100000);
  fake_->Set(3, "power_mw", 4000000000ULL);
  fake_->Set(4, "mem_used", 200ULL << 30);  // more than mem_total (141 GiB)
  fake_->Set(5, "sm_mhz", std::numeric_limits<unsigned int>::max());
  auto collector = Make();
  ASSERT_TRUE(collector->Init(ctx_).ok());
  const unsigned long long base_us = WallNowNs() / kNsPerUs + 1'000'000;
  ASSERT_EQ(fake_->push_sample(6, NVML_GPU_UTILIZATION_SAMPLES, base_us, 40), 0);
  ASSERT_EQ(fake_->push_sample(6, NVML_GPU_UTILIZATION_SAMPLES, base_us + 20'000, 808334905), 0);
  ASSERT_EQ(fake_->push_sample(6, NVML_GPU_UTILIZATION_SAMPLES, base_us + 40'000, 42), 0);
  const int64_t now_ns = static_cast<int64_t>(base_us) * kNsPerUs + 100 * kNsPerMs;
  const Status status = collector->Collect(now_ns);
  EXPECT_TRUE(status.ok()) << "bad values are not errors: " << status.ToString();

  EXPECT_TRUE(Points(Find("titan_gpu_utilization_ratio", 1)).empty());
  EXPECT_TRUE(Points(Find("titan_gpu_temperature_celsius", 2)).empty());
  EXPECT_TRUE(Points(Find("titan_gpu_power_watts", 3)).empty());
  EXPECT_TRUE(Points(Find("titan_gpu_memory_used_bytes", 4)).empty());
  EXPECT_TRUE(Points(Find("titan_gpu_sm_clock_hertz", 5)).empty());
  const std::vector<RecordedPoint> gpu6 = Points(Find("titan_gpu_utilization_ratio", 6));
  ASSERT_EQ(gpu6.size(), 2u);
  EXPECT_DOUBLE_EQ(gpu6[0].value, 0.40);
  EXPECT_DOUBLE_EQ(gpu6[1].value, 0.42);
  // The good readings of the same GPUs, and the other GPUs, are untouched.
  EXPECT_DOUBLE_EQ(Last("titan_gpu_temperature_celsius", 1), 41);
  EXPECT_DOUBLE_EQ(Last("titan_gpu_utilization_ratio", 2), 0.52);
  EXPECT_DOUBLE_EQ(Last("titan_gpu_utilization_ratio", 0), 0.50);

  const std::vector<std::string> invalid = Invalid();
  ASSERT_EQ(invalid.size(), 6u);
  auto reported = [&](const std::string& needle) {
    for (const std::string& what : invalid) {
      if (what.find(needle) != std::string::npos) return true;
    }
    return false;
  };
  EXPECT_TRUE(reported("gpu 1: utilization 808334905 %")) << invalid[0];
  EXPECT_TRUE(reported("gpu 2: temperature 100000"));
  EXPECT_TRUE(reported("gpu 3: power 4000000000 mW"));
  EXPECT_TRUE(reported("gpu 4: memory used"));
  EXPECT_TRUE(reported("gpu 5: SM clock 4294967295 MHz"));
  EXPECT_TRUE(reported("gpu 6: utilization 808334905 %"));
}

// Not a fuzzer (NVML output is not outside text input), but the same idea: extreme and random
// values for every field and sample, and whatever the driver says, nothing implausible or
// non-finite is ever recorded and nothing crashes.
TEST_F(NvmlCollectorTest, AbsurdValuesNeverReachTheSeries) {
  UseFake(TITAN_FAKE_NVML_FULL, 4);
  auto collector = Make();
  ASSERT_TRUE(collector->Init(ctx_).ok());
  const char* fields[] = {"util",      "mem_util", "mem_total",     "mem_used",       "power_mw",
                          "energy_mj", "sm_mhz",   "mem_mhz",       "temp",           "reasons",
                          "pcie_tx",   "pcie_rx",  "ecc_corrected", "ecc_uncorrected"};
  std::mt19937_64 rng(20261130);
  const unsigned long long extremes[] = {0,
                                         1,
                                         100,
                                         101,
                                         150,
                                         151,
                                         std::numeric_limits<unsigned int>::max(),
                                         std::numeric_limits<unsigned int>::max() + 1ULL,
                                         std::numeric_limits<unsigned long long>::max()};
  auto value = [&] {
    return rng() % 2 == 0 ? extremes[rng() % std::size(extremes)] : rng() >> (rng() % 64);
  };
  const int64_t start_ns = WallNowNs();
  for (int step = 0; step < 300; ++step) {
    const int64_t now_ns = start_ns + step * 100 * kNsPerMs;
    for (int n = 0; n < 4; ++n) {
      fake_->Set(rng() % 4, fields[rng() % std::size(fields)], value());
    }
    const unsigned long long stamps[] = {0, static_cast<unsigned long long>(now_ns / kNsPerUs),
                                         std::numeric_limits<unsigned long long>::max(), value()};
    ASSERT_EQ(
        fake_->push_sample(rng() % 4,
                           rng() % 2 == 0 ? NVML_GPU_UTILIZATION_SAMPLES : NVML_TOTAL_POWER_SAMPLES,
                           stamps[rng() % std::size(stamps)], static_cast<unsigned>(value())),
        0);
    const Status status = collector->Collect(now_ns);
    EXPECT_TRUE(status.ok()) << status.ToString();
  }
  collector.reset();  // stops the background thread (PCIe readings)
  const std::map<std::string, double> limits = {
      {"titan_gpu_info", 1},
      {"titan_gpu_utilization_ratio", 1},
      {"titan_gpu_memory_utilization_ratio", 1},
      {"titan_gpu_memory_used_bytes", kNvmlMaxMemoryBytes},
      {"titan_gpu_memory_total_bytes", kNvmlMaxMemoryBytes},
      {"titan_gpu_power_watts", kNvmlMaxPowerWatts},
      {"titan_gpu_sm_clock_hertz", kNvmlMaxClockHertz},
      {"titan_gpu_memory_clock_hertz", kNvmlMaxClockHertz},
      {"titan_gpu_temperature_celsius", kNvmlMaxTemperatureCelsius},
      {"titan_gpu_pcie_transmit_bytes_per_second", kNvmlMaxPcieBytesPerSecond},
      {"titan_gpu_pcie_receive_bytes_per_second", kNvmlMaxPcieBytesPerSecond},
  };
  size_t gauge_points = 0;
  for (Series* series : registry_.AllSeries()) {
    for (const RecordedPoint& p : Points(series)) {
      ASSERT_TRUE(std::isfinite(p.value)) << series->Key();
      ASSERT_GE(p.value, 0) << series->Key();
      if (series->desc().kind == SignalKind::kGauge) {
        ASSERT_EQ(limits.count(series->desc().name), 1u) << series->Key();
        ASSERT_LE(p.value, limits.at(series->desc().name)) << series->Key();
        ++gauge_points;
      }
    }
  }
  EXPECT_GT(gauge_points, 1000u);  // plausible readings still got through
  EXPECT_GT(Invalid().size(), 100u);
}

TEST_F(NvmlCollectorTest, MissingLibraryIsOneFailedPreconditionAndNothingElse) {
  auto collector = MakeNvmlCollector("/nonexistent/libnvidia-ml.so.1");
  testing::internal::CaptureStderr();
  const Status status = collector->Init(ctx_);
  const std::string logged = testing::internal::GetCapturedStderr();
  EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(),
            "NVML not found (/nonexistent/libnvidia-ml.so.1): no GPU signals; everything else "
            "runs");
  EXPECT_EQ(logged, "") << "the agent reports Init's status once; the collector adds nothing";
  EXPECT_EQ(collector->Collect(WallNowNs()).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(registry_.series_count(), 0u);
}

TEST_F(NvmlCollectorTest, LibraryPathComesFromTheEnvironmentByDefault) {
  ASSERT_EQ(setenv("TITAN_NVML_LIBRARY", "/nonexistent/from-env/libnvidia-ml.so.1", 1), 0);
  auto collector = MakeNvmlCollector();
  const Status status = collector->Init(ctx_);
  unsetenv("TITAN_NVML_LIBRARY");
  EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(status.message().find("/nonexistent/from-env/libnvidia-ml.so.1"), std::string::npos)
      << status.ToString();
}

TEST_F(NvmlCollectorTest, MissingCoreSymbolFailsInitNamingIt) {
  UseFake(TITAN_FAKE_NVML_BROKEN);
  auto collector = Make();
  const Status status = collector->Init(ctx_);
  EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(status.message().find("nvmlDeviceGetCount_v2"), std::string::npos) << status.ToString();
  EXPECT_EQ(registry_.series_count(), 0u);
}

TEST_F(NvmlCollectorTest, MissingOptionalSymbolsDisableOnlyTheirSignals) {
  UseFake(TITAN_FAKE_NVML_MINIMAL);
  fake_->Set(0, "reasons", TITAN_NVML_CLOCK_EVENT_SW_THERMAL_SLOWDOWN);
  auto collector = Make();
  testing::internal::CaptureStderr();
  ASSERT_TRUE(collector->Init(ctx_).ok());
  const int64_t t0 = WallNowNs();
  ASSERT_TRUE(collector->Collect(t0).ok());
  ASSERT_TRUE(collector->Collect(t0 + 100 * kNsPerMs).ok());
  ASSERT_TRUE(collector->Collect(t0 + 200 * kNsPerMs).ok());
  const std::string logged = testing::internal::GetCapturedStderr();
  // Each missing entry point is logged once, at Init.
  for (const char* name : {"nvmlDeviceGetTotalEnergyConsumption", "nvmlDeviceGetSamples",
                           "nvmlDeviceGetPcieThroughput", "nvmlEventSetCreate"}) {
    const size_t first = logged.find(name);
    EXPECT_NE(first, std::string::npos) << name << " not logged:\n" << logged;
    EXPECT_EQ(logged.find(name, first + 1), std::string::npos) << name << " logged twice";
  }
  EXPECT_FALSE(HasFamily("titan_gpu_energy_joules_total"));
  EXPECT_FALSE(HasFamily("titan_gpu_pcie_transmit_bytes_per_second"));
  // Without the sample buffer, utilisation and power come from the instantaneous readings; the
  // clock events from the older nvmlDeviceGetCurrentClocksThrottleReasons name.
  EXPECT_EQ(Points(Find("titan_gpu_utilization_ratio", 3)).size(), 3u);
  EXPECT_DOUBLE_EQ(Last("titan_gpu_utilization_ratio", 3), 0.53);
  EXPECT_DOUBLE_EQ(Last("titan_gpu_power_watts", 3), 303);
  EXPECT_NEAR(Last("titan_gpu_throttle_seconds_total", 0, "sw_thermal_slowdown"), 0.2, 1e-9);
  EXPECT_GT(fake_->calls("nvmlDeviceGetCurrentClocksThrottleReasons"), 0u);
}

TEST_F(NvmlCollectorTest, NotSupportedTurnsOffOneReadingOfOneGpu) {
  UseFake(TITAN_FAKE_NVML_FULL);
  ASSERT_EQ(fake_->fail(0, "nvmlDeviceGetTemperature", NVML_ERROR_NOT_SUPPORTED), 0);
  auto collector = Make();
  ASSERT_TRUE(collector->Init(ctx_).ok());
  const int64_t t0 = WallNowNs();
  for (int n = 0; n < 3; ++n) ASSERT_TRUE(collector->Collect(t0 + n * 100 * kNsPerMs).ok());
  EXPECT_TRUE(Points(Find("titan_gpu_temperature_celsius", 0)).empty());
  EXPECT_DOUBLE_EQ(Last("titan_gpu_temperature_celsius", 1), 41);
  EXPECT_DOUBLE_EQ(Last("titan_gpu_utilization_ratio", 0), 0.50);
  // GPU 0 was asked once, then never again; the other 7 GPUs three times each.
  EXPECT_EQ(fake_->calls("nvmlDeviceGetTemperature"), 1u + 7 * 3);
}

TEST_F(NvmlCollectorTest, TransientFailureIsReportedButOtherReadingsGoOn) {
  UseFake(TITAN_FAKE_NVML_FULL);
  ASSERT_EQ(fake_->fail(2, "nvmlDeviceGetPowerUsage", NVML_ERROR_UNKNOWN), 0);
  auto collector = Make();
  ASSERT_TRUE(collector->Init(ctx_).ok());
  const int64_t t0 = WallNowNs();
  const Status status = collector->Collect(t0);
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
  EXPECT_NE(status.message().find("gpu 2"), std::string::npos) << status.ToString();
  EXPECT_NE(status.message().find("nvmlDeviceGetPowerUsage"), std::string::npos);
  EXPECT_TRUE(Points(Find("titan_gpu_power_watts", 2)).empty());
  EXPECT_DOUBLE_EQ(Last("titan_gpu_temperature_celsius", 2), 42);
  EXPECT_DOUBLE_EQ(Last("titan_gpu_power_watts", 3), 303);
  // The reading is not turned off: once the driver recovers, it is recorded again.
  ASSERT_EQ(fake_->fail(2, "nvmlDeviceGetPowerUsage", NVML_SUCCESS), 0);
  EXPECT_TRUE(collector->Collect(t0 + 100 * kNsPerMs).ok());
  EXPECT_DOUBLE_EQ(Last("titan_gpu_power_watts", 2), 302);
}

TEST_F(NvmlCollectorTest, EnergyAndEccCountersSurviveADriverReload) {
  UseFake(TITAN_FAKE_NVML_FULL, 1);
  auto collector = Make();
  ASSERT_TRUE(collector->Init(ctx_).ok());
  const int64_t t0 = WallNowNs();
  fake_->Set(0, "energy_mj", 1'000'000);
  fake_->Set(0, "ecc_corrected", 5);
  ASSERT_TRUE(collector->Collect(t0).ok());
  fake_->Set(0, "energy_mj", 1'500'000);
  ASSERT_TRUE(collector->Collect(t0 + 100 * kNsPerMs).ok());
  EXPECT_DOUBLE_EQ(Last("titan_gpu_energy_joules_total", 0), 1500);
  // The driver reloaded: its totals restart from zero; the exported counters keep growing.
  fake_->Set(0, "energy_mj", 100'000);
  fake_->Set(0, "ecc_corrected", 1);
  ASSERT_TRUE(collector->Collect(t0 + 200 * kNsPerMs).ok());
  EXPECT_DOUBLE_EQ(Last("titan_gpu_energy_joules_total", 0), 1600);
  EXPECT_DOUBLE_EQ(Last("titan_gpu_ecc_errors_total", 0, "corrected"), 6);
}

// A driver that keeps answering with the readings of the past (after an XID error): the energy
// counter stops while the GPU reports 300 W. Said once per episode, naming the GPU.
TEST_F(NvmlCollectorTest, AFrozenEnergyCounterWhileDrawingPowerIsReportedOnce) {
  UseFake(TITAN_FAKE_NVML_FULL, 2);
  auto collector = Make();
  ASSERT_TRUE(collector->Init(ctx_).ok());
  const int64_t t0 = WallNowNs();
  auto frozen = [&] {
    int n = 0;
    for (const std::string& what : Invalid())
      n += what.find("energy counter frozen") != std::string::npos;
    return n;
  };
  for (int second = 0; second <= 12; ++second) {
    fake_->Set(0, "energy_mj", 5'000'000);                     // stuck on gpu 0
    fake_->Set(1, "energy_mj", 5'000'000 + second * 300'000);  // 300 W on gpu 1
    ASSERT_TRUE(collector->Collect(t0 + second * kNsPerSecond).ok());
    if (second < 10) {
      EXPECT_EQ(frozen(), 0) << "reported after " << second << " s";
    }
  }
  ASSERT_EQ(frozen(), 1) << ::testing::PrintToString(Invalid());
  for (const std::string& what : Invalid()) {
    if (what.find("energy counter frozen") == std::string::npos) continue;
    EXPECT_NE(what.find("gpu 0: energy counter frozen at 5000 J"), std::string::npos) << what;
    EXPECT_NE(what.find("while drawing 300 W"), std::string::npos) << what;
  }
  // An idle GPU (no power drawn) may keep its counter.
  fake_->Set(1, "power_mw", 0);
  for (int second = 13; second <= 30; ++second) {
    ASSERT_TRUE(collector->Collect(t0 + second * kNsPerSecond).ok());
  }
  EXPECT_EQ(frozen(), 1);
}

TEST_F(NvmlCollectorTest, XidErrorsAreCountedPerGpuAndXid) {
  UseFake(TITAN_FAKE_NVML_FULL);
  auto collector = Make();
  ASSERT_TRUE(collector->Init(ctx_).ok());
  ASSERT_EQ(fake_->inject_xid(3, 79), 0);
  ASSERT_EQ(fake_->inject_xid(5, 48), 0);
  ASSERT_EQ(fake_->inject_xid(5, 48), 0);
  auto counter = [&](int gpu, const char* xid) {
    Series* series = Find("titan_gpu_xid_errors_total", gpu, xid);
    return series == nullptr ? 0.0 : series->CounterValue();
  };
  ASSERT_TRUE(Eventually([&] { return counter(3, "79") == 1 && counter(5, "48") == 2; }))
      << "gpu3/79=" << counter(3, "79") << " gpu5/48=" << counter(5, "48");
  const Series* series = Find("titan_gpu_xid_errors_total", 3, "79");
  EXPECT_EQ(series->labels(), (LabelValues{"3", FakeUuid(3), "79"}));
  EXPECT_EQ(Find("titan_gpu_xid_errors_total", 0), nullptr);
}

TEST_F(NvmlCollectorTest, PcieThroughputIsReadInTheBackground) {
  UseFake(TITAN_FAKE_NVML_FULL);
  fake_->Set(2, "pcie_tx", 12345);
  fake_->Set(2, "pcie_rx", 678);
  auto collector = Make(/*pcie_period_ns=*/10 * kNsPerMs);
  ASSERT_TRUE(collector->Init(ctx_).ok());
  auto recorded = [&](const char* name) {
    Series* series = Find(name, 2);
    return series != nullptr && series->LastTimeNs() > 0;
  };
  ASSERT_TRUE(Eventually([&] {
    return recorded("titan_gpu_pcie_transmit_bytes_per_second") &&
           recorded("titan_gpu_pcie_receive_bytes_per_second");
  }));
  EXPECT_DOUBLE_EQ(Last("titan_gpu_pcie_transmit_bytes_per_second", 2), 12345.0 * 1024);
  EXPECT_DOUBLE_EQ(Last("titan_gpu_pcie_receive_bytes_per_second", 2), 678.0 * 1024);
}

TEST_F(NvmlCollectorTest, DestructionShutsNvmlDownAndFreesTheEventSet) {
  UseFake(TITAN_FAKE_NVML_FULL);
  auto collector = Make();
  ASSERT_TRUE(collector->Init(ctx_).ok());
  EXPECT_EQ(fake_->active_inits(), 1);
  EXPECT_EQ(fake_->live_event_sets(), 1);
  collector.reset();
  EXPECT_EQ(fake_->active_inits(), 0);
  EXPECT_EQ(fake_->live_event_sets(), 0);
}

}  // namespace
}  // namespace titan
