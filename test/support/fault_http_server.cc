#include "test/support/fault_http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "src/base/check.h"
#include "src/base/clock.h"
#include "src/base/text.h"
#include "src/http/message.h"

namespace titan::testing {
namespace {

constexpr size_t kMaxHead = 64 << 10;
constexpr size_t kMaxBody = 256 << 20;

// Reads until `buffer` holds at least `size` bytes; false on end of stream or error.
bool ReadAtLeast(int fd, std::string* buffer, size_t size) {
  char chunk[64 << 10];
  while (buffer->size() < size) {
    ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      return false;
    }
    buffer->append(chunk, static_cast<size_t>(n));
  }
  return true;
}

}  // namespace

std::string PercentDecode(std::string_view text) {
  auto hex = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && hex(text[i + 1]) >= 0 && hex(text[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hex(text[i + 1]) * 16 + hex(text[i + 2])));
      i += 2;
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

bool FaultHttpServer::Connection::stopping() const { return server_->stopping_.load(); }

bool FaultHttpServer::Connection::Write(std::string_view data) {
  while (!data.empty()) {
    if (stopping()) return false;
    ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

bool FaultHttpServer::Connection::Trickle(std::string_view data, double bytes_per_second) {
  // Pieces of ~20 ms worth, at least one byte.
  size_t piece = std::max<size_t>(1, static_cast<size_t>(bytes_per_second / 50));
  int64_t per_piece_ns = static_cast<int64_t>(piece / bytes_per_second * 1e9);
  for (size_t at = 0; at < data.size(); at += piece) {
    if (!Write(data.substr(at, piece))) return false;
    if (!Sleep(per_piece_ns)) return false;
  }
  return true;
}

bool FaultHttpServer::Connection::Sleep(int64_t ns) {
  int64_t end = MonoNowNs() + ns;
  while (MonoNowNs() < end) {
    if (stopping()) return false;
    // Wakes when the peer closes too (POLLRDHUP), so that an abandoned answer ends.
    pollfd p{fd_, POLLRDHUP, 0};
    int ms = static_cast<int>(std::min<int64_t>((end - MonoNowNs()) / 1'000'000 + 1, 20));
    if (::poll(&p, 1, ms) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR))) return false;
  }
  return true;
}

FaultHttpServer::FaultHttpServer(Handler handler) : handler_(std::move(handler)) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  TITAN_CHECK(listen_fd_ >= 0) << "socket: " << std::strerror(errno);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  TITAN_CHECK(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0)
      << "bind: " << std::strerror(errno);
  TITAN_CHECK(::listen(listen_fd_, 128) == 0) << "listen: " << std::strerror(errno);
  socklen_t len = sizeof(addr);
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  acceptor_ = std::thread([this] { Accept(); });
}

FaultHttpServer::~FaultHttpServer() {
  stopping_ = true;
  ::shutdown(listen_fd_, SHUT_RDWR);
  acceptor_.join();
  ::close(listen_fd_);
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);
    threads.swap(threads_);
  }
  for (std::thread& t : threads) t.join();
}

std::string FaultHttpServer::url() const { return fmt::format("http://127.0.0.1:{}", port_); }

std::vector<HttpRequest> FaultHttpServer::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

size_t FaultHttpServer::count(std::string_view method, std::string_view contains) const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<size_t>(std::count_if(requests_.begin(), requests_.end(), [&](const auto& r) {
    return (method.empty() || r.method == method) && r.target.find(contains) != std::string::npos;
  }));
}

std::string FaultHttpServer::Answer(
    int status, std::string_view body,
    const std::vector<std::pair<std::string, std::string>>& headers) {
  std::string out = fmt::format("HTTP/1.1 {} {}\r\n", status, http::ReasonPhrase(status));
  for (const auto& [name, value] : headers) out += name + ": " + value + "\r\n";
  out += fmt::format("Content-Length: {}\r\n\r\n", body.size());
  out += body;
  return out;
}

void FaultHttpServer::Accept() {
  while (!stopping_) {
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return;  // shut down
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) {
      ::close(fd);
      return;
    }
    fds_.push_back(fd);
    threads_.emplace_back([this, fd] { Serve(fd); });
  }
}

void FaultHttpServer::Serve(int fd) {
  std::string buffer;
  while (!stopping_) {
    size_t end;
    while ((end = buffer.find("\r\n\r\n")) == std::string::npos) {
      if (buffer.size() > kMaxHead || !ReadAtLeast(fd, &buffer, buffer.size() + 1)) {
        end = std::string::npos;
        break;
      }
    }
    if (end == std::string::npos) break;
    HttpRequest request;
    request.mono_ns = MonoNowNs();
    std::string_view head(buffer.data(), end);
    std::string_view line = NextLine(&head);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    request.method = std::string(NextField(&line));
    request.target = std::string(NextField(&line));
    while (!head.empty()) {
      std::string_view h = NextLine(&head);
      if (!h.empty() && h.back() == '\r') h.remove_suffix(1);
      size_t colon = h.find(':');
      if (colon == std::string_view::npos) continue;
      std::string name(Trim(h.substr(0, colon)));
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      request.headers[name] = std::string(Trim(h.substr(colon + 1)));
    }
    uint64_t length = 0;
    if (auto it = request.headers.find("content-length"); it != request.headers.end()) {
      ParseUint64(it->second, &length);
    }
    if (length > kMaxBody || !ReadAtLeast(fd, &buffer, end + 4 + length)) break;
    request.body = buffer.substr(end + 4, length);
    buffer.erase(0, end + 4 + length);
    std::string_view target = request.target;
    size_t q = target.find('?');
    request.path = PercentDecode(target.substr(0, q));
    if (q != std::string_view::npos) {
      std::string_view query = target.substr(q + 1);
      while (!query.empty()) {
        size_t amp = std::min(query.find('&'), query.size());
        std::string_view pair = query.substr(0, amp);
        size_t eq = pair.find('=');
        request.query[PercentDecode(pair.substr(0, eq))] =
            eq == std::string_view::npos ? "" : PercentDecode(pair.substr(eq + 1));
        query.remove_prefix(std::min(amp + 1, query.size()));
      }
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      requests_.push_back(request);
    }
    Connection connection(fd, this);
    handler_(request, connection);
    if (connection.close_) break;
  }
  ::shutdown(fd, SHUT_RDWR);
  std::lock_guard<std::mutex> lock(mu_);
  fds_.erase(std::remove(fds_.begin(), fds_.end(), fd), fds_.end());
  ::close(fd);
}

}  // namespace titan::testing
