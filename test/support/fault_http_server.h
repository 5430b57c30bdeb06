// A loopback HTTP/1.1 server for testing titan's clients against peers that misbehave in ways
// no real server does on demand: answers that trickle, stall, never end, lie about their
// length, cycle their continuation tokens, redirect, or send binary garbage. It is a test
// double for misbehaviour only (issue 37); correct behaviour is tested against the real
// servers (Ceph RGW, etcd).
//
// Each connection has a thread; requests on it are read whole (head and Content-Length body)
// and handed to the handler, which writes the raw answer bytes itself (Connection::Write,
// Trickle) and may sleep, close, or keep the connection for the next request. The destructor
// stops the accept loop, shuts every connection down (a handler's pending Write fails, its
// Sleep returns false) and joins the threads.
//
// Thread safety: the handler runs on the connection threads, concurrently for concurrent
// connections; requests() and count() may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace titan::testing {

struct HttpRequest {
  std::string method;
  std::string target;                          // as sent: "/bucket/key%20x?uploads"
  std::string path;                            // percent-decoded, without the query
  std::map<std::string, std::string> query;    // decoded; "uploads" -> "" for a bare name
  std::map<std::string, std::string> headers;  // names lower-case
  std::string body;
  int64_t mono_ns = 0;  // when the head arrived (CLOCK_MONOTONIC)
};

class FaultHttpServer {
 public:
  class Connection {
   public:
    // Writes all of `data`; false when the peer went away or the server is stopping.
    bool Write(std::string_view data);
    // Writes `data` at about `bytes_per_second`, one small piece at a time.
    bool Trickle(std::string_view data, double bytes_per_second);
    // Sleeps, waking early (false) when the server stops.
    bool Sleep(int64_t ns);
    // Ends the connection after this answer (the default keeps it for the next request).
    void Close() { close_ = true; }
    bool stopping() const;

   private:
    friend class FaultHttpServer;
    Connection(int fd, const FaultHttpServer* server) : fd_(fd), server_(server) {}
    int fd_;
    const FaultHttpServer* server_;
    bool close_ = false;
  };
  using Handler = std::function<void(const HttpRequest&, Connection&)>;

  explicit FaultHttpServer(Handler handler);
  ~FaultHttpServer();
  FaultHttpServer(const FaultHttpServer&) = delete;
  FaultHttpServer& operator=(const FaultHttpServer&) = delete;

  std::string url() const;  // "http://127.0.0.1:PORT"
  int port() const { return port_; }
  std::vector<HttpRequest> requests() const;
  // Requests whose method is `method` ("" any) and whose target contains `contains`.
  size_t count(std::string_view method = "", std::string_view contains = "") const;

  // A whole answer: status line, headers (Content-Length added), body.
  static std::string Answer(int status, std::string_view body,
                            const std::vector<std::pair<std::string, std::string>>& headers = {});

 private:
  void Accept();
  void Serve(int fd);

  Handler handler_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread acceptor_;
  mutable std::mutex mu_;
  std::vector<std::thread> threads_;   // guarded by mu_
  std::vector<int> fds_;               // open connections, guarded by mu_
  std::vector<HttpRequest> requests_;  // guarded by mu_
};

// "%41b" -> "Ab" ('+' stays '+').
std::string PercentDecode(std::string_view text);

}  // namespace titan::testing
