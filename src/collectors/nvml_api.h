// The subset of NVIDIA's public NVML C API (nvml.h) that titan uses, declared here so that titan
// builds without the CUDA toolkit: the collector dlopen()s libnvidia-ml.so.1 at run time and
// resolves these functions with dlsym(). Layouts and values follow the public nvml.h; only
// ABI-stable entry points are used (the `_v2` names where NVML has versioned them).
//
// Also included by the fake libnvidia-ml.so.1 (src/collectors/nvml/fake_nvml.cc), the test double
// that stands in for GPUs on machines without them.
#pragma once

extern "C" {

typedef enum nvmlReturn_enum {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NO_PERMISSION = 4,
  NVML_ERROR_ALREADY_INITIALIZED = 5,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_INSUFFICIENT_POWER = 8,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
  NVML_ERROR_TIMEOUT = 10,
  NVML_ERROR_IRQ_ISSUE = 11,
  NVML_ERROR_LIBRARY_NOT_FOUND = 12,
  NVML_ERROR_FUNCTION_NOT_FOUND = 13,
  NVML_ERROR_CORRUPTED_INFOROM = 14,
  NVML_ERROR_GPU_IS_LOST = 15,
  NVML_ERROR_NO_DATA = 21,
  NVML_ERROR_UNKNOWN = 999
} nvmlReturn_t;

typedef struct nvmlDevice_st* nvmlDevice_t;
typedef struct nvmlEventSet_st* nvmlEventSet_t;

typedef struct nvmlUtilization_st {
  unsigned int gpu;     // percent of the last sample period with a kernel running
  unsigned int memory;  // percent of the last sample period with device memory read or written
} nvmlUtilization_t;

typedef struct nvmlMemory_st {
  unsigned long long total;  // bytes
  unsigned long long free;   // bytes
  unsigned long long used;   // bytes
} nvmlMemory_t;

typedef enum nvmlClockType_enum {
  NVML_CLOCK_GRAPHICS = 0,
  NVML_CLOCK_SM = 1,
  NVML_CLOCK_MEM = 2,
  NVML_CLOCK_VIDEO = 3,
} nvmlClockType_t;

typedef enum nvmlTemperatureSensors_enum { NVML_TEMPERATURE_GPU = 0 } nvmlTemperatureSensors_t;

typedef enum nvmlPcieUtilCounter_enum {
  NVML_PCIE_UTIL_TX_BYTES = 0,  // KB/s, measured by the driver over a 20 ms window
  NVML_PCIE_UTIL_RX_BYTES = 1,
} nvmlPcieUtilCounter_t;

typedef enum nvmlMemoryErrorType_enum {
  NVML_MEMORY_ERROR_TYPE_CORRECTED = 0,
  NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1,
} nvmlMemoryErrorType_t;

typedef enum nvmlEccCounterType_enum {
  NVML_VOLATILE_ECC = 0,   // reset when the driver reloads
  NVML_AGGREGATE_ECC = 1,  // lifetime of the device
} nvmlEccCounterType_t;

typedef enum nvmlSamplingType_enum {
  NVML_TOTAL_POWER_SAMPLES = 0,         // milliwatts
  NVML_GPU_UTILIZATION_SAMPLES = 1,     // percent
  NVML_MEMORY_UTILIZATION_SAMPLES = 2,  // percent
  NVML_ENC_UTILIZATION_SAMPLES = 3,
  NVML_DEC_UTILIZATION_SAMPLES = 4,
  NVML_PROCESSOR_CLK_SAMPLES = 5,
  NVML_MEMORY_CLK_SAMPLES = 6,
} nvmlSamplingType_t;

typedef enum nvmlValueType_enum {
  NVML_VALUE_TYPE_DOUBLE = 0,
  NVML_VALUE_TYPE_UNSIGNED_INT = 1,
  NVML_VALUE_TYPE_UNSIGNED_LONG = 2,
  NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3,
  NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4,
} nvmlValueType_t;

typedef union nvmlValue_st {
  double dVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  signed long long sllVal;
} nvmlValue_t;

typedef struct nvmlSample_st {
  unsigned long long timeStamp;  // CPU wall-clock timestamp, microseconds since the Unix epoch
  nvmlValue_t sampleValue;
} nvmlSample_t;

// Event data as written by nvmlEventSetWait_v2 (current layout; older drivers write a prefix).
typedef struct nvmlEventData_st {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;  // the XID for nvmlEventTypeXidCriticalError (999: unknown)
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvmlEventData_t;

#define TITAN_NVML_EVENT_TYPE_XID_CRITICAL_ERROR 0x0000000000000008ULL

// Clock event ("throttle") reason bits of nvmlDeviceGetCurrentClocksEventReasons.
#define TITAN_NVML_CLOCK_EVENT_GPU_IDLE 0x0000000000000001ULL
#define TITAN_NVML_CLOCK_EVENT_APPLICATIONS_CLOCKS_SETTING 0x0000000000000002ULL
#define TITAN_NVML_CLOCK_EVENT_SW_POWER_CAP 0x0000000000000004ULL
#define TITAN_NVML_CLOCK_EVENT_HW_SLOWDOWN 0x0000000000000008ULL
#define TITAN_NVML_CLOCK_EVENT_SYNC_BOOST 0x0000000000000010ULL
#define TITAN_NVML_CLOCK_EVENT_SW_THERMAL_SLOWDOWN 0x0000000000000020ULL
#define TITAN_NVML_CLOCK_EVENT_HW_THERMAL_SLOWDOWN 0x0000000000000040ULL
#define TITAN_NVML_CLOCK_EVENT_HW_POWER_BRAKE_SLOWDOWN 0x0000000000000080ULL
#define TITAN_NVML_CLOCK_EVENT_DISPLAY_CLOCK_SETTING 0x0000000000000100ULL

// Function pointer types, one per entry point (same names as nvml.h with a `Fn` suffix).
typedef nvmlReturn_t (*nvmlInit_v2Fn)(void);
typedef nvmlReturn_t (*nvmlShutdownFn)(void);
typedef const char* (*nvmlErrorStringFn)(nvmlReturn_t result);
typedef nvmlReturn_t (*nvmlDeviceGetCount_v2Fn)(unsigned int* device_count);
typedef nvmlReturn_t (*nvmlDeviceGetHandleByIndex_v2Fn)(unsigned int index, nvmlDevice_t* device);
typedef nvmlReturn_t (*nvmlDeviceGetNameFn)(nvmlDevice_t device, char* name, unsigned int length);
typedef nvmlReturn_t (*nvmlDeviceGetUUIDFn)(nvmlDevice_t device, char* uuid, unsigned int length);
typedef nvmlReturn_t (*nvmlDeviceGetUtilizationRatesFn)(nvmlDevice_t device,
                                                        nvmlUtilization_t* utilization);
typedef nvmlReturn_t (*nvmlDeviceGetMemoryInfoFn)(nvmlDevice_t device, nvmlMemory_t* memory);
typedef nvmlReturn_t (*nvmlDeviceGetPowerUsageFn)(nvmlDevice_t device, unsigned int* power_mw);
typedef nvmlReturn_t (*nvmlDeviceGetTotalEnergyConsumptionFn)(nvmlDevice_t device,
                                                              unsigned long long* energy_mj);
typedef nvmlReturn_t (*nvmlDeviceGetClockInfoFn)(nvmlDevice_t device, nvmlClockType_t type,
                                                 unsigned int* clock_mhz);
typedef nvmlReturn_t (*nvmlDeviceGetTemperatureFn)(nvmlDevice_t device,
                                                   nvmlTemperatureSensors_t sensor,
                                                   unsigned int* temp_celsius);
typedef nvmlReturn_t (*nvmlDeviceGetClocksEventReasonsFn)(nvmlDevice_t device,
                                                          unsigned long long* reasons);
typedef nvmlReturn_t (*nvmlDeviceGetPcieThroughputFn)(nvmlDevice_t device,
                                                      nvmlPcieUtilCounter_t counter,
                                                      unsigned int* value_kb_per_s);
typedef nvmlReturn_t (*nvmlDeviceGetTotalEccErrorsFn)(nvmlDevice_t device,
                                                      nvmlMemoryErrorType_t error_type,
                                                      nvmlEccCounterType_t counter_type,
                                                      unsigned long long* ecc_counts);
typedef nvmlReturn_t (*nvmlDeviceGetSamplesFn)(nvmlDevice_t device, nvmlSamplingType_t type,
                                               unsigned long long last_seen_timestamp_us,
                                               nvmlValueType_t* sample_value_type,
                                               unsigned int* sample_count, nvmlSample_t* samples);
typedef nvmlReturn_t (*nvmlEventSetCreateFn)(nvmlEventSet_t* set);
typedef nvmlReturn_t (*nvmlDeviceRegisterEventsFn)(nvmlDevice_t device,
                                                   unsigned long long event_types,
                                                   nvmlEventSet_t set);
typedef nvmlReturn_t (*nvmlEventSetWait_v2Fn)(nvmlEventSet_t set, nvmlEventData_t* data,
                                              unsigned int timeout_ms);
typedef nvmlReturn_t (*nvmlEventSetFreeFn)(nvmlEventSet_t set);

}  // extern "C"
