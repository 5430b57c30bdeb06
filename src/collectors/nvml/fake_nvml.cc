// A fake libnvidia-ml.so.1: a TEST DOUBLE for NVIDIA GPUs and their driver, which the machines
// titan is built and tested on lack (DESIGN.md rule 7). It implements the NVML C functions the
// collector uses with scripted behaviour (fake_nvml_control.h): per-GPU readings, value
// sequences, buffered driver samples, injected XID events, per-function failures. Built three
// times, into three directories, each as libnvidia-ml.so.1:
//   full     everything the collector uses;
//   minimal  (FAKE_NVML_MINIMAL) an old driver: no nvmlDeviceGetSamples, energy, PCIe, events,
//            nor nvmlDeviceGetCurrentClocksEventReasons (only the older ...ThrottleReasons name);
//   broken   (FAKE_NVML_NO_COUNT) lacks the core nvmlDeviceGetCount_v2.
// Thread-safe (one mutex), like the real library.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "src/collectors/nvml/fake_nvml_control.h"
#include "src/collectors/nvml_api.h"

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

struct nvmlDevice_st {
  unsigned int index;
};
struct nvmlEventSet_st {
  std::vector<unsigned int> devices;
};

namespace {

constexpr unsigned int kMaxGpus = 64;
constexpr int kSamplingTypes = 8;

struct FakeGpu {
  std::map<std::string, unsigned long long> values;
  std::map<std::string, std::pair<std::vector<unsigned long long>, size_t>> cycles;
  std::map<std::string, nvmlReturn_t> failures;
  std::vector<nvmlSample_t> samples[kSamplingTypes];
  // Driver-like sampler per sampling type: every period_us of real time, a sample of the type's
  // field is added (generated lazily, when nvmlDeviceGetSamples is called). 0: off.
  unsigned long long sample_period_us[kSamplingTypes] = {};
  unsigned long long next_sample_us[kSamplingTypes] = {};
};

// The field each sampling type samples (nullptr: none).
const char* SampledField(int type) {
  switch (type) {
    case NVML_TOTAL_POWER_SAMPLES:
      return "power_mw";
    case NVML_GPU_UTILIZATION_SAMPLES:
      return "util";
    case NVML_MEMORY_UTILIZATION_SAMPLES:
      return "mem_util";
    case NVML_PROCESSOR_CLK_SAMPLES:
      return "sm_mhz";
    case NVML_MEMORY_CLK_SAMPLES:
      return "mem_mhz";
    default:
      return nullptr;
  }
}

// The real driver keeps a ring of recent samples; so does the fake.
constexpr size_t kMaxBufferedSamples = 128;

unsigned long long WallNowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct State {
  std::mutex mutex;
  std::condition_variable xid_arrived;
  bool configured = false;
  unsigned int count = 0;
  std::vector<FakeGpu> gpus;
  nvmlDevice_st handles[kMaxGpus];
  int active_inits = 0;
  int live_event_sets = 0;
  std::deque<std::pair<unsigned int, unsigned long long>> xids;
  std::map<std::string, unsigned long long> calls;
};

// Destroyed when the library is unloaded (dlclose of its last handle), so that nothing it
// allocated outlives it (LeakSanitizer cannot trace pointers in an unmapped library).
State& S() {
  static State state;
  return state;
}

void ResetLocked(State& s, unsigned int count) {
  s.configured = true;
  s.count = std::min(count, kMaxGpus);
  s.gpus.assign(s.count, FakeGpu{});
  s.xids.clear();
  s.calls.clear();
  for (unsigned int i = 0; i < kMaxGpus; ++i) s.handles[i].index = i;
  for (unsigned int i = 0; i < s.count; ++i) {
    s.gpus[i].values = {
        {"util", 50 + i},
        {"mem_util", 20 + i},
        {"mem_total", 141ULL << 30},
        {"mem_used", (i + 1ULL) << 30},
        {"power_mw", 300000 + 1000 * i},
        {"energy_mj", 0},
        {"sm_mhz", 1980},
        {"mem_mhz", 2619},
        {"temp", 40 + i},
        {"reasons", 0},
        {"pcie_tx", 1000 * (i + 1)},
        {"pcie_rx", 2000 * (i + 1)},
        {"ecc_corrected", 0},
        {"ecc_uncorrected", 0},
    };
  }
}

template <typename Fn>
void ForGpus(State& s, const std::string& which, Fn fn) {
  if (which == "*") {
    for (unsigned int i = 0; i < s.count; ++i) fn(s.gpus[i]);
  } else {
    const unsigned long i = std::strtoul(which.c_str(), nullptr, 10);
    if (i < s.count) fn(s.gpus[i]);
  }
}

void LoadScriptLocked(State& s) {
  ResetLocked(s, 8);
  const char* path = std::getenv("TITAN_FAKE_NVML_SCRIPT");
  if (path == nullptr || path[0] == '\0') return;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string verb, which, name;
    words >> verb;
    if (verb == "gpus") {
      unsigned int n = 0;
      words >> n;
      ResetLocked(s, n);
      continue;
    }
    words >> which >> name;
    if (verb == "set") {
      unsigned long long v = 0;
      words >> v;
      ForGpus(s, which, [&](FakeGpu& g) { g.values[name] = v; });
    } else if (verb == "cycle") {
      std::vector<unsigned long long> values;
      for (unsigned long long v; words >> v;) values.push_back(v);
      if (!values.empty()) ForGpus(s, which, [&](FakeGpu& g) { g.cycles[name] = {values, 0}; });
    } else if (verb == "samples") {
      const int type = std::atoi(name.c_str());
      unsigned long long period_ms = 0;
      words >> period_ms;
      if (type >= 0 && type < kSamplingTypes) {
        ForGpus(s, which, [&](FakeGpu& g) {
          g.sample_period_us[type] = period_ms * 1000;
          g.next_sample_us[type] = WallNowUs();
        });
      }
    } else if (verb == "fail") {
      int code = 0;
      words >> code;
      ForGpus(s, which, [&](FakeGpu& g) { g.failures[name] = static_cast<nvmlReturn_t>(code); });
    }
  }
}

// Common preamble of device functions: counts the call, checks initialisation, the handle and
// scripted failures. Returns NVML_SUCCESS and sets *gpu, or the error to return.
nvmlReturn_t Enter(State& s, const char* function, nvmlDevice_t device, FakeGpu** gpu) {
  ++s.calls[function];
  if (s.active_inits <= 0) return NVML_ERROR_UNINITIALIZED;
  if (device == nullptr || device->index >= s.count) return NVML_ERROR_INVALID_ARGUMENT;
  *gpu = &s.gpus[device->index];
  auto it = (*gpu)->failures.find(function);
  if (it != (*gpu)->failures.end() && it->second != NVML_SUCCESS) return it->second;
  return NVML_SUCCESS;
}

unsigned long long Value(FakeGpu& gpu, const char* field) {
  auto it = gpu.cycles.find(field);
  if (it != gpu.cycles.end()) {
    auto& [values, next] = it->second;
    const unsigned long long v = values[next];
    next = (next + 1) % values.size();
    return v;
  }
  return gpu.values[field];
}

// Adds the samples the auto sampler of `type` would have taken up to now.
[[maybe_unused]] void RunSampler(FakeGpu& gpu, int type) {
  const unsigned long long period = gpu.sample_period_us[type];
  const char* field = SampledField(type);
  if (period == 0 || field == nullptr) return;
  const unsigned long long now = WallNowUs();
  if (gpu.next_sample_us[type] + kMaxBufferedSamples * period < now) {
    gpu.next_sample_us[type] = now - kMaxBufferedSamples * period;  // the ring would have wrapped
  }
  std::vector<nvmlSample_t>& buffer = gpu.samples[type];
  for (; gpu.next_sample_us[type] <= now; gpu.next_sample_us[type] += period) {
    nvmlSample_t sample{};
    sample.timeStamp = gpu.next_sample_us[type];
    sample.sampleValue.uiVal = static_cast<unsigned int>(Value(gpu, field));
    buffer.push_back(sample);
  }
  if (buffer.size() > kMaxBufferedSamples) {
    buffer.erase(buffer.begin(), buffer.end() - kMaxBufferedSamples);
  }
}

nvmlReturn_t CopyString(const std::string& text, char* out, unsigned int length) {
  if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (text.size() + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(out, text.c_str(), text.size() + 1);
  return NVML_SUCCESS;
}

// Reads one unsigned field into *out (narrowed like the driver's unsigned int outputs).
template <typename T>
nvmlReturn_t ReadField(const char* function, nvmlDevice_t device, const char* field, T* out) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mutex);
  FakeGpu* gpu = nullptr;
  if (nvmlReturn_t r = Enter(s, function, device, &gpu); r != NVML_SUCCESS) return r;
  if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *out = static_cast<T>(Value(*gpu, field));
  return NVML_SUCCESS;
}

}  // namespace

// ---- Control interface (fake_nvml_control.h) ----

FAKE_EXPORT void titanFakeNvmlReset(unsigned int gpu_count) {
  std::lock_guard<std::mutex> lock(S().mutex);
  ResetLocked(S(), gpu_count);
}

FAKE_EXPORT int titanFakeNvmlSet(unsigned int gpu, const char* field, unsigned long long value) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (gpu >= s.count || s.gpus[gpu].values.count(field) == 0) return -1;
  s.gpus[gpu].values[field] = value;
  s.gpus[gpu].cycles.erase(field);
  return 0;
}

FAKE_EXPORT int titanFakeNvmlCycle(unsigned int gpu, const char* field,
                                   const unsigned long long* values, unsigned int count) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (gpu >= s.count || s.gpus[gpu].values.count(field) == 0 || count == 0) return -1;
  s.gpus[gpu].cycles[field] = {std::vector<unsigned long long>(values, values + count), 0};
  return 0;
}

FAKE_EXPORT int titanFakeNvmlFail(unsigned int gpu, const char* function, int nvml_return) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (gpu >= s.count) return -1;
  s.gpus[gpu].failures[function] = static_cast<nvmlReturn_t>(nvml_return);
  return 0;
}

FAKE_EXPORT int titanFakeNvmlPushSample(unsigned int gpu, int sampling_type,
                                        unsigned long long timestamp_us, unsigned int value) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (gpu >= s.count || sampling_type < 0 || sampling_type >= kSamplingTypes) return -1;
  nvmlSample_t sample{};
  sample.timeStamp = timestamp_us;
  sample.sampleValue.uiVal = value;
  s.gpus[gpu].samples[sampling_type].push_back(sample);
  return 0;
}

FAKE_EXPORT int titanFakeNvmlAutoSamples(unsigned int gpu, int sampling_type,
                                         unsigned long long period_us) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (gpu >= s.count || SampledField(sampling_type) == nullptr) return -1;
  s.gpus[gpu].sample_period_us[sampling_type] = period_us;
  s.gpus[gpu].next_sample_us[sampling_type] = WallNowUs();
  return 0;
}

FAKE_EXPORT int titanFakeNvmlInjectXid(unsigned int gpu, unsigned long long xid) {
  State& s = S();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (gpu >= s.count) return -1;
    s.xids.emplace_back(gpu, xid);
  }
  s.xid_arrived.notify_all();
  return 0;
}

FAKE_EXPORT int titanFakeNvmlActiveInits(void) {
  std::lock_guard<std::mutex> lock(S().mutex);
  return S().active_inits;
}

FAKE_EXPORT int titanFakeNvmlLiveEventSets(void) {
  std::lock_guard<std::mutex> lock(S().mutex);
  return S().live_event_sets;
}

FAKE_EXPORT unsigned long long titanFakeNvmlCalls(const char* function) {
  std::lock_guard<std::mutex> lock(S().mutex);
  auto it = S().calls.find(function);
  return it == S().calls.end() ? 0 : it->second;
}

// ---- NVML ----

FAKE_EXPORT nvmlReturn_t nvmlInit_v2(void) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.configured) LoadScriptLocked(s);
  ++s.calls["nvmlInit_v2"];
  ++s.active_inits;
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlShutdown(void) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mutex);
  ++s.calls["nvmlShutdown"];
  if (s.active_inits <= 0) return NVML_ERROR_UNINITIALIZED;
  --s.active_inits;
  return NVML_SUCCESS;
}

FAKE_EXPORT const char* nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case NVML_SUCCESS:
      return "Success";
    case NVML_ERROR_UNINITIALIZED:
      return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
      return "Not Supported";
    case NVML_ERROR_NO_PERMISSION:
      return "Insufficient Permissions";
    case NVML_ERROR_NOT_FOUND:
      return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE:
      return "Insufficient Size";
    case NVML_ERROR_TIMEOUT:
      return "Timeout";
    case NVML_ERROR_GPU_IS_LOST:
      return "GPU is lost";
    default:
      return "Unknown Error";
  }
}

#ifndef FAKE_NVML_NO_COUNT
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mutex);
  ++s.calls["nvmlDeviceGetCount_v2"];
  if (s.active_inits <= 0) return NVML_ERROR_UNINITIALIZED;
  if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *count = s.count;
  return NVML_SUCCESS;
}
#endif

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mutex);
  ++s.calls["nvmlDeviceGetHandleByIndex_v2"];
  if (s.active_inits <= 0) return NVML_ERROR_UNINITIALIZED;
  if (device == nullptr || index >= s.count) return NVML_ERROR_INVALID_ARGUMENT;
  *device = &s.handles[index];
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mutex);
  FakeGpu* gpu = nullptr;
  if (nvmlReturn_t r = Enter(s, "nvmlDeviceGetName", device, &gpu); r != NVML_SUCCESS) return r;
  return CopyString("NVIDIA H200 (fake)", name, length);
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mutex);
  FakeGpu* gpu = nullptr;
  if (nvmlReturn_t r = Enter(s, "nvmlDeviceGetUUID", device, &gpu); r != NVML_SUCCESS) return r;
  char text[64];
  std::snprintf(text, sizeof(text), "GPU-fa4e0000-0000-0000-0000-%012u", device->index);
  return CopyString(text, uuid, length);
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device,
                                                       nvmlUtilization_t* utilization) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mutex);
  FakeGpu* gpu = nullptr;
  if (nvmlReturn_t r = Enter(s, "nvmlDeviceGetUtilizationRates", device, &gpu); r != NVML_SUCCESS) {
    return r;
  }
  if (utilization == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  utilization->gpu = static_cast<unsigned int>(Value(*gpu, "util"));
  utilization->memory = static_cast<unsigned int>(Value(*gpu, "mem_util"));
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mutex);
  FakeGpu* gpu = nullptr;
  if (nvmlReturn_t r = Enter(s, "nvmlDeviceGetMemoryInfo", device, &gpu); r != NVML_SUCCESS) {
    return r;
  }
  if (memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  memory->total = Value(*gpu, "mem_total");
  memory->used = Value(*gpu, "mem_used");
  memory->free = memory->total >= memory->used ? memory->total - memory->used : 0;
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int* power_mw) {
  return ReadField("nvmlDeviceGetPowerUsage", device, "power_mw", power_mw);
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, nvmlClockType_t type,
                                                unsigned int* clock_mhz) {
  if (type != NVML_CLOCK_SM && type != NVML_CLOCK_MEM) return NVML_ERROR_INVALID_ARGUMENT;
  return ReadField("nvmlDeviceGetClockInfo", device, type == NVML_CLOCK_SM ? "sm_mhz" : "mem_mhz",
                   clock_mhz);
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device,
                                                  nvmlTemperatureSensors_t sensor,
                                                  unsigned int* celsius) {
  if (sensor != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
  return ReadField("nvmlDeviceGetTemperature", device, "temp", celsius);
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t device,
                                                                   unsigned long long* reasons) {
  return ReadField("nvmlDeviceGetCurrentClocksThrottleReasons", device, "reasons", reasons);
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device,
                                                     nvmlMemoryErrorType_t error_type,
                                                     nvmlEccCounterType_t counter_type,
                                                     unsigned long long* count) {
  return ReadField(
      "nvmlDeviceGetTotalEccErrors", device,
      error_type == NVML_MEMORY_ERROR_TYPE_CORRECTED ? "ecc_corrected" : "ecc_uncorrected", count);
}

#ifndef FAKE_NVML_MINIMAL
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device,
                                                                unsigned long long* reasons) {
  return ReadField("nvmlDeviceGetCurrentClocksEventReasons", device, "reasons", reasons);
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device,
                                                             unsigned long long* energy_mj) {
  return ReadField("nvmlDeviceGetTotalEnergyConsumption", device, "energy_mj", energy_mj);
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t device,
                                                     nvmlPcieUtilCounter_t counter,
                                                     unsigned int* value_kb_per_s) {
  return ReadField("nvmlDeviceGetPcieThroughput", device,
                   counter == NVML_PCIE_UTIL_TX_BYTES ? "pcie_tx" : "pcie_rx", value_kb_per_s);
}

// Driver semantics: the samples newer than last_seen_timestamp_us; NOT_FOUND when there are none;
// with samples == NULL, *sample_count gets the number of entries to allocate.
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetSamples(nvmlDevice_t device, nvmlSamplingType_t type,
                                              unsigned long long last_seen_timestamp_us,
                                              nvmlValueType_t* sample_value_type,
                                              unsigned int* sample_count, nvmlSample_t* samples) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mutex);
  FakeGpu* gpu = nullptr;
  if (nvmlReturn_t r = Enter(s, "nvmlDeviceGetSamples", device, &gpu); r != NVML_SUCCESS) return r;
  const int index = static_cast<int>(type);
  if (index < 0 || index >= kSamplingTypes || sample_value_type == nullptr ||
      sample_count == nullptr) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  RunSampler(*gpu, index);
  std::vector<nvmlSample_t> newer;
  for (const nvmlSample_t& sample : gpu->samples[index]) {
    if (sample.timeStamp > last_seen_timestamp_us) newer.push_back(sample);
  }
  if (newer.empty()) return NVML_ERROR_NOT_FOUND;
  *sample_value_type = NVML_VALUE_TYPE_UNSIGNED_INT;
  if (samples == nullptr) {
    *sample_count = static_cast<unsigned int>(newer.size());
    return NVML_SUCCESS;
  }
  const unsigned int n = std::min<unsigned int>(*sample_count, newer.size());
  std::copy(newer.begin(), newer.begin() + n, samples);
  *sample_count = n;
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mutex);
  ++s.calls["nvmlEventSetCreate"];
  if (s.active_inits <= 0) return NVML_ERROR_UNINITIALIZED;
  if (set == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *set = new nvmlEventSet_st;
  ++s.live_event_sets;
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device,
                                                  unsigned long long event_types,
                                                  nvmlEventSet_t set) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mutex);
  FakeGpu* gpu = nullptr;
  if (nvmlReturn_t r = Enter(s, "nvmlDeviceRegisterEvents", device, &gpu); r != NVML_SUCCESS) {
    return r;
  }
  if (set == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if ((event_types & TITAN_NVML_EVENT_TYPE_XID_CRITICAL_ERROR) != 0) {
    set->devices.push_back(device->index);
  }
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data,
                                             unsigned int timeout_ms) {
  State& s = S();
  std::unique_lock<std::mutex> lock(s.mutex);
  ++s.calls["nvmlEventSetWait_v2"];
  if (set == nullptr || data == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  auto ours = [&] {
    return std::find_if(s.xids.begin(), s.xids.end(), [&](const auto& xid) {
      return std::find(set->devices.begin(), set->devices.end(), xid.first) != set->devices.end();
    });
  };
  if (!s.xid_arrived.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                              [&] { return ours() != s.xids.end(); })) {
    return NVML_ERROR_TIMEOUT;
  }
  auto it = ours();
  *data = nvmlEventData_t{};
  data->device = &s.handles[it->first];
  data->eventType = TITAN_NVML_EVENT_TYPE_XID_CRITICAL_ERROR;
  data->eventData = it->second;
  data->gpuInstanceId = 0xFFFFFFFFu;
  data->computeInstanceId = 0xFFFFFFFFu;
  s.xids.erase(it);
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mutex);
  ++s.calls["nvmlEventSetFree"];
  if (set == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  delete set;
  --s.live_event_sets;
  return NVML_SUCCESS;
}
#endif  // FAKE_NVML_MINIMAL
