// An in-memory S3 store on a FaultHttpServer, for tests of titan's S3 client and checkpoint
// storage against a store that misbehaves (issue 37): it completes a multipart upload with a
// part missing, answers 200 to a PUT and keeps nothing, ignores If-None-Match, pages with
// tokens that cycle, or whatever a per-request hook answers instead. Correct S3 behaviour is
// tested against the real Ceph RGW (test/checkpoint/test_s3.py); this double only does enough
// S3 for a save, a copy and a listing to run: ListObjectsV2 (prefix, delimiter, pages),
// PUT/GET (ranges)/HEAD/DELETE, multipart uploads (create, parts, complete, abort, list).
// Signatures are not checked. ETags are MD5s as AWS computes them.
//
// Thread safety: all methods may be called from any thread; the faults may be changed while
// requests run (they are read under the store's lock).
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "test/support/fault_http_server.h"

namespace titan::testing {

class FakeS3 {
 public:
  struct Faults {
    bool drop_second_part_on_complete = false;  // the object is assembled without part 2
    bool keep_nothing_on_put = false;           // a single PUT answers 200, stores nothing
    bool honour_if_none_match = true;
    size_t page_size = 1000;  // ListObjectsV2 keys per page
    // Called first for every request: true when it answered the request itself.
    std::function<bool(const HttpRequest&, FaultHttpServer::Connection&)> hook;
  };

  FakeS3();
  ~FakeS3();

  // What AWS_ENDPOINT_URL should be.
  std::string endpoint() const { return server_->url(); }
  FaultHttpServer& server() { return *server_; }
  void SetFaults(Faults faults);
  // Keys of `bucket` (sorted) and one object's bytes.
  std::vector<std::string> Keys(const std::string& bucket) const;
  std::optional<std::string> Object(const std::string& bucket, const std::string& key) const;
  void Put(const std::string& bucket, const std::string& key, std::string data);

 private:
  struct Upload {
    std::string key;
    std::map<int, std::string> parts;
  };
  void Handle(const HttpRequest& request, FaultHttpServer::Connection& connection);
  std::string EtagLocked(const std::string& bucket, const std::string& key) const;
  std::string HandleLocked(const HttpRequest& request, const std::string& bucket,
                           const std::string& key);

  mutable std::mutex mu_;
  Faults faults_;                                                      // guarded by mu_
  std::map<std::string, std::map<std::string, std::string>> objects_;  // guarded by mu_
  // ETags of objects completed from parts ("<md5 of md5s>-N"); others are the MD5 of the data.
  std::map<std::string, std::string> multipart_etags_;  // "bucket/key" -> ETag, guarded by mu_
  std::map<std::string, Upload> uploads_;               // guarded by mu_
  int next_upload_ = 1;                                 // guarded by mu_
  std::unique_ptr<FaultHttpServer> server_;
};

// An S3 <Error> answer.
std::string S3ErrorAnswer(int status, const std::string& code, const std::string& message = "");

}  // namespace titan::testing
