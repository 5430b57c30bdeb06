// Sampler with real threads and two collectors: one whose source hangs (a test collector that
// blocks inside Collect() until released, standing in for an NVML call on a GPU that fell off
// the bus) and one healthy. The hung one is reported stuck once and down; the other samples on.
#include "src/agent/sampler.h"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "src/base/clock.h"

namespace titan {
namespace {

class CountingCollector : public Collector {
 public:
  explicit CountingCollector(std::string name) : name_(std::move(name)) {}
  std::string_view name() const override { return name_; }
  Status Init(const CollectorContext&) override { return OkStatus(); }
  Status Collect(int64_t) override {
    ++calls;
    return OkStatus();
  }
  std::atomic<int> calls{0};

 private:
  std::string name_;
};

// Blocks in Collect() while `hung` is set.
class HangingCollector : public Collector {
 public:
  std::string_view name() const override { return "hanging"; }
  Status Init(const CollectorContext&) override { return OkStatus(); }
  Status Collect(int64_t) override {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return !hung_; });
    return OkStatus();
  }
  void Release() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      hung_ = false;
    }
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool hung_ = true;
};

double Up(const MetricRegistry& registry, const std::string& collector) {
  const Series* s = registry.Find("titan_collector_up{collector=\"" + collector + "\"}");
  return s ? s->Window(WallNowNs(), 1).last : -1;
}

double StuckTotal(const MetricRegistry& registry) {
  const Series* s = registry.Find("titan_collector_stuck_total{collector=\"hanging\"}");
  return s ? s->CounterValue() : -1;
}

// Polls `done` every 10 ms for up to 10 s (a loaded CI machine may start threads late).
template <typename F>
bool WaitFor(F done) {
  for (int i = 0; i < 1000; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

TEST(SamplerTest, AHungCollectorIsReportedStuckOnceAndTheOthersSampleOn) {
  MetricRegistry registry;
  CollectorContext context;
  context.registry = &registry;
  Sampler sampler(context, SamplerOptions{200 * kNsPerMs});
  auto hanging = std::make_unique<HangingCollector>();
  auto counting = std::make_unique<CountingCollector>("healthy");
  HangingCollector* hang = hanging.get();
  CountingCollector* healthy = counting.get();
  std::vector<CollectorSpec> specs;
  specs.push_back({std::move(hanging), 10 * kNsPerMs});
  specs.push_back({std::move(counting), 10 * kNsPerMs});
  sampler.Start(std::move(specs));

  sampler.RecordUp(WallNowNs());
  EXPECT_EQ(Up(registry, "hanging"), 1) << "not stuck yet: well under the 200 ms bound";
  EXPECT_EQ(StuckTotal(registry), 0);

  ASSERT_TRUE(WaitFor([&] {
    sampler.RecordUp(WallNowNs());
    return StuckTotal(registry) >= 1;
  }));
  const int healthy_before = healthy->calls.load();
  sampler.RecordUp(WallNowNs());  // reported once per episode, not per call
  EXPECT_EQ(Up(registry, "hanging"), 0);
  EXPECT_EQ(Up(registry, "healthy"), 1);
  EXPECT_EQ(StuckTotal(registry), 1);
  for (const CollectorStatus& s : sampler.Statuses()) {
    if (s.name == "hanging") {
      EXPECT_GE(s.stuck_seconds, 0.2);
    } else {
      EXPECT_EQ(s.stuck_seconds, 0) << s.name;
    }
  }
  EXPECT_TRUE(WaitFor([&] { return healthy->calls.load() > healthy_before + 3; }))
      << "the healthy collector stopped sampling";

  hang->Release();
  EXPECT_TRUE(WaitFor([&] {
    sampler.RecordUp(WallNowNs());
    return Up(registry, "hanging") == 1;
  })) << "not reported up again after the call returned";
  EXPECT_EQ(StuckTotal(registry), 1);
  sampler.Stop();
}

// Stop() returns although a collector never comes back (the agent must be able to exit).
TEST(SamplerTest, StopDoesNotWaitForAStuckCollector) {
  MetricRegistry registry;
  CollectorContext context;
  context.registry = &registry;
  // Outlives the sampler: the abandoned thread still waits inside it when the test ends.
  static HangingCollector* const forever = new HangingCollector();
  struct Borrowed : Collector {
    std::string_view name() const override { return forever->name(); }
    Status Init(const CollectorContext& c) override { return forever->Init(c); }
    Status Collect(int64_t t) override { return forever->Collect(t); }
  };
  Sampler sampler(context, SamplerOptions{50 * kNsPerMs});
  std::vector<CollectorSpec> specs;
  specs.push_back({std::make_unique<Borrowed>(), 10 * kNsPerMs});
  sampler.Start(std::move(specs));
  ASSERT_TRUE(WaitFor([&] { return sampler.Statuses()[0].stuck_seconds > 0; }));
  // Stop() on another thread, so that a Stop() that hangs fails this test instead of hanging
  // it; 30 s is a bound on "forever", not a speed claim.
  std::atomic<bool> stopped{false};
  std::thread stopper([&] {
    sampler.Stop();
    stopped = true;
  });
  for (int i = 0; i < 3000 && !stopped; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (!stopped) {
    stopper.detach();
    FAIL() << "Sampler::Stop() waited for a collector that never returns";
  }
  stopper.join();
}

}  // namespace
}  // namespace titan
