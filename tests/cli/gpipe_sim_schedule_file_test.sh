#!/usr/bin/env bash
# gpipe-sim with schedule files as a user runs it: `run` and `sweep` with
# --schedule-file (torch's own CSV files, with comms or not, and our IR JSON),
# --overlap-f-b, `check` on torch's files, and one clear error line with exit
# 2 for every bad input. Usage: gpipe_sim_schedule_file_test.sh GPIPE_SIM
set -u
sim=$1
source "$(dirname "$0")/lib.sh"
data=tests/data/torch_csv

# Torch's files check, and run with K, the stages and M taken from the file.
for f in dualpipev_k2_m4 dualpipev_k2_m4_comms interleaved_zb_k2_m4_v2_comms 1f1b_k4_m8_comms; do
  expect_status 0 "$sim" check "$data/$f.csv"
  expect_out "valid ($f: "
  expect_status 0 "$sim" run --schedule-file "$data/$f.csv" -N 16 --trace "$tmp/$f.json"
  expect_out "^schedule    $f, "
  expect_out "^step time "
  # The trace reads back: it diffs against itself.
  expect_status 0 "$sim" diff "$tmp/$f.json" "$tmp/$f.json"
done
expect_status 0 "$sim" run --schedule-file "$data/dualpipev_k2_m4_comms.csv" -b 2
expect_out "dualpipev_k2_m4_comms, 4 stages on 2 ranks, 4 micro-batches of 2 samples (batch 8)"
expect_out "^note: 16 UNSHARD/RESHARD/REDUCE_GRAD/WAIT_REDUCE_GRAD actions cost 0 (no profile gives them a cost)$"
# Rank 0 holds stages 0 and 3 (V-shape): the table lists the layers of both.
expect_out "^   0  0-12,37-49 "
expect_status 0 "$sim" run --schedule-file "$data/dualpipev_k2_m4_comms.csv" -N 8 --json
expect_out '"notes"'
expect_out '"overlap_f_b": null'
# A compute-only file has no housekeeping, so no note; with comms or not, the same step time.
expect_status 0 "$sim" run --schedule-file "$data/dualpipev_k2_m4.csv" -N 8
grep -q "^note:" "$tmp/out" && fail "a note for a schedule without housekeeping"
plain=$(grep '^step time' "$tmp/out")
"$sim" run --schedule-file "$data/dualpipev_k2_m4_comms.csv" -N 8 >"$tmp/out"
[ "$(grep '^step time' "$tmp/out")" = "$plain" ] || fail "with comms: $(grep '^step time' "$tmp/out"), compute-only: $plain"

# Overlapped pairs concurrently: shorter than in turn.
expect_status 0 "$sim" run --schedule-file "$data/dualpipev_k2_m4.csv" -N 8 --overlap-f-b 1 --json
expect_out '"overlap_f_b": 1'
expect_status 0 "$sim" run --schedule-file "$data/dualpipev_k2_m4.csv" -N 8 --overlap-f-b 0.75
expect_out "^overlap     F&B pairs concurrently, each at 0.75 of the compute stream$"

# Our own IR JSON runs the same way, and a compute-only file takes --recompute.
"$sim" schedule --schedule 1f1b -K 4 -M 8 --format json >"$tmp/1f1b.json"
expect_status 0 "$sim" run --schedule-file "$tmp/1f1b.json" -N 16 --recompute always
expect_out "1f1b, 4 stages on 4 ranks, 8 micro-batches of 2 samples (batch 16), recompute stage"

# The sweep of one file: one row per recompute policy.
expect_status 0 "$sim" sweep --schedule-file "$data/1f1b_k4_m8_comms.csv" -N 16 --out "$tmp/sweep.csv"
expect_out "1 configurations: 1 simulated, 0 skipped"
"$sim" schedule --schedule 1f1b -K 4 -M 8 --format csv >"$tmp/1f1b.csv"
expect_status 0 "$sim" sweep --schedule-file "$tmp/1f1b.csv" -N 16 --recompute never,always --out "$tmp/sweep.csv"
expect_out "2 configurations: 2 simulated, 0 skipped"
grep -q '^1f1b,stage,4,1,8,' "$tmp/sweep.csv" || fail "sweep row: $(cat "$tmp/sweep.csv")"
expect_status 0 "$sim" sweep --schedule-file "$data/1f1b_k4_m8_comms.csv" -N 16 --recompute never,always \
  --out "$tmp/sweep.csv"
expect_out "2 configurations: 1 simulated, 1 skipped"
grep -qF 'skipped,"--recompute stage: schedule 1f1b_k4_m8_comms is lowered already, with recompute never"' \
  "$tmp/sweep.csv" || fail "skipped row: $(cat "$tmp/sweep.csv")"

# Bad input: one line, exit 2.
expect_status 2 "$sim" run --schedule-file "$data/dualpipev_k2_m4.csv" -N 8 -K 2
expect_one_error_line "--stages cannot be used with --schedule-file: the file gives the schedule, its stages and micro-batches"
expect_status 2 "$sim" run --schedule-file "$data/dualpipev_k2_m4.csv" -N 8 --schedule 1f1b
expect_one_error_line "--schedule cannot be used with --schedule-file"
expect_status 2 "$sim" sweep --schedule-file "$data/dualpipev_k2_m4.csv" -N 8 -M 1,2
expect_one_error_line "--microbatches cannot be used with --schedule-file"
expect_status 2 "$sim" sweep --schedule-file "$data/dualpipev_k2_m4.csv" -N 8 --stages-per-rank 2
expect_one_error_line "--stages-per-rank cannot be used with --schedule-file"
expect_status 2 "$sim" run -N 8
expect_one_error_line "give --stages K and --microbatches M, or --schedule-file FILE"
expect_status 2 "$sim" sweep -N 8 -K 2
expect_one_error_line "give --stages LIST and --microbatches LIST, or --schedule-file FILE"
expect_status 2 "$sim" run --schedule-file "$data/dualpipev_k2_m4.csv" -N 3
expect_one_error_line "--batch 3 is fewer samples than the 4 micro-batches of schedule dualpipev_k2_m4"
expect_status 2 "$sim" run --schedule-file "$data/dualpipev_k2_m4.csv" -N 8 --overlap-f-b 2
expect_one_error_line "--overlap-f-b must be from 0.5 (no gain) to 1 (perfect overlap), got 2"
expect_status 2 "$sim" run --schedule-file "$tmp/none.csv" -N 8
expect_one_error_line "$tmp/none.csv: cannot read"
printf '0F0,(0F1;1B0\n' >"$tmp/bad.csv"
expect_status 2 "$sim" run --schedule-file "$tmp/bad.csv" -N 8
expect_one_error_line "$tmp/bad.csv: line 1 cell 2: bad composite '(0F1;1B0': no closing ')'"
expect_status 2 "$sim" check "$tmp/bad.csv"
expect_one_error_line "$tmp/bad.csv: line 1 cell 2: bad composite"
printf '0F0,0SEND_F0,0WAIT_SEND_F0,0F1,0SEND_F1,0RECV_B1,0B1,0RECV_B0,0B0\n1RECV_F1,1F1,1RECV_F0,1F0,1B1,1SEND_B1,1B0,1SEND_B0\n' \
  >"$tmp/deadlock.csv"
expect_status 2 "$sim" run --schedule-file "$tmp/deadlock.csv" -N 8
expect_one_error_line "$tmp/deadlock.csv: deadlock: "
expect_status 2 "$sim" check "$tmp/deadlock.csv"
expect_one_error_line "deadlock: "

# Bounded by the input: no end (a device) stops at the file cap; one bad cell lists no millions.
expect_status 2 "$sim" check /dev/zero
expect_one_error_line "/dev/zero: larger than the 256 MiB an input file may be"
printf '0F0,0B0\n1F3999999,1B0\n' >"$tmp/huge_m.csv"
expect_status 2 "$sim" check "$tmp/huge_m.csv"
expect_one_error_line "micro-batch 3999999 in a file of 4 actions: at most 4 micro-batches fit"

# Error lines quote input printable and bounded: a 5 MB cell, a raw byte.
python3 -c "import sys; sys.stdout.write('0F0,0' + 'Q' * 5000000 + '0\\n')" >"$tmp/long_cell.csv"
expect_status 2 "$sim" check "$tmp/long_cell.csv"
[ "$(wc -c <"$tmp/err")" -le 2100 ] || fail "a 5 MB cell gave an error line of $(wc -c <"$tmp/err") bytes"
expect_one_error_line "bytes cut]"
printf '0F0,0B0\n1F0,1\377X0\n' >"$tmp/raw_byte.csv"
expect_status 2 "$sim" check "$tmp/raw_byte.csv"
expect_one_error_line "bad action '1\xFFX0'"

finish gpipe_sim_schedule_file_test
