#include "src/checkpoint/fault_injection_storage.h"

#include <algorithm>

#include <fmt/format.h>

namespace titan::checkpoint {
namespace {

class FaultFile final : public WritableFile {
 public:
  FaultFile(FaultInjectionStorage* owner, std::string path, std::unique_ptr<WritableFile> base)
      : owner_(owner), path_(std::move(path)), base_(std::move(base)) {}
  Status Append(const void* data, size_t size_bytes) override {
    TITAN_RETURN_IF_ERROR(owner_->Tick());
    return base_->Append(data, size_bytes);
  }
  Status Sync() override {
    TITAN_RETURN_IF_ERROR(owner_->Tick());
    TITAN_RETURN_IF_ERROR(base_->Sync());
    owner_->RecordSynced(path_, base_->size_bytes());
    return OkStatus();
  }
  Status Close() override { return base_->Close(); }
  uint64_t size_bytes() const override { return base_->size_bytes(); }

 private:
  FaultInjectionStorage* owner_;
  std::string path_;
  std::unique_ptr<WritableFile> base_;
};

}  // namespace

void FaultInjectionStorage::FailAfter(int64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  budget_ = n;
}

int64_t FaultInjectionStorage::operations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return operations_;
}

Status FaultInjectionStorage::Tick() {
  std::lock_guard<std::mutex> lock(mu_);
  ++operations_;
  if (budget_ == 0) return UnavailableError("fault injection: simulated crash");
  if (budget_ > 0) --budget_;
  return OkStatus();
}

void FaultInjectionStorage::RecordSynced(const std::string& path, uint64_t size_bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  synced_size_[path] = size_bytes;
}

std::string FaultInjectionStorage::DirOf(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

void FaultInjectionStorage::RememberName(const std::string& path) {
  PendingName pending{path, false, false, {}};
  if (base_->IsDir(path)) {
    pending.existed = pending.was_dir = true;
  } else if (Result<std::string> content = base_->ReadFile(path, size_t{1} << 32); content.ok()) {
    pending.existed = true;
    pending.content = std::move(content).value();
  }
  pending_.push_back(std::move(pending));
}

Result<std::unique_ptr<WritableFile>> FaultInjectionStorage::NewWritableFile(
    const std::string& path) {
  TITAN_RETURN_IF_ERROR(Tick());
  {
    std::lock_guard<std::mutex> lock(mu_);
    RememberName(path);
    synced_size_[path] = 0;
  }
  TITAN_ASSIGN_OR_RETURN(auto base, base_->NewWritableFile(path));
  return std::unique_ptr<WritableFile>(new FaultFile(this, path, std::move(base)));
}

Status FaultInjectionStorage::WriteFileAtomic(const std::string& path, std::string_view data) {
  std::string tmp = path + ".tmp";
  TITAN_ASSIGN_OR_RETURN(auto file, NewWritableFile(tmp));
  TITAN_RETURN_IF_ERROR(file->Append(data.data(), data.size()));
  TITAN_RETURN_IF_ERROR(file->Sync());
  TITAN_RETURN_IF_ERROR(file->Close());
  TITAN_RETURN_IF_ERROR(Rename(tmp, path));
  return SyncDir(DirOf(path));
}

Status FaultInjectionStorage::CreateDir(const std::string& path) {
  TITAN_RETURN_IF_ERROR(Tick());
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!base_->IsDir(path)) RememberName(path);
  }
  return base_->CreateDir(path);
}

Status FaultInjectionStorage::SyncDir(const std::string& path) {
  TITAN_RETURN_IF_ERROR(Tick());
  TITAN_RETURN_IF_ERROR(base_->SyncDir(path));
  std::lock_guard<std::mutex> lock(mu_);
  pending_.erase(std::remove_if(pending_.begin(), pending_.end(),
                                [&](const PendingName& p) { return DirOf(p.path) == path; }),
                 pending_.end());
  return OkStatus();
}

Status FaultInjectionStorage::Rename(const std::string& from, const std::string& to) {
  TITAN_RETURN_IF_ERROR(Tick());
  {
    std::lock_guard<std::mutex> lock(mu_);
    RememberName(to);
    RememberName(from);
    auto it = synced_size_.find(from);
    if (it != synced_size_.end()) {
      synced_size_[to] = it->second;
      synced_size_.erase(it);
    }
  }
  return base_->Rename(from, to);
}

Status FaultInjectionStorage::RemoveFile(const std::string& path) {
  TITAN_RETURN_IF_ERROR(Tick());
  {
    std::lock_guard<std::mutex> lock(mu_);
    RememberName(path);
    synced_size_.erase(path);
  }
  return base_->RemoveFile(path);
}

Status FaultInjectionStorage::RemoveDir(const std::string& path) {
  TITAN_RETURN_IF_ERROR(Tick());
  {
    std::lock_guard<std::mutex> lock(mu_);
    RememberName(path);
  }
  return base_->RemoveDir(path);
}

Status FaultInjectionStorage::RemoveTree(const std::string& path) {
  if (!base_->IsDir(path)) return base_->RemoveFile(path);
  TITAN_ASSIGN_OR_RETURN(auto names, base_->ListDir(path));
  for (const std::string& name : names) TITAN_RETURN_IF_ERROR(RemoveTree(path + "/" + name));
  return base_->RemoveDir(path);
}

Status FaultInjectionStorage::SimulateCrash() {
  std::lock_guard<std::mutex> lock(mu_);
  // 1. Unsynced bytes are lost.
  for (const auto& [path, size] : synced_size_) {
    Result<uint64_t> current = base_->FileSize(path);
    if (!current.ok() || *current <= size) continue;
    TITAN_ASSIGN_OR_RETURN(std::string content, base_->ReadFile(path, size_t{1} << 32));
    TITAN_ASSIGN_OR_RETURN(auto file, base_->NewWritableFile(path));
    TITAN_RETURN_IF_ERROR(file->Append(content.data(), size));
    TITAN_RETURN_IF_ERROR(file->Close());
  }
  // 2. Directory changes not made durable are undone, newest first.
  for (auto it = pending_.rbegin(); it != pending_.rend(); ++it) {
    TITAN_RETURN_IF_ERROR(RemoveTree(it->path));
    if (!it->existed) continue;
    if (it->was_dir) {
      TITAN_RETURN_IF_ERROR(base_->CreateDir(it->path));
    } else {
      TITAN_ASSIGN_OR_RETURN(auto file, base_->NewWritableFile(it->path));
      TITAN_RETURN_IF_ERROR(file->Append(it->content.data(), it->content.size()));
      TITAN_RETURN_IF_ERROR(file->Close());
    }
  }
  pending_.clear();
  synced_size_.clear();
  budget_ = -1;
  return OkStatus();
}

}  // namespace titan::checkpoint
