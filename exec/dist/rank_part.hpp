// How the processes of a multi-process run (one rank per process) bring what
// they measured (exec/runtime/measurement.hpp: a RankPart each) to the
// process of the loss stage, which alone reports: through the rendezvous
// store, as JSON.
#pragma once

#include <string>
#include <vector>

#include "exec/dist/tcp_store.hpp"
#include "exec/runtime/measurement.hpp"
#include "schedules/ids.hpp"

namespace gpipe::exec {

[[nodiscard]] std::string to_json(const RankPart& part);
// Throws RunError naming the part when `text` is not one.
[[nodiscard]] RankPart parse_rank_part(const std::string& text);

// Every process publishes its part; the process of rank `reporter` gets them
// all, in rank order (the others get none). Then every process waits until
// the reporter has read them, since rank 0 serves the store. With data
// parallelism each of `replicas` replicas of `ranks` processes does so
// apart: its reporter gets its own replica's parts (`replica`: this
// process's), and the wait is every replica's.
[[nodiscard]] std::vector<RankPart> exchange_parts(TcpStore& store, const RankPart& mine, int ranks,
                                                   schedules::Rank reporter, int replica = 0, int replicas = 1);

}  // namespace gpipe::exec
