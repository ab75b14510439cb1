#!/usr/bin/env bash
# gpipe-sim schedule and check as a user runs them: output, exit status, and
# one clear error line for bad input. Usage: gpipe_sim_schedule_test.sh GPIPE_SIM
set -u
sim=$1
source "$(dirname "$0")/lib.sh"

# The fill/drain of GPipe K=4, M=8: 2(M+K-1) = 22 steps, rank 3 idles for the first 3.
expect_status 0 "$sim" schedule --schedule gpipe --stages 4 --microbatches 8 --format text
grep -q '^   3  0F3     1F2     2F1     3F0$' "$tmp/out" || fail "gpipe grid row 3: $(cat "$tmp/out")"
grep -q '^  21  0B0$' "$tmp/out" || fail "gpipe grid ends at step 21"

# JSON is the docs/design.md document; check reads it back as valid.
for schedule in gpipe 1f1b zb-h1 zb-h2; do
  for k in 1 3 4; do
    for m in 1 2 8; do
      for recompute in never always except_last; do
        for lowered in "" --lowered; do
          "$sim" schedule --schedule $schedule -K $k -M $m --recompute $recompute $lowered \
            --format json >"$tmp/s.json" || fail "schedule $schedule $k $m json"
          expect_status 0 "$sim" check "$tmp/s.json"
          # The CSV is torch's: a lowered schedule with R has no torch form.
          if "$sim" schedule --schedule $schedule -K $k -M $m --recompute $recompute $lowered \
            --format csv >"$tmp/s.csv" 2>"$tmp/err"; then
            expect_status 0 "$sim" check "$tmp/s.csv"
          elif [ -z "$lowered" ] || [ "$recompute" = never ] || ! grep -q "has no recompute action" "$tmp/err"; then
            fail "schedule $schedule $k $m $recompute $lowered csv: $(cat "$tmp/err")"
          fi
        done
      done
    done
  done
done
# The several-stages-per-rank families, at their default V and one more.
for schedule in interleaved-1f1b looped-bfs interleaved-zb zbv dualpipev; do
  for v in "" "--stages-per-rank 2" "--stages-per-rank 3"; do
    case "$schedule:$v" in zbv:*3|dualpipev:*3) continue ;; esac
    for lowered in "" --lowered; do
      "$sim" schedule --schedule $schedule -K 3 -M 6 $v $lowered --format json >"$tmp/s.json" \
        || fail "schedule $schedule $v json"
      "$sim" schedule --schedule $schedule -K 3 -M 6 $v $lowered --format csv >"$tmp/s.csv" \
        || fail "schedule $schedule $v csv"
      expect_status 0 "$sim" check "$tmp/s.json"
      expect_status 0 "$sim" check "$tmp/s.csv"
    done
  done
done
# Megatron's interleaving, K=2, M=4, V=2: rank 0 holds stages 0 and 2.
"$sim" schedule --schedule interleaved-1f1b -K 2 --stages-per-rank 2 -M 4 --format csv >"$tmp/out"
[ "$(head -1 "$tmp/out")" = "0F0,0F1,2F0,2F1,0F2,2B0,0F3,2B1,2F2,0B0,2F3,0B1,2B2,2B3,0B2,0B3" ] \
  || fail "interleaved-1f1b csv: $(cat "$tmp/out")"
"$sim" schedule --schedule zbv -K 2 -M 4 --format json >"$tmp/s.json"
grep -q '"stage_to_rank": \[0,1,1,0\]' "$tmp/s.json" || fail "zbv V placement: $(cat "$tmp/s.json")"
"$sim" schedule --schedule 1f1b -K 2 -M 2 --format json >"$tmp/s.json"
grep -q '"name": "1f1b"' "$tmp/s.json" || fail "json name"
grep -q '\["1F0","1B0","1F1","1B1"\]' "$tmp/s.json" || fail "1f1b rank 1 program: $(cat "$tmp/s.json")"
"$sim" schedule --schedule zb-h1 -K 2 -M 2 --format csv >"$tmp/out"
[ "$(cat "$tmp/out")" = $'0F0,0F1,0I0,0W0,0I1,0W1\n1F0,1I0,1F1,1I1,1W0,1W1' ] || fail "zb-h1 csv: $(cat "$tmp/out")"
"$sim" schedule -K 2 -M 2 --format csv >"$tmp/out"
[ "$(cat "$tmp/out")" = $'0F0,0F1,0B1,0B0\n1F0,1F1,1B1,1B0' ] || fail "gpipe csv: $(cat "$tmp/out")"
"$sim" schedule -K 2 -M 2 --backward-order forward --format csv >"$tmp/out"
[ "$(head -1 "$tmp/out")" = "0F0,0F1,0B0,0B1" ] || fail "forward order csv"
"$sim" schedule -K 2 -M 2 --recompute always --lowered --format text >"$tmp/out"
grep -q '^rank 0: 0F0 0SEND_F0 0F1 0SEND_F1 0R1 0RECV_B1 0B1 0R0 0RECV_B0 0B0 0STEP$' "$tmp/out" \
  || fail "lowered program: $(cat "$tmp/out")"

# The hand-written deadlock of the issue: named as its cycle, with the grid on stdout.
printf '0F0,0B0,0F1,0B1\n1F1,1F0,1B0,1B1\n' >"$tmp/deadlock.csv"
expect_status 2 "$sim" check "$tmp/deadlock.csv"
expect_one_error_line "deadlock: 0B0 (rank 0 step 1) -> 0F1 (rank 0 step 2) -> 1F1 (rank 1 step 0) -> 1F0 (rank 1 step 1) -> 1B0 (rank 1 step 2) -> 0B0"
grep -q '^stuck  \[0B0\]   \[1F1\]$' "$tmp/out" || fail "deadlock grid: $(cat "$tmp/out")"

# Validation errors name the rank, step and action.
printf '0F0,0B0,0B0\n1F0,1B0\n' >"$tmp/dup.csv"
expect_status 2 "$sim" check "$tmp/dup.csv"
expect_one_error_line "0B0"
printf '0F0,0B0\n1B0,1F0\n' >"$tmp/order.csv"
expect_status 2 "$sim" check "$tmp/order.csv"
expect_one_error_line "rank 1 step 0: 1B0"

# Bad usage and bad input: one line, exit 2.
expect_status 2 "$sim" schedule -K 0 -M 4;                 expect_one_error_line -- "--stages"
expect_status 2 "$sim" schedule -K 4 -M 0;                 expect_one_error_line -- "--microbatches"
expect_status 2 "$sim" schedule -K 4;                      expect_one_error_line -- "--microbatches"
expect_status 2 "$sim" schedule -K 4 -M 4 --schedule zb;   expect_one_error_line -- "--schedule"
expect_status 2 "$sim" schedule -K 4 -M 4 --format xml;    expect_one_error_line -- "--format"
expect_status 2 "$sim" schedule -K x -M 4;                 expect_one_error_line -- "--stages"
expect_status 2 "$sim" schedule -K 4 -M 8 --schedule zb-auto
expect_one_error_line -- "--schedule zb-auto searches with the simulator and needs a profile: use gpipe-sim run --profile FILE --schedule zb-auto"
expect_status 2 "$sim" schedule -K 2 -M 2 --schedule 1f1b --backward-order forward
expect_one_error_line -- "--backward-order applies to --schedule gpipe only"
expect_status 2 "$sim" schedule -K 2 -M 4 --schedule gpipe --stages-per-rank 2
expect_one_error_line -- "--stages-per-rank 2 does not fit --schedule gpipe"
expect_status 2 "$sim" schedule -K 2 -M 4 --schedule zbv --stages-per-rank 3
expect_one_error_line -- "--stages-per-rank 3 does not fit --schedule zbv: it takes exactly 2"
expect_status 2 "$sim" schedule -K 2 -M 4 --schedule looped-bfs --stages-per-rank 0
expect_one_error_line -- "--stages-per-rank"
expect_status 2 "$sim" schedule -K 4 -M 9 --schedule interleaved-1f1b
expect_one_error_line -- "--microbatches to be a multiple of its number of rounds"
expect_status 2 "$sim" schedule -K 3 -M 5 --schedule dualpipev
expect_one_error_line -- "--microbatches 5 < 2 x --stages 3"
expect_status 2 "$sim" frobnicate;                         expect_one_error_line "unknown command 'frobnicate'"
expect_status 2 "$sim" check "$tmp/none.json";             expect_one_error_line "none.json: cannot read"
echo '{"format": "gpipe-schedule", ' >"$tmp/trunc.json"
expect_status 2 "$sim" check "$tmp/trunc.json";            expect_one_error_line "trunc.json: not valid JSON"
echo '{"format": "gpipe-schedule", "version": 1}' >"$tmp/partial.json"
expect_status 2 "$sim" check "$tmp/partial.json";          expect_one_error_line "partial.json: name: missing"
expect_status 0 "$sim" --help
grep -q "schedule" "$tmp/out" || fail "--help lists the commands"
expect_status 0 "$sim" schedule --help
grep -q -- "--backward-order" "$tmp/out" || fail "schedule --help lists its flags"
grep -q -- "--stages-per-rank" "$tmp/out" || fail "schedule --help lists --stages-per-rank"
grep -q "dualpipev" "$tmp/out" || fail "schedule --help lists the schedules"

# A grid past 10^7 cells is refused, with the formats that still work; those do.
expect_status 2 "$sim" schedule --schedule gpipe -K 20000 -M 1
expect_one_error_line "a grid of 20000 ranks and 20000 actions or more is too large to print (more than 10000000 cells): use --format json or --format csv"
# Past the bound only once built (K x M is below it, the actions are not).
expect_status 2 "$sim" schedule --schedule gpipe -K 200 -M 100 --lowered
expect_one_error_line "a grid of 200 ranks and up to 119800 steps is too large to print (more than 10000000 cells)"
expect_status 0 "$sim" schedule --schedule gpipe -K 20000 -M 1 --format csv
[ "$(wc -l <"$tmp/out")" -eq 20000 ] || fail "the CSV of K=20000 has $(wc -l <"$tmp/out") lines"

# What a format cannot hold is refused before the schedule is built: in 256
# MiB, where building K = M = 1000 lowered took 1 GB.
small() { bash -c 'ulimit -v 262144 && exec "$@"' small "$@"; }
[ -n "${GPIPE_SANITIZED:-}" ] && small() { "$@"; }  # ASan's shadow memory needs more
expect_status 2 small "$sim" schedule -K 1000 -M 1000 --format csv --lowered --recompute always
expect_one_error_line "--format csv --lowered: torch's schedule CSV has no recompute action, so --recompute always cannot be written; use --recompute never, or --format json"
expect_status 2 small "$sim" schedule -K 1000 -M 1000 --lowered
expect_one_error_line "a grid of 1000 ranks and 1000000 actions or more is too large to print"
# Compute-only, the CSV has no R to hold: torch's stage does its own checkpointing.
expect_status 0 "$sim" schedule -K 2 -M 2 --format csv --recompute always
[ "$(cat "$tmp/out")" = $'0F0,0F1,0B1,0B0\n1F0,1F1,1B1,1B0' ] || fail "compute-only csv with recompute: $(cat "$tmp/out")"

finish "gpipe-sim schedule/check"
