// A tiny TCP key-value store for the rendezvous of a multi-process run: rank 0
// serves it on MASTER_ADDR:MASTER_PORT, every rank (rank 0 included) sets and
// gets keys, and a get blocks until its key is set. Enough to share NCCL's
// 128-byte unique id; not a general store (keys are never removed, values
// stay in rank 0's memory). Every wait is bounded by the timeout and ends in
// a RunError naming the address and key, never a hang.
//
// Wire format (little-endian lengths): request = op ('S' or 'G'), u32 key
// length, key, then for 'S' u32 value length and value, for 'G' u32 timeout
// in ms; reply to 'S' = status byte; reply to 'G' = status byte (0 found,
// 1 timed out), u32 length, value.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace gpipe::exec {

class TcpStore {
 public:
  // is_server: listen on host:port (port 0 picks a free port, see port());
  // otherwise connect to it, retrying until `timeout` (the server may start later).
  // Throws RunError when it cannot listen or connect in time.
  TcpStore(std::string host, int port, bool is_server, std::chrono::milliseconds timeout);
  ~TcpStore();
  TcpStore(const TcpStore&) = delete;
  TcpStore& operator=(const TcpStore&) = delete;

  // The port served or connected to.
  [[nodiscard]] int port() const { return port_; }

  void set(const std::string& key, const std::string& value);
  // Blocks until `key` is set, at most the timeout; RunError when it is not.
  [[nodiscard]] std::string get(const std::string& key);
  // Returns once all `world_size` ranks called it with this name; on the
  // server, once every rank has also finished waiting, so its owner may then
  // destroy the store without cutting off a rank.
  void barrier(const std::string& name, int rank, int world_size);

 private:
  void serve();                 // the accept loop (server only)
  void handle(int connection);  // one client's requests (server only)
  [[nodiscard]] bool wait_for_key(const std::string& key, std::chrono::milliseconds timeout,
                                  std::string& value);
  [[nodiscard]] std::string where() const;

  std::string host_;
  int port_ = 0;
  bool is_server_ = false;
  std::chrono::milliseconds timeout_;
  int socket_ = -1;  // listening socket (server) or connection (client)
  std::mutex client_mutex_;  // one request at a time on the client connection

  // Server state.
  std::atomic<bool> stopping_{false};
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, std::string> values_;
  std::vector<int> connections_;
  std::vector<std::thread> threads_;
  std::thread acceptor_;
};

}  // namespace gpipe::exec
