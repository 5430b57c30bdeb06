#include "src/collectors/nvml_collector.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "src/base/check.h"
#include "src/base/clock.h"
#include "src/base/log.h"
#include "src/collectors/frozen_counter.h"
#include "src/collectors/nvml_background.h"
#include "src/collectors/nvml_device.h"
#include "src/collectors/nvml_loader.h"
#include "src/collectors/nvml_signals.h"

namespace titan {
namespace {

// The readings a GPU may refuse one by one (NOT_SUPPORTED on this model, or a driver without the
// entry point); each is then off for that GPU.
enum Reading : int {
  kUtilizationRates,
  kUtilizationSamples,
  kPowerSamples,
  kMemoryInfo,
  kPowerUsage,
  kEnergy,
  kSmClock,
  kMemoryClock,
  kTemperature,
  kClockEvents,
  kEcc,
  kReadingCount
};

constexpr std::array<const char*, kReadingCount> kReadingCall = {
    "nvmlDeviceGetUtilizationRates",
    "nvmlDeviceGetSamples(NVML_GPU_UTILIZATION_SAMPLES)",
    "nvmlDeviceGetSamples(NVML_TOTAL_POWER_SAMPLES)",
    "nvmlDeviceGetMemoryInfo",
    "nvmlDeviceGetPowerUsage",
    "nvmlDeviceGetTotalEnergyConsumption",
    "nvmlDeviceGetClockInfo(NVML_CLOCK_SM)",
    "nvmlDeviceGetClockInfo(NVML_CLOCK_MEM)",
    "nvmlDeviceGetTemperature",
    "nvmlDeviceGetCurrentClocksEventReasons",
    "nvmlDeviceGetTotalEccErrors",
};

// The driver's sample buffer holds ~100 entries; a larger count is a driver glitch.
constexpr unsigned int kMaxSamplesPerCall = 4096;
// Samples stamped further ahead than this of the collector's clock are not believed (a bogus
// timestamp must not push lastSeenTimeStamp past every future sample).
constexpr int64_t kMaxSampleFutureNs = 60 * kNsPerSecond;
// The driver buffers a utilisation sample every ~1/6 s and a power sample every ~20 ms; a buffer
// without a new sample for this long is dry (idle driver sampler, or none on this model).
constexpr int64_t kSamplesDryNs = kNsPerSecond;
// An energy counter unchanged this long while the GPU draws power means stale readings.
constexpr int64_t kEnergyFrozenNs = 10 * kNsPerSecond;

// Per GPU state only the sampling thread touches.
struct DeviceState {
  std::array<bool, kReadingCount> off{};
  Series* info = nullptr;
  Series* utilization = nullptr;
  Series* memory_utilization = nullptr;
  Series* memory_used = nullptr;
  Series* memory_total = nullptr;
  Series* power = nullptr;
  Series* energy = nullptr;
  Series* sm_clock = nullptr;
  Series* memory_clock = nullptr;
  Series* temperature = nullptr;
  std::array<Series*, kNvmlClockEventReasonCount> throttle{};
  Series* ecc_corrected = nullptr;
  Series* ecc_uncorrected = nullptr;
  // nvmlDeviceGetSamples cursors: the newest driver timestamp seen (microseconds), and when
  // (collector clock) the buffer last had a new sample: while it is dry for longer than
  // kSamplesDryNs the instantaneous reading is recorded instead.
  unsigned long long utilization_last_seen_us = 0;
  unsigned long long power_last_seen_us = 0;
  int64_t utilization_fresh_ns = 0;
  int64_t power_fresh_ns = 0;
  // The previous clock event reading, whose reasons are charged with the time until this one.
  bool clock_events_known = false;
  unsigned long long clock_events = 0;
  int64_t clock_events_time_ns = 0;
  // The energy counter, which must advance while the GPU draws power.
  FrozenCounter energy_frozen{kEnergyFrozenNs};
};

bool DecodeSample(nvmlValueType_t type, const nvmlValue_t& value, double* out) {
  switch (type) {
    case NVML_VALUE_TYPE_DOUBLE:
      *out = value.dVal;
      return true;
    case NVML_VALUE_TYPE_UNSIGNED_INT:
      *out = value.uiVal;
      return true;
    case NVML_VALUE_TYPE_UNSIGNED_LONG:
      *out = static_cast<double>(value.ulVal);
      return true;
    case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG:
      *out = static_cast<double>(value.ullVal);
      return true;
    case NVML_VALUE_TYPE_SIGNED_LONG_LONG:
      *out = static_cast<double>(value.sllVal);
      return true;
  }
  return false;
}

// A reading as the driver gave it: integers without an exponent ("808334905", "100000").
std::string FormatRaw(double raw) {
  if (std::isfinite(raw) && raw == std::floor(raw) && std::fabs(raw) < 1e19) {
    return fmt::format("{:.0f}", raw);
  }
  return fmt::format("{}", raw);
}

std::string ReadString(nvmlReturn_t (*get)(nvmlDevice_t, char*, unsigned), nvmlDevice_t handle,
                       const char* fallback) {
  if (get == nullptr) return fallback;
  char buffer[128] = {};
  if (get(handle, buffer, sizeof(buffer) - 1) != NVML_SUCCESS) return fallback;
  return std::string(buffer, strnlen(buffer, sizeof(buffer)));
}

class NvmlCollector final : public Collector {
 public:
  explicit NvmlCollector(NvmlCollectorOptions options) : options_(std::move(options)) {}
  ~NvmlCollector() override { Close(); }

  std::string_view name() const override { return "nvml"; }
  Status Init(const CollectorContext& ctx) override;
  Status Collect(int64_t now_ns) override;

 private:
  void Close();
  Status OpenDevices();
  // Sizes states_ and turns off the readings whose entry point the driver lacks (logged once).
  void InitStates();
  void ProbeSamples(size_t i, int64_t now_ns);
  void CreateSeries(size_t i);
  void CollectDevice(size_t i, int64_t now_ns, Status* error);
  void CollectClockEvents(size_t i, int64_t now_ns, Status* error);
  // Reports (once per episode) an energy counter that stopped while the GPU draws power.
  void CheckEnergyAdvances(size_t i, int64_t now_ns, unsigned long long mj);
  // Records the driver's buffered samples newer than *last_seen_us, each at its own timestamp,
  // and advances the cursor. Returns how many new samples the buffer had.
  int DrainSamples(size_t i, nvmlSamplingType_t type, Reading reading, Series* series, double scale,
                   double max_raw, const char* what, const char* unit,
                   unsigned long long* last_seen_us, int64_t now_ns, Status* error);
  // Whether `result` is a success; otherwise turns the reading off for this GPU (NOT_SUPPORTED
  // and the like, logged once) or keeps the first transient failure in *error (may be null).
  bool Check(size_t i, Reading reading, nvmlReturn_t result, Status* error);
  // Records raw * scale into `series` when 0 <= raw <= max_raw, else reports it as invalid.
  void Gauge(size_t i, Series* series, int64_t time_ns, double raw, double max_raw, double scale,
             const char* what, const char* unit);
  void Invalid(std::string what);

  const NvmlCollectorOptions options_;
  CollectorContext ctx_;
  std::unique_ptr<NvmlLibrary> lib_;
  bool nvml_initialized_ = false;
  std::vector<NvmlDevice> devices_;
  std::vector<DeviceState> states_;
  std::vector<nvmlSample_t> sample_buffer_;
  std::unique_ptr<NvmlBackground> background_;
};

void NvmlCollector::Close() {
  background_.reset();
  if (nvml_initialized_) lib_->fn().shutdown();
  nvml_initialized_ = false;
  devices_.clear();
  states_.clear();
  lib_.reset();
}

Status NvmlCollector::Init(const CollectorContext& ctx) {
  TITAN_CHECK(lib_ == nullptr) << "NvmlCollector::Init called twice";
  TITAN_CHECK(ctx.registry != nullptr) << "CollectorContext without a registry";
  ctx_ = ctx;
  const std::string path =
      options_.library_path.empty() ? DefaultNvmlLibraryPath() : options_.library_path;
  TITAN_ASSIGN_OR_RETURN(lib_, NvmlLibrary::Load(path));
  if (nvmlReturn_t r = lib_->fn().init(); r != NVML_SUCCESS) {
    Status status = FailedPreconditionError(fmt::format(
        "{} ({}): no GPU signals; is the NVIDIA driver loaded? (`nvidia-smi` should list the GPUs)",
        lib_->Describe("nvmlInit_v2", r), path));
    Close();
    return status;
  }
  nvml_initialized_ = true;
  if (Status status = OpenDevices(); !status.ok()) {
    Close();
    return status;
  }
  InitStates();
  const int64_t now_ns = WallNowNs();
  for (size_t i = 0; i < devices_.size(); ++i) {
    ProbeSamples(i, now_ns);
    CreateSeries(i);
  }
  if (options_.watch_xid || options_.poll_pcie) {
    background_ = std::make_unique<NvmlBackground>(
        *lib_, ctx_.registry, devices_,
        NvmlBackgroundOptions{options_.watch_xid, options_.poll_pcie, options_.pcie_period_ns,
                              ctx_.interval_ns, ctx_.invalid_sample});
  }
  Log(LogLevel::kInfo, "nvml", "{} GPU(s) via {}; driver sample buffer: {}; XID events: {}",
      devices_.size(), path, states_[0].off[kUtilizationSamples] ? "no" : "yes",
      background_ != nullptr && background_->watching_xid() ? "yes" : "no");
  return OkStatus();
}

Status NvmlCollector::OpenDevices() {
  const NvmlFunctions& fn = lib_->fn();
  unsigned int count = 0;
  if (nvmlReturn_t r = fn.get_count(&count); r != NVML_SUCCESS) {
    return FailedPreconditionError(
        fmt::format("{}: no GPU signals", lib_->Describe("nvmlDeviceGetCount_v2", r)));
  }
  if (count == 0) return FailedPreconditionError("NVML lists no GPU: no GPU signals");
  std::string first_error;
  for (unsigned int index = 0; index < count; ++index) {
    NvmlDevice device;
    device.index = index;
    device.gpu = std::to_string(index);
    if (nvmlReturn_t r = fn.get_handle_by_index(index, &device.handle); r != NVML_SUCCESS) {
      std::string error = lib_->Describe("nvmlDeviceGetHandleByIndex_v2", r);
      Log(LogLevel::kWarning, "nvml", "gpu {}: {}: this GPU is skipped", index, error);
      if (first_error.empty()) first_error = std::move(error);
      continue;
    }
    device.uuid = ReadString(fn.get_uuid, device.handle, "");
    device.name = ReadString(fn.get_name, device.handle, "unknown");
    devices_.push_back(std::move(device));
  }
  if (devices_.empty()) {
    return FailedPreconditionError(fmt::format(
        "none of the {} GPUs NVML lists can be opened ({}): no GPU signals", count, first_error));
  }
  return OkStatus();
}

void NvmlCollector::InitStates() {
  for (const std::string& name : lib_->missing_optional()) {
    Log(LogLevel::kInfo, "nvml", "{} lacks {}: the signals it feeds are off", lib_->path(), name);
  }
  const NvmlFunctions& fn = lib_->fn();
  const std::array<bool, kReadingCount> missing = {
      fn.get_utilization_rates == nullptr, fn.get_samples == nullptr,
      fn.get_samples == nullptr,           fn.get_memory_info == nullptr,
      fn.get_power_usage == nullptr,       fn.get_total_energy_consumption == nullptr,
      fn.get_clock_info == nullptr,        fn.get_clock_info == nullptr,
      fn.get_temperature == nullptr,       fn.get_clocks_event_reasons == nullptr,
      fn.get_total_ecc_errors == nullptr,
  };
  states_.assign(devices_.size(), DeviceState{});
  for (DeviceState& state : states_) state.off = missing;
}

void NvmlCollector::ProbeSamples(size_t i, int64_t now_ns) {
  DeviceState& s = states_[i];
  const auto now_us = static_cast<unsigned long long>(now_ns / kNsPerUs);
  s.utilization_last_seen_us = now_us;
  s.power_last_seen_us = now_us;
  for (auto [type, reading] : {std::pair{NVML_GPU_UTILIZATION_SAMPLES, kUtilizationSamples},
                               std::pair{NVML_TOTAL_POWER_SAMPLES, kPowerSamples}}) {
    if (s.off[reading]) continue;
    nvmlValueType_t value_type = NVML_VALUE_TYPE_UNSIGNED_INT;
    unsigned int count = 0;
    const nvmlReturn_t r =
        lib_->fn().get_samples(devices_[i].handle, type, now_us, &value_type, &count, nullptr);
    if (r != NVML_ERROR_NOT_FOUND) Check(i, reading, r, nullptr);
  }
}

void NvmlCollector::CreateSeries(size_t i) {
  const NvmlSignalDescs& d = NvmlDescs();
  NvmlDevice& device = devices_[i];
  DeviceState& s = states_[i];
  MetricRegistry& registry = *ctx_.registry;
  const int64_t interval = ctx_.interval_ns;
  const int64_t sampled = std::min(interval, kNvmlDriverSampleIntervalNs);
  const LabelValues labels = {device.gpu, device.uuid};
  auto gauge = [&](const SignalDesc& desc, bool on, int64_t ring_interval) -> Series* {
    return on ? registry.GetOrCreate(desc, labels, ring_interval) : nullptr;
  };
  s.info = registry.GetOrCreate(d.info, {device.gpu, device.uuid, device.name}, 0);
  s.utilization = gauge(d.utilization, !s.off[kUtilizationRates] || !s.off[kUtilizationSamples],
                        s.off[kUtilizationSamples] ? interval : sampled);
  s.memory_utilization = gauge(d.memory_utilization, !s.off[kUtilizationRates], interval);
  s.memory_used = gauge(d.memory_used, !s.off[kMemoryInfo], interval);
  s.memory_total = gauge(d.memory_total, !s.off[kMemoryInfo], 0);
  s.power = gauge(d.power, !s.off[kPowerUsage] || !s.off[kPowerSamples],
                  s.off[kPowerSamples] ? interval : sampled);
  s.energy = gauge(d.energy, !s.off[kEnergy], interval);
  s.sm_clock = gauge(d.sm_clock, !s.off[kSmClock], interval);
  s.memory_clock = gauge(d.memory_clock, !s.off[kMemoryClock], interval);
  s.temperature = gauge(d.temperature, !s.off[kTemperature], interval);
  if (!s.off[kClockEvents]) {
    for (int r = 0; r < kNvmlClockEventReasonCount; ++r) {
      s.throttle[r] = registry.GetOrCreate(
          d.throttle, {device.gpu, device.uuid, NvmlClockEventReasons()[r].label}, interval);
    }
  }
  if (!s.off[kEcc]) {
    s.ecc_corrected = registry.GetOrCreate(d.ecc_errors, {device.gpu, device.uuid, "corrected"}, 0);
    s.ecc_uncorrected =
        registry.GetOrCreate(d.ecc_errors, {device.gpu, device.uuid, "uncorrected"}, 0);
  }
  if (options_.poll_pcie && lib_->fn().get_pcie_throughput != nullptr) {
    device.pcie_transmit = registry.GetOrCreate(d.pcie_transmit, labels, options_.pcie_period_ns);
    device.pcie_receive = registry.GetOrCreate(d.pcie_receive, labels, options_.pcie_period_ns);
  }
}

Status NvmlCollector::Collect(int64_t now_ns) {
  if (lib_ == nullptr)
    return FailedPreconditionError("nvml collector used without a successful Init");
  Status error;
  for (size_t i = 0; i < devices_.size(); ++i) CollectDevice(i, now_ns, &error);
  return error;
}

void NvmlCollector::CollectDevice(size_t i, int64_t now_ns, Status* error) {
  const NvmlFunctions& fn = lib_->fn();
  const nvmlDevice_t handle = devices_[i].handle;
  DeviceState& s = states_[i];
  RecordNvmlGauge(s.info, now_ns, 1);

  if (!s.off[kUtilizationSamples] &&
      DrainSamples(i, NVML_GPU_UTILIZATION_SAMPLES, kUtilizationSamples, s.utilization, 0.01,
                   kNvmlMaxPercent, "utilization", "%", &s.utilization_last_seen_us, now_ns,
                   error) > 0) {
    s.utilization_fresh_ns = now_ns;
  }
  if (!s.off[kPowerSamples] && DrainSamples(i, NVML_TOTAL_POWER_SAMPLES, kPowerSamples, s.power,
                                            1e-3, kNvmlMaxPowerWatts * 1e3, "power", "mW",
                                            &s.power_last_seen_us, now_ns, error) > 0) {
    s.power_fresh_ns = now_ns;
  }
  const bool utilization_dry =
      s.off[kUtilizationSamples] || now_ns - s.utilization_fresh_ns > kSamplesDryNs;
  const bool power_dry = s.off[kPowerSamples] || now_ns - s.power_fresh_ns > kSamplesDryNs;
  if (nvmlUtilization_t u{};
      !s.off[kUtilizationRates] &&
      Check(i, kUtilizationRates, fn.get_utilization_rates(handle, &u), error)) {
    if (utilization_dry) {
      Gauge(i, s.utilization, now_ns, u.gpu, kNvmlMaxPercent, 0.01, "utilization", "%");
    }
    Gauge(i, s.memory_utilization, now_ns, u.memory, kNvmlMaxPercent, 0.01, "memory utilization",
          "%");
  }
  if (nvmlMemory_t m{};
      !s.off[kMemoryInfo] && Check(i, kMemoryInfo, fn.get_memory_info(handle, &m), error)) {
    const auto total = static_cast<double>(m.total);
    if (total > kNvmlMaxMemoryBytes || m.used > m.total) {
      Invalid(fmt::format("gpu {}: memory used {} of {} bytes", devices_[i].gpu, m.used, m.total));
    } else {
      RecordNvmlGauge(s.memory_used, now_ns, static_cast<double>(m.used));
      RecordNvmlGauge(s.memory_total, now_ns, total);
    }
  }
  if (unsigned int mw = 0; power_dry && !s.off[kPowerUsage] &&
                           Check(i, kPowerUsage, fn.get_power_usage(handle, &mw), error)) {
    Gauge(i, s.power, now_ns, mw, kNvmlMaxPowerWatts * 1e3, 1e-3, "power", "mW");
  }
  if (unsigned long long mj = 0;
      !s.off[kEnergy] && Check(i, kEnergy, fn.get_total_energy_consumption(handle, &mj), error)) {
    if (s.energy != nullptr) s.energy->SetCounter(now_ns, static_cast<double>(mj) / 1e3);
    CheckEnergyAdvances(i, now_ns, mj);
  }
  for (auto [reading, type, series, what] :
       {std::tuple{kSmClock, NVML_CLOCK_SM, s.sm_clock, "SM clock"},
        std::tuple{kMemoryClock, NVML_CLOCK_MEM, s.memory_clock, "memory clock"}}) {
    if (unsigned int mhz = 0;
        !s.off[reading] && Check(i, reading, fn.get_clock_info(handle, type, &mhz), error)) {
      Gauge(i, series, now_ns, mhz, kNvmlMaxClockHertz / 1e6, 1e6, what, "MHz");
    }
  }
  if (unsigned int celsius = 0;
      !s.off[kTemperature] &&
      Check(i, kTemperature, fn.get_temperature(handle, NVML_TEMPERATURE_GPU, &celsius), error)) {
    Gauge(i, s.temperature, now_ns, celsius, kNvmlMaxTemperatureCelsius, 1, "temperature", "C");
  }
  if (!s.off[kClockEvents]) CollectClockEvents(i, now_ns, error);
  if (!s.off[kEcc]) {
    for (auto [type, series] : {std::pair{NVML_MEMORY_ERROR_TYPE_CORRECTED, s.ecc_corrected},
                                std::pair{NVML_MEMORY_ERROR_TYPE_UNCORRECTED, s.ecc_uncorrected}}) {
      unsigned long long count = 0;
      if (s.off[kEcc] ||
          !Check(i, kEcc, fn.get_total_ecc_errors(handle, type, NVML_VOLATILE_ECC, &count),
                 error)) {
        break;
      }
      if (series != nullptr) series->SetCounter(now_ns, static_cast<double>(count));
    }
  }
}

void NvmlCollector::CheckEnergyAdvances(size_t i, int64_t now_ns, unsigned long long mj) {
  DeviceState& s = states_[i];
  const WindowStats power = s.power != nullptr ? s.power->Window(now_ns, 1) : WindowStats{};
  const bool drawing = power.count > 0 && power.last >= 1.0;  // watts
  switch (s.energy_frozen.Update(now_ns, static_cast<double>(mj), drawing)) {
    case FrozenCounter::Change::kFroze:
      Invalid(fmt::format(
          "gpu {}: energy counter frozen at {} J for {:.0f} s while drawing {:.0f} W: the "
          "driver's readings are stale (look for an XID error or a GPU that fell off the bus)",
          devices_[i].gpu, mj / 1000, NsToSeconds(s.energy_frozen.frozen_for_ns(now_ns)),
          power.last));
      break;
    case FrozenCounter::Change::kMovedAgain:
      Log(LogLevel::kInfo, "nvml", "gpu {}: energy counter advances again", devices_[i].gpu);
      break;
    case FrozenCounter::Change::kNone:
      break;
  }
}

void NvmlCollector::CollectClockEvents(size_t i, int64_t now_ns, Status* error) {
  DeviceState& s = states_[i];
  unsigned long long reasons = 0;
  if (!Check(i, kClockEvents, lib_->fn().get_clocks_event_reasons(devices_[i].handle, &reasons),
             error)) {
    s.clock_events_known = false;
    return;
  }
  // The reasons of the previous reading are charged with the time since it, unless the gap is
  // so long (a stalled loop, a clock step) that nothing is known about what happened in it.
  const int64_t max_gap_ns = std::max<int64_t>(10 * ctx_.interval_ns, 2 * kNsPerSecond);
  const int64_t gap_ns = now_ns - s.clock_events_time_ns;
  if (s.clock_events_known && gap_ns > 0 && gap_ns <= max_gap_ns) {
    for (int r = 0; r < kNvmlClockEventReasonCount; ++r) {
      if ((s.clock_events & NvmlClockEventReasons()[r].bit) != 0 && s.throttle[r] != nullptr) {
        s.throttle[r]->AddCounter(now_ns, NsToSeconds(gap_ns));
      }
    }
  }
  s.clock_events_known = true;
  s.clock_events = reasons;
  s.clock_events_time_ns = now_ns;
}

int NvmlCollector::DrainSamples(size_t i, nvmlSamplingType_t type, Reading reading, Series* series,
                                double scale, double max_raw, const char* what, const char* unit,
                                unsigned long long* last_seen_us, int64_t now_ns, Status* error) {
  const NvmlFunctions& fn = lib_->fn();
  const nvmlDevice_t handle = devices_[i].handle;
  nvmlValueType_t value_type = NVML_VALUE_TYPE_UNSIGNED_INT;
  unsigned int count = 0;
  nvmlReturn_t r = fn.get_samples(handle, type, *last_seen_us, &value_type, &count, nullptr);
  if (r == NVML_ERROR_NOT_FOUND || !Check(i, reading, r, error) || count == 0) return 0;
  count = std::min(count, kMaxSamplesPerCall);
  sample_buffer_.resize(count);
  r = fn.get_samples(handle, type, *last_seen_us, &value_type, &count, sample_buffer_.data());
  if (r == NVML_ERROR_NOT_FOUND || !Check(i, reading, r, error)) return 0;
  count = std::min<unsigned int>(count, sample_buffer_.size());
  std::sort(sample_buffer_.begin(), sample_buffer_.begin() + count,
            [](const nvmlSample_t& a, const nvmlSample_t& b) { return a.timeStamp < b.timeStamp; });
  const auto future_limit_us =
      static_cast<unsigned long long>((now_ns + kMaxSampleFutureNs) / kNsPerUs);
  // A reading recorded while the buffer was dry may be newer than the first samples that follow.
  const int64_t recorded_until_ns = series != nullptr ? series->LastTimeNs() : 0;
  int fresh = 0;
  for (unsigned int k = 0; k < count; ++k) {
    const nvmlSample_t& sample = sample_buffer_[k];
    if (sample.timeStamp <= *last_seen_us) continue;
    if (sample.timeStamp > future_limit_us) {
      Invalid(fmt::format("gpu {}: {} sample stamped {} us, more than 60 s after now",
                          devices_[i].gpu, what, sample.timeStamp));
      continue;
    }
    *last_seen_us = sample.timeStamp;
    ++fresh;
    const int64_t time_ns = static_cast<int64_t>(sample.timeStamp) * kNsPerUs;
    if (time_ns <= recorded_until_ns) continue;
    double raw = 0;
    if (!DecodeSample(value_type, sample.sampleValue, &raw)) {
      Invalid(fmt::format("gpu {}: {} sample of unknown value type {}", devices_[i].gpu, what,
                          static_cast<int>(value_type)));
      continue;
    }
    Gauge(i, series, time_ns, raw, max_raw, scale, what, unit);
  }
  return fresh;
}

bool NvmlCollector::Check(size_t i, Reading reading, nvmlReturn_t result, Status* error) {
  if (result == NVML_SUCCESS) return true;
  const NvmlDevice& device = devices_[i];
  if (result == NVML_ERROR_NOT_SUPPORTED || result == NVML_ERROR_NO_PERMISSION ||
      result == NVML_ERROR_FUNCTION_NOT_FOUND) {
    states_[i].off[reading] = true;
    Log(LogLevel::kInfo, "nvml", "gpu {}: {}: this reading is off for this GPU", device.gpu,
        lib_->Describe(kReadingCall[reading], result));
    return false;
  }
  if (error != nullptr && error->ok()) {
    *error = UnavailableError(fmt::format(
        "gpu {} ({}): {}{}", device.gpu, device.uuid, lib_->Describe(kReadingCall[reading], result),
        result == NVML_ERROR_GPU_IS_LOST ? "; the GPU fell off the bus: check `dmesg` for XID 79"
                                         : ""));
  }
  return false;
}

void NvmlCollector::Gauge(size_t i, Series* series, int64_t time_ns, double raw, double max_raw,
                          double scale, const char* what, const char* unit) {
  if (!(raw >= 0 && raw <= max_raw)) {  // also catches NaN
    Invalid(fmt::format("gpu {}: {} {} {} (valid 0..{})", devices_[i].gpu, what, FormatRaw(raw),
                        unit, FormatRaw(max_raw)));
    return;
  }
  RecordNvmlGauge(series, time_ns, raw * scale);
}

void NvmlCollector::Invalid(std::string what) {
  if (ctx_.invalid_sample) ctx_.invalid_sample("nvml", what);
}

}  // namespace

std::unique_ptr<Collector> MakeNvmlCollector() { return MakeNvmlCollector(NvmlCollectorOptions{}); }

std::unique_ptr<Collector> MakeNvmlCollector(std::string library_path) {
  NvmlCollectorOptions options;
  options.library_path = std::move(library_path);
  return MakeNvmlCollector(std::move(options));
}

std::unique_ptr<Collector> MakeNvmlCollector(NvmlCollectorOptions options) {
  return std::make_unique<NvmlCollector>(std::move(options));
}

}  // namespace titan
