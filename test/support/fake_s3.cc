#include "test/support/fake_s3.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "src/base/text.h"
#include "src/s3/etag.h"

namespace titan::testing {
namespace {

std::string XmlEscape(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

std::string Quoted(const std::string& etag) { return "\"" + etag + "\""; }

// The text of every <tag>...</tag> in `xml`, in order.
std::vector<std::string> TagTexts(std::string_view xml, std::string_view tag) {
  std::vector<std::string> out;
  std::string open = fmt::format("<{}>", tag), close = fmt::format("</{}>", tag);
  for (size_t at = xml.find(open); at != std::string_view::npos; at = xml.find(open, at)) {
    at += open.size();
    size_t end = xml.find(close, at);
    if (end == std::string_view::npos) break;
    out.emplace_back(xml.substr(at, end - at));
  }
  return out;
}

}  // namespace

std::string S3ErrorAnswer(int status, const std::string& code, const std::string& message) {
  return FaultHttpServer::Answer(
      status,
      fmt::format("<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>{}</Code><Message>{}"
                  "</Message></Error>",
                  code, XmlEscape(message)),
      {{"Content-Type", "application/xml"}});
}

FakeS3::FakeS3() {
  server_ = std::make_unique<FaultHttpServer>(
      [this](const HttpRequest& r, FaultHttpServer::Connection& c) { Handle(r, c); });
}

FakeS3::~FakeS3() { server_.reset(); }

void FakeS3::SetFaults(Faults faults) {
  std::lock_guard<std::mutex> lock(mu_);
  faults_ = std::move(faults);
}

std::vector<std::string> FakeS3::Keys(const std::string& bucket) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> keys;
  auto it = objects_.find(bucket);
  if (it != objects_.end()) {
    for (const auto& [key, data] : it->second) keys.push_back(key);
  }
  return keys;
}

std::optional<std::string> FakeS3::Object(const std::string& bucket, const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto b = objects_.find(bucket);
  if (b == objects_.end()) return std::nullopt;
  auto o = b->second.find(key);
  if (o == b->second.end()) return std::nullopt;
  return o->second;
}

void FakeS3::Put(const std::string& bucket, const std::string& key, std::string data) {
  std::lock_guard<std::mutex> lock(mu_);
  objects_[bucket][key] = std::move(data);
}

std::string FakeS3::EtagLocked(const std::string& bucket, const std::string& key) const {
  auto multipart = multipart_etags_.find(bucket + "/" + key);
  if (multipart != multipart_etags_.end()) return multipart->second;
  return s3::Md5Hex(objects_.at(bucket).at(key));
}

void FakeS3::Handle(const HttpRequest& request, FaultHttpServer::Connection& connection) {
  std::function<bool(const HttpRequest&, FaultHttpServer::Connection&)> hook;
  {
    std::lock_guard<std::mutex> lock(mu_);
    hook = faults_.hook;
  }
  if (hook && hook(request, connection)) return;
  std::string path = request.path.substr(1);  // "bucket/key"
  size_t slash = path.find('/');
  std::string bucket = path.substr(0, slash);
  std::string key = slash == std::string::npos ? "" : path.substr(slash + 1);
  std::string answer;
  {
    std::lock_guard<std::mutex> lock(mu_);
    answer = HandleLocked(request, bucket, key);
  }
  if (request.method == "HEAD") {  // the head only: Content-Length names the object's size
    answer = answer.substr(0, answer.find("\r\n\r\n") + 4);
  }
  connection.Write(answer);
}

std::string FakeS3::HandleLocked(const HttpRequest& r, const std::string& bucket,
                                 const std::string& key) {
  auto& objects = objects_[bucket];
  auto has = [&](const char* name) { return r.query.count(name) > 0; };
  if (key.empty()) {
    if (r.method == "GET" && has("uploads")) {
      std::string prefix = has("prefix") ? r.query.at("prefix") : "";
      std::string xml = "<ListMultipartUploadsResult><IsTruncated>false</IsTruncated>";
      for (const auto& [id, upload] : uploads_) {
        if (upload.key.rfind(prefix, 0) != 0) continue;
        xml += fmt::format("<Upload><Key>{}</Key><UploadId>{}</UploadId></Upload>",
                           XmlEscape(upload.key), id);
      }
      return FaultHttpServer::Answer(200, xml + "</ListMultipartUploadsResult>");
    }
    if (r.method == "GET") {  // ListObjectsV2
      std::string prefix = has("prefix") ? r.query.at("prefix") : "";
      std::string delimiter = has("delimiter") ? r.query.at("delimiter") : "";
      std::string after = has("continuation-token") ? r.query.at("continuation-token") : "";
      size_t page = faults_.page_size;
      if (has("max-keys")) page = std::min<size_t>(page, std::stoul(r.query.at("max-keys")));
      std::string contents, prefixes, last;
      std::set<std::string> seen_prefixes;
      size_t n = 0;
      bool truncated = false;
      for (auto it = objects.upper_bound(after); it != objects.end(); ++it) {
        const std::string& k = it->first;
        if (k.rfind(prefix, 0) != 0) continue;
        if (!after.empty() && k <= after) continue;
        size_t cut = delimiter.empty() ? std::string::npos : k.find(delimiter, prefix.size());
        if (cut != std::string::npos) {
          std::string common = k.substr(0, cut + delimiter.size());
          if (!seen_prefixes.insert(common).second) continue;
          if (common <= after) continue;
          if (n == page) {
            truncated = true;
            break;
          }
          prefixes += fmt::format("<CommonPrefixes><Prefix>{}</Prefix></CommonPrefixes>",
                                  XmlEscape(common));
          // Continue after every key under this prefix.
          last = common + std::string(1, '\xff');
        } else {
          if (n == page) {
            truncated = true;
            break;
          }
          contents += fmt::format(
              "<Contents><Key>{}</Key><Size>{}</Size><ETag>{}</ETag></Contents>", XmlEscape(k),
              it->second.size(), XmlEscape(Quoted(EtagLocked(bucket, k))));
          last = k;
        }
        ++n;
      }
      std::string xml = fmt::format(
          "<ListBucketResult><Name>{}</Name><Prefix>{}</Prefix><IsTruncated>{}</IsTruncated>{}{}"
          "{}</ListBucketResult>",
          bucket, XmlEscape(prefix), truncated ? "true" : "false",
          truncated
              ? fmt::format("<NextContinuationToken>{}</NextContinuationToken>", XmlEscape(last))
              : "",
          contents, prefixes);
      return FaultHttpServer::Answer(200, xml);
    }
    return S3ErrorAnswer(400, "InvalidRequest", "not supported by the fake");
  }
  if (r.method == "POST" && has("uploads")) {
    std::string id = fmt::format("upload-{}", next_upload_++);
    uploads_[id] = Upload{key, {}};
    return FaultHttpServer::Answer(
        200, fmt::format("<InitiateMultipartUploadResult><Bucket>{}</Bucket><Key>{}</Key>"
                         "<UploadId>{}</UploadId></InitiateMultipartUploadResult>",
                         bucket, XmlEscape(key), id));
  }
  if (has("uploadId")) {
    auto upload = uploads_.find(r.query.at("uploadId"));
    if (upload == uploads_.end()) return S3ErrorAnswer(404, "NoSuchUpload");
    if (r.method == "PUT") {
      int number = std::stoi(r.query.at("partNumber"));
      upload->second.parts[number] = r.body;
      return FaultHttpServer::Answer(200, "", {{"ETag", Quoted(s3::Md5Hex(r.body))}});
    }
    if (r.method == "DELETE") {
      uploads_.erase(upload);
      return FaultHttpServer::Answer(204, "");
    }
    if (r.method == "POST") {
      std::vector<std::string> numbers = TagTexts(r.body, "PartNumber");
      std::string data;
      std::vector<s3::Md5Digest> md5s;
      for (const std::string& number : numbers) {
        int n = std::stoi(number);
        auto part = upload->second.parts.find(n);
        if (part == upload->second.parts.end()) return S3ErrorAnswer(400, "InvalidPart");
        if (n == 2 && faults_.drop_second_part_on_complete) continue;
        data += part->second;
        md5s.push_back(s3::Md5(part->second));
      }
      std::string etag = s3::MultipartEtag(md5s);
      objects[key] = std::move(data);
      multipart_etags_[bucket + "/" + key] = etag;
      uploads_.erase(upload);
      return FaultHttpServer::Answer(
          200, fmt::format("<CompleteMultipartUploadResult><Key>{}</Key><ETag>{}</ETag>"
                           "</CompleteMultipartUploadResult>",
                           XmlEscape(key), XmlEscape(Quoted(etag))));
    }
  }
  auto object = objects.find(key);
  if (r.method == "PUT") {
    auto inm = r.headers.find("if-none-match");
    if (inm != r.headers.end() && inm->second == "*" && faults_.honour_if_none_match &&
        object != objects.end()) {
      return S3ErrorAnswer(412, "PreconditionFailed", "At least one of the preconditions failed");
    }
    if (!faults_.keep_nothing_on_put) {
      objects[key] = r.body;
      multipart_etags_.erase(bucket + "/" + key);
    }
    return FaultHttpServer::Answer(200, "", {{"ETag", Quoted(s3::Md5Hex(r.body))}});
  }
  if (r.method == "DELETE") {
    if (object != objects.end()) objects.erase(object);
    multipart_etags_.erase(bucket + "/" + key);
    return FaultHttpServer::Answer(204, "");
  }
  if (object == objects.end()) return S3ErrorAnswer(404, "NoSuchKey", "no such key");
  const std::string& data = object->second;
  if (r.method == "HEAD") {
    // The head of a GET: Content-Length is the object's size (Handle cuts the body off).
    return FaultHttpServer::Answer(200, data, {{"ETag", Quoted(EtagLocked(bucket, key))}});
  }
  auto range = r.headers.find("range");
  if (range != r.headers.end()) {
    uint64_t first = 0, last = 0;
    std::string_view spec = range->second;
    spec.remove_prefix(std::min<size_t>(6, spec.size()));  // "bytes="
    size_t dash = spec.find('-');
    if (dash == std::string_view::npos || !ParseUint64(spec.substr(0, dash), &first) ||
        !ParseUint64(spec.substr(dash + 1), &last) || first >= data.size()) {
      return S3ErrorAnswer(416, "InvalidRange");
    }
    last = std::min<uint64_t>(last, data.size() - 1);
    return FaultHttpServer::Answer(206, data.substr(first, last - first + 1));
  }
  return FaultHttpServer::Answer(200, data, {{"ETag", Quoted(EtagLocked(bucket, key))}});
}

}  // namespace titan::testing
