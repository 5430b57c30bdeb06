#include "src/cluster/k8s/names.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "src/base/text.h"

namespace titan::k8s {
namespace {

bool LowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

bool IsLabel(std::string_view text, size_t max_bytes = 63) {
  if (text.empty() || text.size() > max_bytes || !LowerAlnum(text.front()) ||
      !LowerAlnum(text.back())) {
    return false;
  }
  for (char c : text) {
    if (!LowerAlnum(c) && c != '-') return false;
  }
  return true;
}

Status Refuse(std::string_view name, std::string_view what, std::string_view rule) {
  return InvalidArgumentError(
      fmt::format("{} '{}' is not a valid Kubernetes name ({}); refused before any request is made",
                  what, RemoteText(name, 80), rule));
}

}  // namespace

Status CheckSubdomainName(std::string_view name, std::string_view what) {
  bool ok = !name.empty() && name.size() <= 253;
  for (size_t begin = 0; ok && begin <= name.size();) {
    size_t dot = std::min(name.find('.', begin), name.size());
    ok = IsLabel(name.substr(begin, dot - begin), 253);
    begin = dot + 1;
  }
  if (ok) return OkStatus();
  return Refuse(name, what,
                "a DNS-1123 subdomain: at most 253 characters of a-z, 0-9, '-' and '.', starting "
                "and ending with a letter or digit");
}

Status CheckLabelName(std::string_view name, std::string_view what) {
  if (IsLabel(name)) return OkStatus();
  return Refuse(name, what,
                "a DNS-1123 label: at most 63 characters of a-z, 0-9 and '-', starting and ending "
                "with a letter or digit");
}

std::string QueryValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    unsigned char u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || c == '-' || c == '.' || c == '_' || c == '~') {
      out.push_back(c);
    } else {
      out += fmt::format("%{:02X}", u);
    }
  }
  return out;
}

Result<std::string> NodePath(std::string_view node) {
  TITAN_RETURN_IF_ERROR(CheckSubdomainName(node, "node"));
  return fmt::format("/api/v1/nodes/{}", node);
}

Result<std::string> PodPath(std::string_view namespace_, std::string_view pod) {
  TITAN_RETURN_IF_ERROR(CheckLabelName(namespace_, "namespace"));
  TITAN_RETURN_IF_ERROR(CheckSubdomainName(pod, "pod"));
  return fmt::format("/api/v1/namespaces/{}/pods/{}", namespace_, pod);
}

}  // namespace titan::k8s
