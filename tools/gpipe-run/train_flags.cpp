#include "tools/gpipe-run/train_flags.hpp"

#include "sim/zb_auto.hpp"
#include "tools/common/path_flag.hpp"
#include "tools/common/shared_flags.hpp"

namespace gpipe::tools {

void TrainFlags::add_to(CLI::App& cmd) {
  run.add_to(cmd, "Profile of the model (gpipe-run profile) whose costs --partition balanced balances");
  // Required unless --schedule-file gives them (PipelineFlags::check).
  pipeline.add_shape(cmd, 4096);
  add_schedule_file_flag(cmd, pipeline.schedule_file,
                         "Train the schedule of this IR JSON or torch CSV file (K, its stages and M from the file; "
                         "the executor runs its compute order, with its own transfers, each receive just before its "
                         "consumer)")
      ->check(CLI::ExistingFile);
  pipeline.add_batch(cmd, std::int64_t{1} << 30, /*with_micro_batch_size=*/false);
  cmd.add_option("--data-parallel", data_parallel,
                 "Pipeline replicas D, each training on its own N samples (global batch D x N): each stage's "
                 "gradients are summed over its D copies after its last backward, before its step (cpu: K x D "
                 "processes under mpirun or srun)")
      ->check(CLI::Range(1, 4096));
  cmd.add_flag("--reduce-after-backward", reduce_after_backward,
               "With --data-parallel: reduce every stage's gradients after its rank's last backward, as Megatron-LM "
               "without --overlap-grad-reduce (default: each stage's right after its own last backward)");
  cmd.add_option("--zero", zero,
                 "ZeRO's stage over the --data-parallel replicas: 0, or 1 (each replica keeps the optimizer state of "
                 "a 1/D share of every stage's values: gradients reduce-scattered, the share updated, the weights "
                 "all-gathered in STEP; gpipe-sim predicts 2 and 3 too)")
      ->check(CLI::Range(0, 3))
      ->capture_default_str();
  cmd.add_option("--tensor-parallel", tensor_parallel,
                 "Split each rank's transformer or llama blocks over T processes (Megatron-LM's split: heads and "
                 "feed-forward columns, partial sums all-reduced; embeddings and heads whole in each): K x T x D "
                 "processes under mpirun or srun")
      ->check(CLI::Range(1, 4096));
  cmd.add_option("--context-parallel", context_parallel,
                 "Split each sequence over C processes (context parallelism, Llama 3's form: each holds chunks i and "
                 "2C-1-i of the 2C, the keys and values all-gathered before attention and their gradients "
                 "reduce-scattered, the weights' gradients summed over D x C): the llama family with attn=flash, "
                 "K x C x D processes (x T with --tensor-parallel) under mpirun or srun")
      ->check(CLI::Range(1, 4096));
  cmd.add_option("--steps", steps, "Training steps (one mini-batch and one optimizer step each)")
      ->required()
      ->check(CLI::Range(1, 100000000));
  cmd.add_option("--measure-steps", measure_steps,
                 "Measure the last N steps: the metrics and --trace are of the one of median time, --json "
                 "lists every one's time")
      ->check(CLI::Range(1, 100000000))
      ->capture_default_str();
  pipeline.add_schedule(cmd, sim::predictable_schedule_names(),
                        "Schedule (zb-auto: the simulator's search on the profile's costs)");
  pipeline.add_recompute(cmd);
  cmd.add_option("--trace", trace,
                 "Write the last step's measured timeline as a Chrome trace (cuda with cupti: "
                 "with the GPU's kernels)")
      ->check(nonempty_path());
  cpu.add_to(cmd);
  cuda.add_to(cmd);
  cmd.add_flag("--json", json, "Print {\"losses\": [...], \"metrics\": {...}, \"step_times_us\": [...]} only");
  cmd.add_flag("--check-finite", check_finite, "Fail the run on a non-finite loss or gradient");
  cmd.add_option("--inject-fault", inject_fault,
                 "For testing: RANK:ACTION makes rank RANK fail at ACTION (e.g. 1:1F0); "
                 "RANK:ACTION:stall makes it hang there until the watchdog ends the run; "
                 "RANK:ACTION:oom makes it run out of memory there");
}

std::vector<std::string> TrainFlags::args() const {
  std::vector<std::string> out{"train"};
  const auto add = [&out](const std::vector<std::string>& more) { out.insert(out.end(), more.begin(), more.end()); };
  add(run.args(/*with_backward_order=*/pipeline.schedule_file.empty()));
  add(pipeline.args());
  add({"--data-parallel", std::to_string(data_parallel), "--zero", std::to_string(zero), "--tensor-parallel",
       std::to_string(tensor_parallel), "--context-parallel", std::to_string(context_parallel), "--steps", std::to_string(steps), "--measure-steps",
       std::to_string(measure_steps)});
  if (reduce_after_backward) add({"--reduce-after-backward"});
  if (!trace.empty()) add({"--trace", trace});
  add(cpu.args());
  add(cuda.args());
  if (json) out.emplace_back("--json");
  if (check_finite) out.emplace_back("--check-finite");
  if (!inject_fault.empty()) add({"--inject-fault", inject_fault});
  return out;
}

}  // namespace gpipe::tools
