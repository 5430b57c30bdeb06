// The body of the patch that cordons a node and marks it unhealthy (pure; no I/O).
//
// Node.spec.taints is an atomic list in Kubernetes (no patch merge key), so a strategic merge
// patch replaces it whole: the patch is computed from the node as read, carries every taint the
// node already has plus titan's (`titan.io/unhealthy=<reason>:NoSchedule`, replacing an older
// titan taint), and carries metadata.resourceVersion so that the API server refuses it (409)
// if the node changed in between; the caller reads the node again and retries.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "src/base/status.h"

namespace titan::k8s {

inline constexpr std::string_view kUnhealthyTaint = "titan.io/unhealthy";
// Set by the patch: when titan cordoned the node (RFC 3339) and why.
inline constexpr std::string_view kUnhealthySinceAnnotation = "titan.io/unhealthy-since";
inline constexpr std::string_view kUnhealthyReasonAnnotation = "titan.io/unhealthy-reason";
// A request to the controller to cordon the node: `kubectl annotate node N
// titan.io/report-unhealthy=REASON` (or `titan k8s cordon --report`); the controller's cordon
// removes it.
inline constexpr std::string_view kReportAnnotation = "titan.io/report-unhealthy";

// A taint value must be a label value: at most 63 characters of [A-Za-z0-9._-], starting and
// ending alphanumeric. Others are mapped (spaces and other bytes to '_', cut to 63) so that any
// reason can be given; the full text goes into the reason annotation.
std::string TaintValue(std::string_view reason);

// "2026-01-02T03:04:05Z" for a wall time in ns since the epoch.
std::string Rfc3339(int64_t wall_ns);

// The strategic merge patch that cordons `node` (a Node object as read) with `reason`, or
// nullopt when the node already is unschedulable, carries titan's taint with this reason and
// has no report annotation left (nothing to do: the cordon is idempotent). With
// `consume_report` the patch also deletes the report annotation. INVALID_ARGUMENT when `node`
// is not a Node object (no metadata.name / resourceVersion, taints not a list).
Result<std::optional<nlohmann::json>> CordonPatch(const nlohmann::json& node,
                                                  std::string_view reason, int64_t wall_ns,
                                                  bool consume_report);

}  // namespace titan::k8s
