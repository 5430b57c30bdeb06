#include "src/s3/responses.h"

#include <pugixml.hpp>

#include <cctype>

#include <fmt/format.h>

#include "src/base/text.h"

namespace titan::s3 {
namespace {

// Bodies past this are not S3 control documents (a ListObjectsV2 page of 1,000 keys is
// ~300 KiB).
constexpr size_t kMaxDocumentBytes = 16 << 20;

Status Load(std::string_view body, std::string_view what, pugi::xml_document* doc) {
  if (body.size() > kMaxDocumentBytes) {
    return InvalidArgumentError(
        fmt::format("{}: response of {} bytes is too large for an S3 "
                    "XML document",
                    what, body.size()));
  }
  pugi::xml_parse_result parsed =
      doc->load_buffer(body.data(), body.size(), pugi::parse_default, pugi::encoding_utf8);
  if (!parsed) {
    return InvalidArgumentError(fmt::format("{}: response is not XML ({} at byte {}): '{}'", what,
                                            parsed.description(), parsed.offset,
                                            RemoteText(body, 200)));
  }
  return OkStatus();
}

std::string Text(const pugi::xml_node& node, const char* child) {
  return node.child(child).text().as_string();
}

}  // namespace

Result<ListPage> ParseListObjectsV2(std::string_view body, std::string_view what) {
  pugi::xml_document doc;
  TITAN_RETURN_IF_ERROR(Load(body, what, &doc));
  pugi::xml_node root = doc.child("ListBucketResult");
  if (!root) {
    return InvalidArgumentError(fmt::format("{}: expected a <ListBucketResult> document, got '{}'",
                                            what, RemoteText(body, 200)));
  }
  ListPage page;
  for (pugi::xml_node contents : root.children("Contents")) {
    ObjectEntry entry;
    entry.key = Text(contents, "Key");
    std::string size = Text(contents, "Size");
    if (entry.key.empty() || !ParseUint64(size, &entry.size_bytes)) {
      return InvalidArgumentError(fmt::format(
          "{}: a <Contents> entry has key '{}' and size '{}'; expected a key and a byte count",
          what, RemoteText(entry.key, 120), RemoteText(size, 40)));
    }
    page.objects.push_back(std::move(entry));
  }
  for (pugi::xml_node prefix : root.children("CommonPrefixes")) {
    page.common_prefixes.push_back(Text(prefix, "Prefix"));
  }
  page.truncated = Text(root, "IsTruncated") == "true";
  page.next_continuation_token = Text(root, "NextContinuationToken");
  if (page.truncated && page.next_continuation_token.empty()) {
    return InvalidArgumentError(
        fmt::format("{}: the listing is truncated but has no NextContinuationToken (is the server "
                    "ListObjectsV2-compatible?)",
                    what));
  }
  return page;
}

Result<UploadsPage> ParseListMultipartUploads(std::string_view body, std::string_view what) {
  pugi::xml_document doc;
  TITAN_RETURN_IF_ERROR(Load(body, what, &doc));
  pugi::xml_node root = doc.child("ListMultipartUploadsResult");
  if (!root) {
    return InvalidArgumentError(
        fmt::format("{}: expected a <ListMultipartUploadsResult> document, got '{}'", what,
                    RemoteText(body, 200)));
  }
  UploadsPage page;
  for (pugi::xml_node upload : root.children("Upload")) {
    UploadsPage::Upload u{Text(upload, "Key"), Text(upload, "UploadId")};
    if (u.key.empty() || u.upload_id.empty()) {
      return InvalidArgumentError(
          fmt::format("{}: an <Upload> entry lacks its Key or UploadId", what));
    }
    page.uploads.push_back(std::move(u));
  }
  page.truncated = Text(root, "IsTruncated") == "true";
  page.next_key_marker = Text(root, "NextKeyMarker");
  page.next_upload_id_marker = Text(root, "NextUploadIdMarker");
  if (page.truncated && page.next_key_marker.empty()) {
    return InvalidArgumentError(
        fmt::format("{}: the listing is truncated but has no NextKeyMarker", what));
  }
  return page;
}

Result<std::string> ParseUploadId(std::string_view body, std::string_view what) {
  pugi::xml_document doc;
  TITAN_RETURN_IF_ERROR(Load(body, what, &doc));
  std::string id = Text(doc.child("InitiateMultipartUploadResult"), "UploadId");
  if (id.empty()) {
    return InvalidArgumentError(
        fmt::format("{}: expected an <InitiateMultipartUploadResult> with an UploadId, got '{}'",
                    what, RemoteText(body, 200)));
  }
  return id;
}

ErrorBody ParseError(std::string_view body) {
  pugi::xml_document doc;
  ErrorBody error;
  if (!Load(body, "", &doc).ok()) return error;
  pugi::xml_node node = doc.child("Error");
  error.code = Text(node, "Code");
  error.message = Text(node, "Message");
  return error;
}

bool IsErrorDocument(std::string_view body) {
  pugi::xml_document doc;
  return Load(body, "", &doc).ok() && doc.child("Error");
}

std::string_view UnquoteEtag(std::string_view etag) {
  etag = Trim(etag);
  if (etag.substr(0, 2) == "W/") etag.remove_prefix(2);
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') {
    etag = etag.substr(1, etag.size() - 2);
  }
  return etag;
}

bool IsMd5Etag(std::string_view unquoted) {
  if (unquoted.size() < 32) return false;
  for (char c : unquoted.substr(0, 32)) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  }
  if (unquoted.size() == 32) return true;
  if (unquoted[32] != '-') return false;
  uint64_t parts = 0;
  return ParseUint64(unquoted.substr(33), &parts) && parts >= 1 && parts <= 10'000;
}

std::string CompleteMultipartBody(const std::vector<std::string>& etags) {
  std::string out = "<CompleteMultipartUpload>";
  for (size_t i = 0; i < etags.size(); ++i) {
    // ETags are quoted hex from the server; escape anyway so the document stays well formed.
    std::string etag;
    for (char c : etags[i]) {
      if (c == '&')
        etag += "&amp;";
      else if (c == '<')
        etag += "&lt;";
      else if (c == '>')
        etag += "&gt;";
      else if (c == '"')
        etag += "&quot;";
      else
        etag.push_back(c);
    }
    out += fmt::format("<Part><PartNumber>{}</PartNumber><ETag>{}</ETag></Part>", i + 1, etag);
  }
  return out + "</CompleteMultipartUpload>";
}

}  // namespace titan::s3
