// Sampler with real threads and two collectors: one whose source hangs (a test collector that
// blocks inside Collect() until released, standing in for an NVML call on a GPU that fell off
// the bus) and one healthy. The hung one is reported stuck once and down; the other samples on.
// And a collector whose calls fail, stepped one call at a time: down after kDownAfterFailures
// failures in a row, up again after a success.
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

// Returns a status the test picks for each Collect(), one call at a time: every call waits inside
// Collect() until the test finishes it, so the test knows exactly which results the sampler has
// seen.
class SteppedCollector : public Collector {
 public:
  std::string_view name() const override { return "stepped"; }
  Status Init(const CollectorContext&) override { return OkStatus(); }
  Status Collect(int64_t) override {
    std::unique_lock<std::mutex> lock(mu_);
    ++entered_;
    cv_.notify_all();
    cv_.wait(lock, [this] { return free_ || finished_ >= entered_; });
    return result_;
  }
  // Waits (up to 30 s, a bound on "never") until a call is inside Collect().
  bool WaitInside() {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(30), [this] { return entered_ > finished_; });
  }
  // Makes the call inside Collect() return `result`, then waits until the next call has entered,
  // which the sampler makes only after it has taken in this result.
  bool Finish(Status result) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      result_ = std::move(result);
      ++finished_;
    }
    cv_.notify_all();
    return WaitInside();
  }
  // Lets every later call return at once (before Stop()).
  void Free() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      free_ = true;
    }
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t entered_ = 0, finished_ = 0;
  bool free_ = false;
  Status result_;
};

// Issue 14 #14: titan_collector_up stayed 1 while every Collect() failed.
TEST(SamplerTest, ACollectorIsDownAfterConsecutiveFailuresAndUpAfterASuccess) {
  MetricRegistry registry;
  CollectorContext context;
  context.registry = &registry;
  Sampler sampler(context);
  auto owned = std::make_unique<SteppedCollector>();
  SteppedCollector* stepped = owned.get();
  std::vector<CollectorSpec> specs;
  specs.push_back({std::move(owned), kNsPerMs});
  sampler.Start(std::move(specs));
  ASSERT_TRUE(stepped->WaitInside());
  const auto up = [&] {
    sampler.RecordUp(WallNowNs());
    return Up(registry, "stepped");
  };
  EXPECT_EQ(up(), 1);

  for (uint64_t i = 1; i < kDownAfterFailures; ++i) {
    ASSERT_TRUE(stepped->Finish(UnavailableError("source gone")));
    EXPECT_EQ(up(), 1) << "one unreadable sample is not an outage (" << i << " failures)";
  }
  ASSERT_TRUE(stepped->Finish(UnavailableError("source gone")));
  EXPECT_EQ(up(), 0) << kDownAfterFailures << " failures in a row";
  EXPECT_EQ(sampler.Statuses()[0].consecutive_errors, kDownAfterFailures);
  ASSERT_TRUE(stepped->Finish(UnavailableError("source gone")));
  EXPECT_EQ(up(), 0);

  ASSERT_TRUE(stepped->Finish(OkStatus()));
  EXPECT_EQ(up(), 1) << "not up again after a Collect() that succeeded";
  EXPECT_EQ(sampler.Statuses()[0].consecutive_errors, 0u);
  EXPECT_EQ(sampler.Statuses()[0].errors, kDownAfterFailures + 1);
  ASSERT_TRUE(stepped->Finish(UnavailableError("source gone")));
  EXPECT_EQ(up(), 1) << "the count starts again after a success";

  stepped->Free();
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
