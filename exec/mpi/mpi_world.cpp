#include "exec/mpi/mpi_world.hpp"

#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "base/error.hpp"

namespace gpipe::exec::mpi {

MpiWorld::MpiWorld() {
  int provided = 0;
  check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
  if (provided < MPI_THREAD_SERIALIZED) {
    throw RunError("MPI gives no MPI_THREAD_SERIALIZED: the rank's worker thread cannot call it");
  }
  // Errors come back as codes (check() turns them into RunError), not as an abort of the job.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  int* tag_ub = nullptr;
  int found = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &found);
  if (found != 0 && tag_ub != nullptr) max_tag_ = *tag_ub;
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  MPI_Get_processor_name(name, &length);
  host_.assign(name, static_cast<std::size_t>(length));
  MPI_Comm node = MPI_COMM_NULL;
  check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node),
        "MPI_Comm_split_type");
  int on_node = 1;
  MPI_Comm_size(node, &on_node);
  MPI_Comm_free(&node);
  oversubscribed_ = on_node > static_cast<int>(std::thread::hardware_concurrency());
}

MpiWorld::~MpiWorld() {
  if (finalize_) MPI_Finalize();
}

void check(int code, const char* what) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw RunError(fmt::format("{} failed: {}", what, std::string(text, static_cast<std::size_t>(length))));
}

void MpiWorld::all_reduce(void* data, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                          const std::function<void()>& between) const {
  MPI_Request request = MPI_REQUEST_NULL;
  check(MPI_Iallreduce(MPI_IN_PLACE, data, count, type, op, comm, &request), "MPI_Iallreduce");
  wait(request, between);
}

void MpiWorld::wait(MPI_Request& request, const std::function<void()>& between) const {
  using namespace std::chrono_literals;
  using Clock = std::chrono::steady_clock;
  // A pipeline's waits are mostly shorter than this; a longer one, a stall or
  // a slow peer, gives the core back.
  constexpr auto kSpin = 20ms;
  const Clock::time_point start = Clock::now();
  for (int polls = 0;; ++polls) {
    int done = 0;
    check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test");
    if (done != 0) return;
    if (between && polls % 64 == 0) between();
    if (polls % 1024 == 1023 && Clock::now() - start > kSpin) {
      std::this_thread::sleep_for(50us);
    } else if (oversubscribed_) {
      std::this_thread::yield();
    }
  }
}

std::int64_t steady_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace gpipe::exec::mpi
