// The rendezvous store: K ranks as threads on 127.0.0.1 (an ephemeral port)
// exchange a 128-byte blob as NCCL's unique id would be; every wait is bounded.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "base/error.hpp"
#include "exec/dist/tcp_store.hpp"

namespace gpipe::exec {
namespace {

using std::chrono::milliseconds;

std::string blob() {
  std::string b(128, '\0');
  for (int i = 0; i < 128; ++i) b[static_cast<std::size_t>(i)] = static_cast<char>(i * 7 + 1);
  b[5] = '\0';  // binary-safe: embedded zero bytes survive
  return b;
}

TEST(TcpStore, RanksExchangeABlob) {
  constexpr int kRanks = 4;
  TcpStore server("127.0.0.1", 0, /*is_server=*/true, milliseconds(10'000));
  ASSERT_GT(server.port(), 0);
  std::vector<std::string> got(kRanks);
  std::vector<std::string> errors(kRanks);
  std::vector<std::thread> clients;
  for (int r = 1; r < kRanks; ++r) {
    clients.emplace_back([&, r] {
      try {
        TcpStore store("127.0.0.1", server.port(), false, milliseconds(10'000));
        got[static_cast<std::size_t>(r)] = store.get("nccl_unique_id");  // may come before the set
        store.set("hello/" + std::to_string(r), std::to_string(r * r));
        store.barrier("done", r, kRanks);
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(r)] = e.what();
      }
    });
  }
  std::this_thread::sleep_for(milliseconds(20));  // let some gets wait first (not needed for correctness)
  server.set("nccl_unique_id", blob());
  got[0] = server.get("nccl_unique_id");
  for (int r = 1; r < kRanks; ++r) EXPECT_EQ(server.get("hello/" + std::to_string(r)), std::to_string(r * r));
  server.barrier("done", 0, kRanks);
  for (auto& t : clients) t.join();
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(errors[static_cast<std::size_t>(r)], "") << "rank " << r;
    EXPECT_EQ(got[static_cast<std::size_t>(r)], blob()) << "rank " << r;
  }
}

TEST(TcpStore, ClientWaitsForALateServer) {
  // Reserve a free port, release it, and start the server there a little later.
  int port = 0;
  { port = TcpStore("127.0.0.1", 0, true, milliseconds(1'000)).port(); }
  std::string value;
  std::thread client([&] {
    TcpStore store("127.0.0.1", port, false, milliseconds(10'000));
    value = store.get("k");
  });
  std::this_thread::sleep_for(milliseconds(200));
  TcpStore server("127.0.0.1", port, true, milliseconds(10'000));
  server.set("k", "v");
  client.join();
  EXPECT_EQ(value, "v");
}

TEST(TcpStore, GetOfAMissingKeyTimesOut) {
  TcpStore server("127.0.0.1", 0, true, milliseconds(200));
  TcpStore client("127.0.0.1", server.port(), false, milliseconds(200));
  try {
    (void)client.get("never");
    FAIL() << "no error";
  } catch (const RunError& e) {
    EXPECT_EQ(std::string(e.what()), "tcp store at 127.0.0.1:" + std::to_string(server.port()) +
                                         ": key 'never' was not set within 200 ms");
  }
  EXPECT_THROW((void)server.get("never"), RunError);
  client.set("now", "here");  // the connection is still usable after a timeout
  EXPECT_EQ(server.get("now"), "here");
}

TEST(TcpStore, ConnectingToNobodyTimesOut) {
  int port = 0;
  { port = TcpStore("127.0.0.1", 0, true, milliseconds(1'000)).port(); }  // now closed
  try {
    TcpStore client("127.0.0.1", port, false, milliseconds(300));
    FAIL() << "no error";
  } catch (const RunError& e) {
    EXPECT_NE(std::string(e.what()).find("could not connect within 300 ms"), std::string::npos) << e.what();
  }
}

TEST(TcpStore, ServerGoneIsAnError) {
  auto server = std::make_unique<TcpStore>("127.0.0.1", 0, true, milliseconds(5'000));
  TcpStore client("127.0.0.1", server->port(), false, milliseconds(5'000));
  client.set("a", "1");
  server.reset();
  EXPECT_THROW((void)client.get("a"), RunError);
}

TEST(TcpStore, BadArguments) {
  EXPECT_THROW(TcpStore("127.0.0.1", 70000, true, milliseconds(100)), InputError);
  EXPECT_THROW(TcpStore("127.0.0.1", 0, true, milliseconds(0)), InputError);
}

}  // namespace
}  // namespace gpipe::exec
