#include "src/diagnose/types.h"

#include <cctype>
#include <ctime>

#include <fmt/format.h>

namespace titan::diagnose {
namespace {

constexpr std::string_view kClassNames[kFaultClassCount] = {"unknown",
                                                            "gpu_hardware",
                                                            "gpu_memory_ecc",
                                                            "nvlink",
                                                            "network",
                                                            "nccl_config",
                                                            "cuda_software",
                                                            "oom_gpu",
                                                            "oom_host",
                                                            "user_code",
                                                            "hang_collective_mismatch",
                                                            "rendezvous",
                                                            "scheduler",
                                                            "storage"};
constexpr std::string_view kActionNames[kActionCount] = {
    "none",        "restart_app", "reset_gpu", "reboot_node",  "drain_node",
    "fix_network", "fix_config",  "fix_code",  "reduce_memory"};

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// Parses hex digits of `s` into *out; false if empty, too long or not hex.
bool ParseHex(std::string_view s, size_t max_digits, unsigned* out) {
  if (s.empty() || s.size() > max_digits) return false;
  unsigned v = 0;
  for (char c : s) {
    int d = HexValue(c);
    if (d < 0) return false;
    v = v * 16 + static_cast<unsigned>(d);
  }
  *out = v;
  return true;
}

}  // namespace

std::string_view FaultClassName(FaultClass c) { return kClassNames[static_cast<int>(c)]; }
std::string_view ActionName(Action a) { return kActionNames[static_cast<int>(a)]; }

bool ParseFaultClass(std::string_view name, FaultClass* out) {
  for (int i = 0; i < kFaultClassCount; ++i) {
    if (kClassNames[i] == name) {
      *out = static_cast<FaultClass>(i);
      return true;
    }
  }
  return false;
}

bool ParseAction(std::string_view name, Action* out) {
  for (int i = 0; i < kActionCount; ++i) {
    if (kActionNames[i] == name) {
      *out = static_cast<Action>(i);
      return true;
    }
  }
  return false;
}

bool IsHardwareClass(FaultClass c) {
  return c == FaultClass::kGpuHardware || c == FaultClass::kGpuMemoryEcc ||
         c == FaultClass::kNvlink;
}

int GpuActionRank(Action a) {
  switch (a) {
    case Action::kRestartApp:
      return 1;
    case Action::kResetGpu:
      return 2;
    case Action::kRebootNode:
      return 3;
    case Action::kDrainNode:
      return 4;
    default:
      return 0;
  }
}

std::string NormalizePci(std::string_view text) {
  if (text.starts_with("PCI:")) text.remove_prefix(4);
  // [domain:]bus:device[.function]
  unsigned domain = 0, bus = 0, device = 0, function = 0;
  size_t first = text.find(':');
  if (first == std::string_view::npos) return "";
  size_t second = text.find(':', first + 1);
  std::string_view bus_text, rest;
  if (second != std::string_view::npos) {
    if (!ParseHex(text.substr(0, first), 8, &domain)) return "";
    bus_text = text.substr(first + 1, second - first - 1);
    rest = text.substr(second + 1);
  } else {
    bus_text = text.substr(0, first);
    rest = text.substr(first + 1);
  }
  if (!ParseHex(bus_text, 2, &bus)) return "";
  size_t dot = rest.find('.');
  if (dot != std::string_view::npos) {
    if (!ParseHex(rest.substr(dot + 1), 1, &function) || function > 7) return "";
    rest = rest.substr(0, dot);
  }
  if (!ParseHex(rest, 2, &device) || device > 0x1f) return "";
  if (domain > 0xffff) return "";  // NVIDIA writes 8 digits; real domains fit in 16 bits
  return fmt::format("{:04x}:{:02x}:{:02x}.{:x}", domain, bus, device, function);
}

std::string FormatLogTime(const LogTime& t) {
  switch (t.kind) {
    case ClockKind::kNone:
      return "";
    case ClockKind::kBoot:
      return fmt::format("boot+{}.{:06d}s", t.ns / 1'000'000'000, (t.ns % 1'000'000'000) / 1000);
    case ClockKind::kWall:
    case ClockKind::kWallNoYear: {
      // kWallNoYear is counted from 2000-01-01 (a leap year, so Feb 29 exists).
      constexpr int64_t k2000 = 946684800;
      int64_t seconds = t.ns >= 0 ? t.ns / 1'000'000'000 : (t.ns - 999'999'999) / 1'000'000'000;
      int64_t frac_ns = t.ns - seconds * 1'000'000'000;
      std::time_t tt =
          static_cast<std::time_t>(t.kind == ClockKind::kWall ? seconds : seconds + k2000);
      std::tm tm{};
      gmtime_r(&tt, &tm);
      std::string date =
          t.kind == ClockKind::kWall
              ? fmt::format("{:04d}-{:02d}-{:02d}", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday)
              : fmt::format("--{:02d}-{:02d}", tm.tm_mon + 1, tm.tm_mday);
      std::string out =
          fmt::format("{}T{:02d}:{:02d}:{:02d}", date, tm.tm_hour, tm.tm_min, tm.tm_sec);
      if (frac_ns != 0) {
        std::string frac = fmt::format("{:09d}", frac_ns);
        while (!frac.empty() && frac.back() == '0') frac.pop_back();
        out += "." + frac;
      }
      return out + "Z";
    }
  }
  return "";
}

}  // namespace titan::diagnose
