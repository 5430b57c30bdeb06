#include "src/checkpoint/s3_storage.h"

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "src/base/text.h"
#include "src/s3/client.h"
#include "src/s3/etag.h"

namespace titan::checkpoint {
namespace {

using s3::Client;

struct Root {
  std::shared_ptr<Client> client;
  std::string bucket;
  std::string prefix;  // "" or "a/b" (no slashes at the ends)
  S3StorageOptions options;

  std::string Key(std::string_view path) const {
    if (prefix.empty()) return std::string(path);
    if (path.empty()) return prefix;
    return prefix + "/" + std::string(path);
  }
  // The listing prefix of a directory: "prefix/dir/" ("" for the root of a bucket).
  std::string DirPrefix(std::string_view path) const {
    std::string key = Key(path);
    return key.empty() ? key : key + "/";
  }
};

// Uploads in parts of options.part_bytes; up to options.concurrency parts in flight on a fixed
// set of that many upload threads (started with the first part). Errors of background parts
// surface at the next Append or at Sync.
class S3WritableFile final : public WritableFile {
 public:
  S3WritableFile(std::shared_ptr<const Root> root, std::string key)
      : root_(std::move(root)), key_(std::move(key)) {
    buffer_.reserve(root_->options.part_bytes);
  }
  ~S3WritableFile() override {
    StopUploaders();
    if (!upload_id_.empty() && !done_) {
      root_->client->AbortMultipartUpload(root_->bucket, key_, upload_id_).IgnoreError();
    }
  }

  Status Append(const void* data, size_t size_bytes) override {
    if (done_) {
      return FailedPreconditionError(
          fmt::format("append to {} after Sync: an object cannot grow once written", Where()));
    }
    TITAN_RETURN_IF_ERROR(FirstError());
    const char* p = static_cast<const char*>(data);
    while (size_bytes > 0) {
      size_t room = root_->options.part_bytes - buffer_.size();
      size_t n = std::min(room, size_bytes);
      buffer_.insert(buffer_.end(), p, p + n);
      p += n;
      size_bytes -= n;
      size_ += n;
      if (buffer_.size() == root_->options.part_bytes) TITAN_RETURN_IF_ERROR(StartPart());
    }
    return OkStatus();
  }

  // Durable only once confirmed: the store keeps an object of the size written whose ETag
  // is the MD5 of the body (one PUT) or of the parts' MD5s (multipart), one HEAD.
  Status Sync() override {
    if (done_) return OkStatus();
    std::string expected_etag;
    if (upload_id_.empty()) {
      // Small enough for one PUT.
      std::string_view body(buffer_.data(), buffer_.size());
      expected_etag = s3::Md5Hex(body);
      TITAN_RETURN_IF_ERROR(root_->client->PutObject(root_->bucket, key_, body));
    } else {
      if (!buffer_.empty()) TITAN_RETURN_IF_ERROR(StartPart());
      StopUploaders();
      TITAN_RETURN_IF_ERROR(FirstError());
      Status complete =
          root_->client->CompleteMultipartUpload(root_->bucket, key_, upload_id_, etags_);
      if (!complete.ok() && !CompletedEarlier(complete)) return complete;
      expected_etag = s3::MultipartEtag(part_md5s_);
    }
    TITAN_RETURN_IF_ERROR(root_->client->ConfirmObject(root_->bucket, key_, size_, expected_etag));
    done_ = true;
    buffer_ = {};
    return OkStatus();
  }

  Status Close() override { return Sync(); }
  uint64_t size_bytes() const override { return size_; }

 private:
  struct Part {
    int number = 0;  // from 1
    std::vector<char> data;
  };

  std::string Where() const { return Client::Describe(root_->bucket, key_); }

  // A completion retried after a lost answer finds the upload gone (NoSuchUpload) although
  // the first attempt succeeded: the object of the right size says so.
  bool CompletedEarlier(const Status& complete) {
    if (complete.message().find("NoSuchUpload") == std::string::npos) return false;
    Result<uint64_t> size = root_->client->HeadObject(root_->bucket, key_);
    return size.ok() && *size == size_;
  }

  // Hands the full buffer to the uploaders; blocks while `concurrency` parts are pending.
  Status StartPart() {
    if (upload_id_.empty()) {
      TITAN_ASSIGN_OR_RETURN(upload_id_, root_->client->CreateMultipartUpload(root_->bucket, key_));
      for (int i = 0; i < root_->options.concurrency; ++i) {
        uploaders_.emplace_back([this] { Upload(); });
      }
    }
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return pending_ < static_cast<size_t>(root_->options.concurrency); });
    if (!error_.ok()) return error_;
    if (stopping_) {
      return FailedPreconditionError(
          fmt::format("append to {} after its Sync failed; save again", Where()));
    }
    etags_.emplace_back();
    part_md5s_.emplace_back();
    queue_.push_back(Part{static_cast<int>(etags_.size()), std::move(buffer_)});
    ++pending_;
    lock.unlock();
    cv_.notify_all();
    buffer_ = {};
    buffer_.reserve(root_->options.part_bytes);
    return OkStatus();
  }

  // An uploader thread: uploads queued parts until stopping with nothing queued. After a
  // failure the remaining parts are dropped (the upload is aborted anyway).
  void Upload() {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      Part part = std::move(queue_.front());
      queue_.pop_front();
      bool failed = !error_.ok();
      lock.unlock();
      std::string_view bytes(part.data.data(), part.data.size());
      s3::Md5Digest md5 = failed ? s3::Md5Digest{} : s3::Md5(bytes);
      Result<std::string> etag =
          failed ? Result<std::string>(std::string())
                 : root_->client->UploadPart(root_->bucket, key_, upload_id_, part.number, bytes);
      part.data = {};
      lock.lock();
      if (etag.ok()) {
        etags_[static_cast<size_t>(part.number - 1)] = *etag;
        part_md5s_[static_cast<size_t>(part.number - 1)] = md5;
      } else if (error_.ok()) {
        error_ = etag.status();
      }
      --pending_;
      cv_.notify_all();
    }
  }

  // Waits for every pending part, then ends the uploader threads.
  void StopUploaders() {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return pending_ == 0; });
      stopping_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : uploaders_) t.join();
    uploaders_.clear();
  }

  Status FirstError() {
    std::lock_guard<std::mutex> lock(mu_);
    return error_;
  }

  const std::shared_ptr<const Root> root_;
  const std::string key_;
  std::vector<char> buffer_;  // the part being filled
  uint64_t size_ = 0;
  bool done_ = false;
  std::string upload_id_;               // "" until the first part is full
  std::vector<std::thread> uploaders_;  // options.concurrency, once there is an upload

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Part> queue_;                // parts waiting for an uploader; guarded by mu_
  size_t pending_ = 0;                    // parts queued or uploading; guarded by mu_
  bool stopping_ = false;                 // guarded by mu_
  std::vector<std::string> etags_;        // part i's ETag at i-1; guarded by mu_
  std::vector<s3::Md5Digest> part_md5s_;  // the MD5 of part i's bytes at i-1; guarded by mu_
  Status error_;                          // the first failed part's; guarded by mu_
};

class S3RandomAccessFile final : public RandomAccessFile {
 public:
  S3RandomAccessFile(std::shared_ptr<const Root> root, std::string key, uint64_t size)
      : root_(std::move(root)), key_(std::move(key)), size_(size) {}
  Status ReadAt(uint64_t offset, size_t size_bytes, void* dst) const override {
    if (offset > size_ || size_bytes > size_ - offset) {
      return DataLossError(
          fmt::format("{} holds {} bytes; cannot read {} bytes at offset {} (truncated object?)",
                      Client::Describe(root_->bucket, key_), size_, size_bytes, offset));
    }
    return root_->client->GetRange(root_->bucket, key_, offset, size_bytes, dst);
  }

 private:
  const std::shared_ptr<const Root> root_;
  const std::string key_;
  const uint64_t size_;
};

class S3Storage final : public Storage {
 public:
  explicit S3Storage(std::shared_ptr<const Root> root) : root_(std::move(root)) {}

  std::string Describe(std::string_view path) const override {
    return Client::Describe(root_->bucket, root_->Key(path));
  }
  Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override {
    return std::unique_ptr<WritableFile>(new S3WritableFile(root_, root_->Key(path)));
  }
  Result<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(const std::string& path) override {
    TITAN_ASSIGN_OR_RETURN(uint64_t size, FileSize(path));
    return std::unique_ptr<RandomAccessFile>(new S3RandomAccessFile(root_, root_->Key(path), size));
  }
  Result<std::string> ReadFile(const std::string& path, size_t max_bytes) override {
    return root_->client->GetObject(root_->bucket, root_->Key(path), max_bytes);
  }
  // One PUT, confirmed (size and ETag) before it counts as written.
  Status WriteFileAtomic(const std::string& path, std::string_view data) override {
    std::string key = root_->Key(path);
    TITAN_RETURN_IF_ERROR(root_->client->PutObject(root_->bucket, key, data));
    return root_->client->ConfirmObject(root_->bucket, key, data.size(), s3::Md5Hex(data));
  }
  // A PUT with If-None-Match: * where the store honours it (probed once per bucket); on a store
  // that ignores it, a HEAD then a PUT (two writers at the same moment can both pass the HEAD).
  Status CreateFileExclusive(const std::string& path, std::string_view data) override {
    std::string key = root_->Key(path);
    TITAN_ASSIGN_OR_RETURN(bool honoured,
                           root_->client->ConditionalCreateHonoured(root_->bucket, root_->prefix));
    Status put;
    if (honoured) {
      put = root_->client->PutObject(root_->bucket, key, data, /*if_none_match=*/true);
    } else if (Result<uint64_t> size = root_->client->HeadObject(root_->bucket, key); size.ok()) {
      put = FailedPreconditionError("exists");
    } else if (size.status().code() != StatusCode::kNotFound) {
      return size.status();
    } else {
      put = root_->client->PutObject(root_->bucket, key, data);
    }
    if (put.code() == StatusCode::kFailedPrecondition) {
      return AlreadyExistsError(fmt::format("{} already exists", Describe(path)));
    }
    TITAN_RETURN_IF_ERROR(put);
    return root_->client->ConfirmObject(root_->bucket, key, data.size(), s3::Md5Hex(data));
  }
  Status CreateDir(const std::string&) override { return OkStatus(); }
  Status SyncDir(const std::string&) override { return OkStatus(); }
  Status Rename(const std::string& from, const std::string& to) override {
    return UnimplementedError(fmt::format("rename {} -> {}: an object store has no atomic rename",
                                          Describe(from), Describe(to)));
  }
  Status RemoveFile(const std::string& path) override {
    return root_->client->DeleteObject(root_->bucket, root_->Key(path));
  }
  Status RemoveDir(const std::string& path) override {
    TITAN_ASSIGN_OR_RETURN(s3::Listing listing,
                           root_->client->List(root_->bucket, root_->DirPrefix(path), "/", 1));
    if (!listing.objects.empty() || !listing.common_prefixes.empty()) {
      return FailedPreconditionError(
          fmt::format("cannot remove {}: it still holds objects", Describe(path)));
    }
    return OkStatus();
  }
  Result<std::vector<std::string>> ListDir(const std::string& path) override {
    std::string prefix = root_->DirPrefix(path);
    TITAN_ASSIGN_OR_RETURN(s3::Listing listing, root_->client->List(root_->bucket, prefix, "/"));
    std::vector<std::string> names;
    // The store's names, each one segment: one with a '/' (a store that ignored the
    // delimiter), "." or ".." would name something outside `path` once joined to it.
    auto add = [&](std::string name) {
      if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos) {
        return;
      }
      names.push_back(std::move(name));
    };
    for (const s3::ObjectEntry& o : listing.objects) add(o.key.substr(prefix.size()));
    for (const std::string& p : listing.common_prefixes) {
      if (p.size() > prefix.size() + 1) add(p.substr(prefix.size(), p.size() - prefix.size() - 1));
    }
    if (names.empty() && !path.empty()) {
      return NotFoundError(fmt::format("{} holds no objects", Describe(path) + "/"));
    }
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    return names;
  }
  Result<uint64_t> FileSize(const std::string& path) override {
    return root_->client->HeadObject(root_->bucket, root_->Key(path));
  }
  Result<std::vector<std::string>> ListIncompleteWrites() override {
    std::string prefix = root_->DirPrefix("");
    TITAN_ASSIGN_OR_RETURN(auto uploads,
                           root_->client->ListMultipartUploads(root_->bucket, prefix));
    std::vector<std::string> paths;
    for (const auto& u : uploads) {
      if (u.key.size() > prefix.size()) paths.push_back(u.key.substr(prefix.size()));
    }
    std::sort(paths.begin(), paths.end());
    paths.erase(std::unique(paths.begin(), paths.end()), paths.end());
    return paths;
  }
  Status AbortIncompleteWrites(const std::string& path) override {
    std::string key = root_->Key(path);
    TITAN_ASSIGN_OR_RETURN(auto uploads, root_->client->ListMultipartUploads(root_->bucket, key));
    for (const auto& u : uploads) {
      if (u.key != key) continue;  // a longer key with the same beginning
      TITAN_RETURN_IF_ERROR(root_->client->AbortMultipartUpload(root_->bucket, key, u.upload_id));
    }
    return OkStatus();
  }
  bool IsDir(const std::string& path) override {
    Result<s3::Listing> listing =
        root_->client->List(root_->bucket, root_->DirPrefix(path), "/", 1);
    // More than the one entry asked for is OUT_OF_RANGE: a directory too (it was taken for
    // none, so every step directory of more than one object was "not a directory" to gc).
    if (listing.status().code() == StatusCode::kOutOfRange) return true;
    return listing.ok() && (!listing->objects.empty() || !listing->common_prefixes.empty());
  }

 private:
  const std::shared_ptr<const Root> root_;
};

}  // namespace

Result<S3StorageOptions> S3StorageOptions::FromEnvironment() {
  S3StorageOptions options;
  TITAN_ASSIGN_OR_RETURN(int64_t mib,
                         s3::IntSetting(s3::ProcessEnv, "TITAN_S3_PART_MIB", 16, 5, 5120, "MiB"));
  options.part_bytes = static_cast<size_t>(mib) << 20;
  TITAN_ASSIGN_OR_RETURN(int64_t parts,
                         s3::IntSetting(s3::ProcessEnv, "TITAN_S3_CONCURRENCY", 8, 1, 64, "parts"));
  options.concurrency = static_cast<int>(parts);
  return options;
}

Result<std::shared_ptr<Storage>> OpenS3Storage(const std::string& url) {
  TITAN_ASSIGN_OR_RETURN(s3::Location location, s3::ParseS3Url(url));
  TITAN_ASSIGN_OR_RETURN(s3::Config config, s3::ResolveConfig());
  TITAN_ASSIGN_OR_RETURN(s3::ClientOptions client_options, s3::ClientOptions::FromEnvironment());
  auto root = std::make_shared<Root>();
  TITAN_ASSIGN_OR_RETURN(root->options, S3StorageOptions::FromEnvironment());
  TITAN_ASSIGN_OR_RETURN(std::unique_ptr<Client> client,
                         Client::Create(std::move(config), client_options));
  root->client = std::move(client);
  root->bucket = location.bucket;
  root->prefix = location.prefix;
  TITAN_RETURN_IF_ERROR_CTX(root->client->CheckBucket(root->bucket, root->DirPrefix("")),
                            fmt::format("opening {}", url));
  return std::shared_ptr<Storage>(new S3Storage(std::move(root)));
}

}  // namespace titan::checkpoint
