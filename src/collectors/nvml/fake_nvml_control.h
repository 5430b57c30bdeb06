// Control interface of the fake libnvidia-ml.so.1 (fake_nvml.cc), a TEST DOUBLE for NVIDIA GPUs,
// which the machines titan is developed and tested on do not have. Tests dlopen() the fake by its
// path (the same instance the collector then loads) and resolve these functions with dlsym().
//
// Fields (per GPU, unsigned integers, in NVML's own units):
//   util, mem_util (percent), mem_total, mem_used (bytes), power_mw, energy_mj, sm_mhz, mem_mhz,
//   temp (Celsius), reasons (clock event bitmask), pcie_tx, pcie_rx (KB/s), ecc_corrected,
//   ecc_uncorrected.
// Defaults for GPU i: util 50+i, mem_util 20+i, mem_total 141 GiB, mem_used (i+1) GiB,
// power_mw 300000+1000*i, energy_mj 0, sm_mhz 1980, mem_mhz 2619, temp 40+i, reasons 0,
// pcie_tx 1000*(i+1), pcie_rx 2000*(i+1), ecc 0.
//
// Without any control call, the first nvmlInit_v2 reads the script named by
// $TITAN_FAKE_NVML_SCRIPT, if set (for running `titan agent` on a machine without GPUs), lines:
//   gpus N
//   set GPU|* FIELD VALUE
//   cycle GPU|* FIELD V1 V2 ...      (each read returns the next value, round robin)
//   fail GPU|* FUNCTION NVML_RETURN  (e.g. "fail 3 nvmlDeviceGetTemperature 3")
//   samples GPU|* SAMPLING_TYPE PERIOD_MS  (driver-like sampler, see titanFakeNvmlAutoSamples;
//                                       e.g. "samples * 0 20" and "samples * 1 166")
// and otherwise has 8 GPUs with the defaults.
#pragma once

extern "C" {
// Forgets everything set before and makes `gpu_count` GPUs (at most 64) with the defaults.
typedef void (*titanFakeNvmlResetFn)(unsigned int gpu_count);
// Sets a field; returns 0, or -1 for an unknown GPU or field.
typedef int (*titanFakeNvmlSetFn)(unsigned int gpu, const char* field, unsigned long long value);
// Makes a field return values[0], values[1], ... on successive reads, round robin.
typedef int (*titanFakeNvmlCycleFn)(unsigned int gpu, const char* field,
                                    const unsigned long long* values, unsigned int count);
// Makes `function` (an NVML name such as "nvmlDeviceGetTemperature") return `nvml_return` for
// this GPU; 0 (NVML_SUCCESS) restores normal behaviour.
typedef int (*titanFakeNvmlFailFn)(unsigned int gpu, const char* function, int nvml_return);
// Appends a driver-buffered sample returned by nvmlDeviceGetSamples(type) (value type
// NVML_VALUE_TYPE_UNSIGNED_INT), stamped `timestamp_us` (microseconds since the epoch).
typedef int (*titanFakeNvmlPushSampleFn)(unsigned int gpu, int sampling_type,
                                         unsigned long long timestamp_us, unsigned int value);
// Turns on a driver-like sampler: from now on, every `period_us` of real time a sample of the
// type's field (power_mw, util, mem_util, sm_mhz, mem_mhz) is buffered for nvmlDeviceGetSamples,
// the newest 128 kept, as the driver does. 0 turns it off.
typedef int (*titanFakeNvmlAutoSamplesFn)(unsigned int gpu, int sampling_type,
                                          unsigned long long period_us);
// Queues an XID critical error event for `gpu`.
typedef int (*titanFakeNvmlInjectXidFn)(unsigned int gpu, unsigned long long xid);
// nvmlInit_v2 calls minus nvmlShutdown calls.
typedef int (*titanFakeNvmlActiveInitsFn)(void);
// Event sets created and not yet freed.
typedef int (*titanFakeNvmlLiveEventSetsFn)(void);
// How many times `function` was called since the last reset.
typedef unsigned long long (*titanFakeNvmlCallsFn)(const char* function);
}
