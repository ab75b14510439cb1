#include "exec/dist/tcp_store.hpp"

#include <cerrno>
#include <cstring>
#include <cstdint>
#include <utility>

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/error.hpp"

namespace gpipe::exec {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr milliseconds kTick{100};   // how often server threads look at stopping_
constexpr milliseconds kGrace{2000};  // a get's reply may trail the server's own timeout

// Waits until fd is ready for `events`; false at the deadline or once *stop is set.
bool wait_fd(int fd, short events, Clock::time_point deadline, const std::atomic<bool>* stop) {
  for (;;) {
    if (stop != nullptr && stop->load()) return false;
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, static_cast<int>(std::min(left, kTick).count()));
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return true;  // let the read/write report the error
  }
}

// Reads exactly n bytes; false on timeout, stop, error or end of stream.
bool read_all(int fd, void* data, std::size_t n, Clock::time_point deadline,
              const std::atomic<bool>* stop) {
  auto* p = static_cast<char*>(data);
  while (n > 0) {
    if (!wait_fd(fd, POLLIN, deadline, stop)) return false;
    const ssize_t got = ::recv(fd, p, n, 0);
    if (got == 0) return false;
    if (got < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return false;
    }
    p += got;
    n -= static_cast<std::size_t>(got);
  }
  return true;
}

bool write_all(int fd, const void* data, std::size_t n, Clock::time_point deadline) {
  const auto* p = static_cast<const char*>(data);
  while (n > 0) {
    if (!wait_fd(fd, POLLOUT, deadline, nullptr)) return false;
    const ssize_t put = ::send(fd, p, n, MSG_NOSIGNAL);
    if (put < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return false;
    }
    p += put;
    n -= static_cast<std::size_t>(put);
  }
  return true;
}

void put_u32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

bool read_u32(int fd, std::uint32_t& v, Clock::time_point deadline, const std::atomic<bool>* stop) {
  unsigned char b[4];
  if (!read_all(fd, b, 4, deadline, stop)) return false;
  v = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<std::uint32_t>(b[3]) << 24);
  return true;
}

bool read_string(int fd, std::string& s, Clock::time_point deadline, const std::atomic<bool>* stop) {
  std::uint32_t n = 0;
  if (!read_u32(fd, n, deadline, stop)) return false;
  s.resize(n);
  return n == 0 || read_all(fd, s.data(), n, deadline, stop);
}

struct AddrInfo {
  addrinfo* list = nullptr;
  ~AddrInfo() {
    if (list != nullptr) ::freeaddrinfo(list);
  }
};

AddrInfo resolve(const std::string& host, int port, bool passive, const std::string& where) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  AddrInfo info;
  const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &info.list);
  if (rc != 0) throw RunError("tcp store " + where + ": cannot resolve host: " + ::gai_strerror(rc));
  return info;
}

// One non-blocking connect attempt, bounded by the deadline; -1 on failure.
int try_connect(const addrinfo& a, Clock::time_point deadline, int& error) {
  const int fd = ::socket(a.ai_family, a.ai_socktype | SOCK_CLOEXEC, a.ai_protocol);
  if (fd < 0) {
    error = errno;
    return -1;
  }
  const int flags = ::fcntl(fd, F_GETFL);
  ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  int rc = ::connect(fd, a.ai_addr, a.ai_addrlen);
  if (rc < 0 && errno == EINPROGRESS) {
    if (wait_fd(fd, POLLOUT, deadline, nullptr)) {
      socklen_t len = sizeof(error);
      ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len);
      rc = error == 0 ? 0 : -1;
    } else {
      error = ETIMEDOUT;
    }
  } else if (rc < 0) {
    error = errno;
  }
  if (rc != 0) {
    ::close(fd);
    return -1;
  }
  ::fcntl(fd, F_SETFL, flags);
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

}  // namespace

std::string TcpStore::where() const { return "at " + host_ + ":" + std::to_string(port_); }

TcpStore::TcpStore(std::string host, int port, bool is_server, milliseconds timeout)
    : host_(std::move(host)), port_(port), is_server_(is_server), timeout_(timeout) {
  if (port < 0 || port > 65535) throw InputError("tcp store: port " + std::to_string(port) + " is outside 0-65535");
  if (timeout.count() <= 0) throw InputError("tcp store: the timeout must be positive");
  const AddrInfo info = resolve(host_, port_, is_server_, where());
  if (is_server_) {
    int error = 0;
    for (const addrinfo* a = info.list; a != nullptr && socket_ < 0; a = a->ai_next) {
      const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
      if (fd < 0) continue;
      const int one = 1;
      ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
      if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 128) == 0) {
        socket_ = fd;
      } else {
        error = errno;
        ::close(fd);
      }
    }
    if (socket_ < 0) throw RunError("tcp store " + where() + ": cannot listen: " + std::strerror(error));
    sockaddr_storage bound{};
    socklen_t len = sizeof(bound);
    ::getsockname(socket_, reinterpret_cast<sockaddr*>(&bound), &len);
    port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6&>(bound).sin6_port
                                              : reinterpret_cast<sockaddr_in&>(bound).sin_port);
    acceptor_ = std::thread([this] { serve(); });
    return;
  }
  // The server may not be up yet: retry refused connections until the deadline.
  const auto deadline = Clock::now() + timeout_;
  int error = 0;
  for (;;) {
    for (const addrinfo* a = info.list; a != nullptr && socket_ < 0; a = a->ai_next) {
      socket_ = try_connect(*a, deadline, error);
    }
    if (socket_ >= 0) return;
    if (Clock::now() + milliseconds(50) >= deadline) break;
    std::this_thread::sleep_for(milliseconds(50));
  }
  throw RunError("tcp store " + where() + ": could not connect within " +
                 std::to_string(timeout_.count()) + " ms: " + std::strerror(error));
}

TcpStore::~TcpStore() {
  {
    std::lock_guard lock(mutex_);  // so no waiter misses the wake-up below
    stopping_ = true;
  }
  changed_.notify_all();
  if (acceptor_.joinable()) acceptor_.join();
  for (auto& t : threads_) t.join();  // each exits within one tick
  for (const int fd : connections_) ::close(fd);
  if (socket_ >= 0) ::close(socket_);
}

void TcpStore::serve() {
  while (!stopping_) {
    if (!wait_fd(socket_, POLLIN, Clock::now() + kTick, &stopping_)) continue;
    const int fd = ::accept4(socket_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    std::lock_guard lock(mutex_);
    connections_.push_back(fd);
    threads_.emplace_back([this, fd] { handle(fd); });
  }
}

bool TcpStore::wait_for_key(const std::string& key, milliseconds timeout, std::string& value) {
  std::unique_lock lock(mutex_);
  const bool found = changed_.wait_for(lock, timeout, [&] { return stopping_ || values_.contains(key); });
  if (!found || stopping_ || !values_.contains(key)) return false;
  value = values_.at(key);
  return true;
}

void TcpStore::handle(int fd) {
  // A request, once begun, must arrive whole within the store's timeout.
  const auto far = [this] { return Clock::now() + timeout_; };
  for (;;) {
    char op = 0;
    if (!read_all(fd, &op, 1, Clock::time_point::max(), &stopping_)) return;
    std::string key;
    if (!read_string(fd, key, far(), &stopping_)) return;
    std::string reply;
    if (op == 'S') {
      std::string value;
      if (!read_string(fd, value, far(), &stopping_)) return;
      {
        std::lock_guard lock(mutex_);
        values_[key] = std::move(value);
      }
      changed_.notify_all();
      reply.push_back(0);
    } else if (op == 'G') {
      std::uint32_t ms = 0;
      if (!read_u32(fd, ms, far(), &stopping_)) return;
      std::string value;
      const bool found = wait_for_key(key, milliseconds(ms), value);
      reply.push_back(found ? 0 : 1);
      put_u32(reply, static_cast<std::uint32_t>(value.size()));
      reply += value;
    } else {
      return;  // not our protocol: drop the connection
    }
    if (!write_all(fd, reply.data(), reply.size(), far())) return;
  }
}

void TcpStore::set(const std::string& key, const std::string& value) {
  if (is_server_) {
    {
      std::lock_guard lock(mutex_);
      values_[key] = value;
    }
    changed_.notify_all();
    return;
  }
  std::string request(1, 'S');
  put_u32(request, static_cast<std::uint32_t>(key.size()));
  request += key;
  put_u32(request, static_cast<std::uint32_t>(value.size()));
  request += value;
  std::lock_guard lock(client_mutex_);
  const auto deadline = Clock::now() + timeout_;
  char status = 1;
  if (!write_all(socket_, request.data(), request.size(), deadline) ||
      !read_all(socket_, &status, 1, deadline, nullptr) || status != 0) {
    throw RunError("tcp store " + where() + ": set('" + key + "') got no reply within " +
                   std::to_string(timeout_.count()) + " ms");
  }
}

std::string TcpStore::get(const std::string& key) {
  const std::string not_set = "tcp store " + where() + ": key '" + key + "' was not set within " +
                              std::to_string(timeout_.count()) + " ms";
  if (is_server_) {
    std::string value;
    if (!wait_for_key(key, timeout_, value)) throw RunError(not_set);
    return value;
  }
  std::string request(1, 'G');
  put_u32(request, static_cast<std::uint32_t>(key.size()));
  request += key;
  put_u32(request, static_cast<std::uint32_t>(timeout_.count()));
  std::lock_guard lock(client_mutex_);
  const auto deadline = Clock::now() + timeout_ + kGrace;
  char status = 1;
  std::string value;
  if (!write_all(socket_, request.data(), request.size(), deadline) ||
      !read_all(socket_, &status, 1, deadline, nullptr) ||
      !read_string(socket_, value, deadline, nullptr)) {
    throw RunError("tcp store " + where() + ": get('" + key + "') got no reply (server gone?)");
  }
  if (status != 0) throw RunError(not_set);
  return value;
}

void TcpStore::barrier(const std::string& name, int rank, int world_size) {
  set(name + "/arrived/" + std::to_string(rank), "");
  for (int r = 0; r < world_size; ++r) (void)get(name + "/arrived/" + std::to_string(r));
  // The server also waits until every client is past its gets, so the server's
  // owner may destroy the store as soon as this returns.
  set(name + "/left/" + std::to_string(rank), "");
  if (is_server_) {
    for (int r = 0; r < world_size; ++r) (void)get(name + "/left/" + std::to_string(r));
  }
}

}  // namespace gpipe::exec
