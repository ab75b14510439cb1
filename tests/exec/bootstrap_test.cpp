// Reading a rank's place in a multi-process run from the launcher's environment.
#include <gtest/gtest.h>

#include "base/error.hpp"
#include "exec/dist/bootstrap.hpp"
#include "tests/error_of.hpp"

namespace gpipe::exec {
namespace {

using gpipe::testing::error_of;

TEST(Bootstrap, NoLauncherIsOneProcess) {
  const LaunchInfo info = parse_launch_environment({{"HOME", "/root"}});
  EXPECT_EQ(info, LaunchInfo{});
  EXPECT_EQ(info.world_size, 1);
  EXPECT_EQ(info.launcher, "none");
}

TEST(Bootstrap, Torchrun) {
  const LaunchInfo info = parse_launch_environment({{"RANK", "3"},
                                                    {"WORLD_SIZE", "8"},
                                                    {"LOCAL_RANK", "1"},
                                                    {"MASTER_ADDR", "node0"},
                                                    {"MASTER_PORT", "29400"}});
  EXPECT_EQ(info, (LaunchInfo{3, 8, 1, 8, "node0", 29400, "torchrun"}));
}

TEST(Bootstrap, TorchrunWithoutLocalRankIsOneNode) {
  const LaunchInfo info = parse_launch_environment(
      {{"RANK", "2"}, {"WORLD_SIZE", "4"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}});
  EXPECT_EQ(info.local_rank, 2);
}

TEST(Bootstrap, OpenMpi) {
  const LaunchInfo info = parse_launch_environment({{"OMPI_COMM_WORLD_RANK", "5"},
                                                    {"OMPI_COMM_WORLD_SIZE", "6"},
                                                    {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                                                    {"MASTER_ADDR", "10.0.0.1"},
                                                    {"MASTER_PORT", "6000"}});
  EXPECT_EQ(info, (LaunchInfo{5, 6, 1, 6, "10.0.0.1", 6000, "mpirun"}));
}

TEST(Bootstrap, Slurm) {
  const LaunchInfo info = parse_launch_environment({{"SLURM_PROCID", "0"},
                                                    {"SLURM_NTASKS", "2"},
                                                    {"SLURM_LOCALID", "0"},
                                                    {"MASTER_ADDR", "n1"},
                                                    {"MASTER_PORT", "7000"}});
  EXPECT_EQ(info, (LaunchInfo{0, 2, 0, 2, "n1", 7000, "srun"}));
}

TEST(Bootstrap, ProcessesOnThisNodeAreTheWorldUnlessTheLauncherSays) {
  const Environment torchrun = {{"RANK", "3"},        {"WORLD_SIZE", "8"},       {"LOCAL_WORLD_SIZE", "4"},
                                {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}};
  EXPECT_EQ(parse_launch_environment(torchrun).local_size, 4);
  const Environment mpirun = {{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "6"},
                              {"OMPI_COMM_WORLD_LOCAL_SIZE", "3"}};
  EXPECT_EQ(parse_launch_environment(mpirun, false).local_size, 3);
  const Environment srun = {{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "4"}, {"SLURM_NTASKS_PER_NODE", "2"}};
  EXPECT_EQ(parse_launch_environment(srun, false).local_size, 2);
  Environment too_many = mpirun;
  too_many["OMPI_COMM_WORLD_LOCAL_SIZE"] = "7";
  EXPECT_EQ(error_of([&] { (void)parse_launch_environment(too_many, false); }),
            "launch environment: OMPI_COMM_WORLD_LOCAL_SIZE=7 is outside [1, 6]");
}

TEST(Bootstrap, AgreeingLaunchersAreFine) {
  // torchrun under srun: both describe the same process.
  const LaunchInfo info = parse_launch_environment({{"RANK", "1"},
                                                    {"WORLD_SIZE", "2"},
                                                    {"SLURM_PROCID", "1"},
                                                    {"SLURM_NTASKS", "2"},
                                                    {"SLURM_LOCALID", "0"},
                                                    {"MASTER_ADDR", "n1"},
                                                    {"MASTER_PORT", "7000"}});
  EXPECT_EQ(info.launcher, "torchrun");
  EXPECT_EQ(info.local_rank, 0);  // from Slurm, torchrun gave none
}

TEST(Bootstrap, ContradictingLaunchers) {
  EXPECT_EQ(error_of([] {
              (void)parse_launch_environment({{"RANK", "1"},
                                              {"WORLD_SIZE", "2"},
                                              {"OMPI_COMM_WORLD_RANK", "0"},
                                              {"OMPI_COMM_WORLD_SIZE", "2"}});
            }),
            "launch environment: RANK=1, WORLD_SIZE=2 contradict OMPI_COMM_WORLD_RANK=0, "
            "OMPI_COMM_WORLD_SIZE=2");
}

TEST(Bootstrap, MissingVariables) {
  EXPECT_EQ(error_of([] { (void)parse_launch_environment({{"RANK", "0"}}); }),
            "launch environment: RANK is set but WORLD_SIZE is missing");
  EXPECT_EQ(error_of([] { (void)parse_launch_environment({{"SLURM_NTASKS", "4"}}); }),
            "launch environment: SLURM_NTASKS is set but SLURM_PROCID is missing");
  EXPECT_EQ(error_of([] {
              (void)parse_launch_environment(
                  {{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"}});
            }),
            "launch environment: MASTER_ADDR is missing (needed to rendezvous 2 processes "
            "launched by mpirun)");
  EXPECT_EQ(error_of([] {
              (void)parse_launch_environment(
                  {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}});
            }),
            "launch environment: MASTER_PORT is missing (needed to rendezvous 2 processes "
            "launched by torchrun)");
  // MPI's processes find each other through the launcher: no rendezvous point needed.
  const LaunchInfo mpi = parse_launch_environment(
      {{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}},
      /*rendezvous=*/false);
  EXPECT_EQ(mpi.rank, 1);
  EXPECT_EQ(mpi.world_size, 2);
  EXPECT_EQ(mpi.launcher, "mpirun");
  // One process needs no rendezvous point.
  EXPECT_EQ(parse_launch_environment({{"RANK", "0"}, {"WORLD_SIZE", "1"}}).master_port, 29500);
}

TEST(Bootstrap, MalformedVariables) {
  EXPECT_EQ(error_of(
                [] { (void)parse_launch_environment({{"RANK", "x1"}, {"WORLD_SIZE", "2"}}); }),
            "launch environment: RANK='x1' is not an integer");
  EXPECT_EQ(error_of(
                [] { (void)parse_launch_environment({{"RANK", "2"}, {"WORLD_SIZE", "2"}}); }),
            "launch environment: RANK=2 is outside [0, WORLD_SIZE=2)");
  EXPECT_EQ(error_of(
                [] { (void)parse_launch_environment({{"RANK", "0"}, {"WORLD_SIZE", "0"}}); }),
            "launch environment: WORLD_SIZE=0 must be at least 1");
  EXPECT_EQ(error_of([] {
              (void)parse_launch_environment(
                  {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "-1"}});
            }),
            "launch environment: LOCAL_RANK=-1 is outside [0, WORLD_SIZE=2)");
  EXPECT_EQ(error_of([] {
              (void)parse_launch_environment({{"RANK", "0"},
                                              {"WORLD_SIZE", "2"},
                                              {"MASTER_ADDR", "h"},
                                              {"MASTER_PORT", "70000"}});
            }),
            "launch environment: MASTER_PORT=70000 is outside 1-65535");
}

TEST(Bootstrap, CurrentEnvironmentReadsEnviron) {
  ::setenv("GPIPE_BOOTSTRAP_TEST", "a=b", 1);
  EXPECT_EQ(current_environment().at("GPIPE_BOOTSTRAP_TEST"), "a=b");
  ::unsetenv("GPIPE_BOOTSTRAP_TEST");
}

}  // namespace
}  // namespace gpipe::exec
