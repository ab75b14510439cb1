#!/usr/bin/env bash
# gpipe-sim profile as a user runs it: the file it writes, its one-line
# summary, and the LIST syntax of docs/design.md (1,2,4 / 1..64 / 1..4,8) with one
# clear error line and exit 2 for every bad list, device, dtype or spec.
# Usage: gpipe_sim_profile_test.sh GPIPE_SIM
set -u
sim=$1
source "$(dirname "$0")/lib.sh"
spec=transformer:layers=2,hidden=64,heads=4,seq=16
# profile_sizes LIST: runs the command with --micro-batch-sizes LIST.
profile_sizes() {
  "$sim" profile --model "$spec" --device h100 --micro-batch-sizes "$1" --out "$tmp/p.json"
}
expect_sizes() {
  expect_status 0 profile_sizes "$1"
  grep -q "micro-batch sizes $2\$" "$tmp/out" || fail "sizes of '$1': $(cat "$tmp/out")"
}

expect_status 0 "$sim" profile --model "$spec" --device h100 --micro-batch-sizes 1,2 --out "$tmp/p.json"
[ "$(cat "$tmp/out")" = "$tmp/p.json: analytic profile of $spec on NVIDIA H100 80GB HBM3 (bf16), 4 layers, micro-batch sizes 1,2
133,888 parameters; forward 0.003801 GFLOP per sample
priced kernel by kernel: h100's kernel model ($(sed -n 's/^  "source": "\(.*\)",$/\1/p' "$(dirname "$0")/../../profiles/data/kernels/h100.json"))" ] \
  || fail "summary: $(cat "$tmp/out")"
grep -q '"source": "analytic"' "$tmp/p.json" || fail "source field"
grep -q '"format": "gpipe-profile"' "$tmp/p.json" || fail "format field"
grep -q '"bandwidth_GBps": 450.0' "$tmp/p.json" || fail "NVLink bandwidth"

expect_status 0 "$sim" profile --model mlp:layers=2,hidden=8 --device A100 --dtype fp32 \
  --micro-batch-sizes 4 --out "$tmp/q.json" --mfu 0.4 --link-latency-us 2
grep -q "on NVIDIA A100-SXM4-80GB (fp32), 3 layers" "$tmp/out" || fail "a100 fp32: $(cat "$tmp/out")"
grep -q '"latency_us": 2.0' "$tmp/q.json" || fail "--link-latency-us"
grep -q "^priced at 0.4 of the peak FLOP rate (--mfu), a flat roofline$" "$tmp/out" || fail "--mfu: $(cat "$tmp/out")"
# A kernel model of one's own; a malformed one is one line and exit 2.
sed 's/"efficiency": 0.[0-9]*,/"efficiency": 0.9,/; s/"source": "[^"]*"/"source": "mine"/' \
  "$(dirname "$0")/../../profiles/data/kernels/h100.json" >"$tmp/k.json"
expect_status 0 "$sim" profile --model "$spec" --device h100 --micro-batch-sizes 1 --out "$tmp/k.out.json" \
  --kernel-file "$tmp/k.json"
grep -q "^priced kernel by kernel: h100's kernel model (mine)$" "$tmp/out" || fail "--kernel-file: $(cat "$tmp/out")"
echo '{"device": "h100"}' >"$tmp/bad_k.json"
expect_status 2 "$sim" profile --model "$spec" --device h100 --micro-batch-sizes 1 --out "$tmp/k.out.json" \
  --kernel-file "$tmp/bad_k.json"
[ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "bad_k.json: source: is missing" "$tmp/err" \
  || fail "bad --kernel-file: $(cat "$tmp/err")"

# LIST: single values, ranges, mixes, spaces, any order (the profile sorts).
expect_sizes 1,2,4,8 "1,2,4,8"
expect_sizes 1..5 "1,2,3,4,5"
expect_sizes "1..4,8,16" "1,2,3,4,8,16"
expect_sizes " 3 , 1..2 " "1,2,3"
expect_sizes 7..7 "7"
expect_sizes 16,1 "1,16"

# Bad lists: one line naming the flag, exit 2.
for bad in "" " " "," "1,,2" "1," "0" "0..4" "-1" "1..-2" "x" "4x" "1.5" "+3" "8..1" "1..2..3" \
           "..4" "4.." "2,2" "1..4,3" "99999999999" "1..1000001" "1..600000,600001..1200000"; do
  expect_status 2 profile_sizes "$bad"
  expect_one_error_line -- "--micro-batch-sizes: "
done
profile_sizes "8..1" 2>"$tmp/err"; expect_one_error_line "range '8..1' is reversed (write 1..8)"
profile_sizes "2,2" 2>"$tmp/err"; expect_one_error_line "2 is given more than once"
profile_sizes "1..1000001" 2>"$tmp/err"; expect_one_error_line "more than 1000000 values"
profile_sizes "0" 2>"$tmp/err"; expect_one_error_line "values must be at least 1, got 0"
profile_sizes "x" 2>"$tmp/err"; expect_one_error_line "'x' is not a positive integer"
profile_sizes "1,,2" 2>"$tmp/err"; expect_one_error_line "empty item in '1,,2'"
profile_sizes "" 2>"$tmp/err"; expect_one_error_line "empty list"
profile_sizes "4.." 2>"$tmp/err"; expect_one_error_line "range '4..' needs a start and an end"

# Bad device, dtype, spec, options, output: one line, exit 2.
expect_status 2 "$sim" profile --model "$spec" --device v100 --micro-batch-sizes 1 --out "$tmp/p.json"
expect_one_error_line "--device: unknown device 'v100' (known: a100, h100, h100-pcie, h200, b200, gb200, l40s, rtx4090, mi300x, mi355x)"

# A device of the user's own (--device-file), named in the profile; and its
# mistakes, one line naming the device and the field.
cat >"$tmp/devices.json" <<'JSON'
{"devices": [{"key": "mygpu", "name": "My GPU 16GB", "bf16_tflops": 100, "fp8_tflops": null, "fp32_tflops": 10,
              "memory_GB": 16, "memory_TBps": 1.0, "link_GBps": 25, "source": "my own measurements"}]}
JSON
expect_status 0 "$sim" profile --model "$spec" --device mygpu --device-file "$tmp/devices.json" --micro-batch-sizes 1 \
  --out "$tmp/mine.json"
grep -q '"device": "My GPU 16GB"' "$tmp/mine.json" || fail "the profile names the user's device: $(head -c 300 "$tmp/mine.json")"
expect_status 0 "$sim" profile --model "$spec" --device h200 --device-file "$tmp/devices.json" --micro-batch-sizes 1 \
  --out "$tmp/shipped.json"  # the shipped ones stay known
sed 's/"bf16_tflops": 100, //' "$tmp/devices.json" >"$tmp/bad_devices.json"
expect_status 2 "$sim" profile --model "$spec" --device mygpu --device-file "$tmp/bad_devices.json" \
  --micro-batch-sizes 1 --out "$tmp/p.json"
expect_one_error_line "--device-file $tmp/bad_devices.json: device 1 (\"mygpu\"): missing field 'bf16_tflops'"
expect_status 2 "$sim" profile --model "$spec" --device mygpu --device-file "$tmp/absent.json" --micro-batch-sizes 1 \
  --out "$tmp/p.json"
expect_one_error_line "--device-file $tmp/absent.json: cannot read it"
expect_status 2 "$sim" profile --model "$spec" --device mi355x --dtype fp32 --micro-batch-sizes 1 --out "$tmp/p.json"
expect_one_error_line "--dtype fp32: the device table gives mi355x no fp32 rate"
expect_status 2 "$sim" profile --model "$spec" --device h100 --dtype fp16 --micro-batch-sizes 1 --out "$tmp/p.json"
expect_one_error_line "--dtype: unknown dtype 'fp16' (known: fp32, bf16, fp8)"
# fp8: the GEMMs at the fp8 rate (H100 989 -> 1979 TFLOP/s), the bytes as bf16.
expect_status 0 "$sim" profile --model "$spec" --device h100 --dtype fp8 --micro-batch-sizes 1 --out "$tmp/fp8.json"
grep -q '"dtype": "fp8"' "$tmp/fp8.json" || fail "the fp8 profile says so"
expect_status 2 "$sim" profile --model "$spec" --device a100 --dtype fp8 --micro-batch-sizes 1 --out "$tmp/p.json"
expect_one_error_line "--dtype fp8: a100 has no fp8 tensor cores in the device table"
expect_status 2 "$sim" profile --model cnn:layers=2 --device h100 --micro-batch-sizes 1 --out "$tmp/p.json"
expect_one_error_line "model spec 'cnn:layers=2': unknown family or preset 'cnn'"
expect_status 2 "$sim" profile --model "$spec" --device h100 --micro-batch-sizes 1 --out "$tmp/p.json" --mfu 0
expect_one_error_line "analytic option mfu: expected a number in (0, 1], got 0"
expect_status 2 "$sim" profile --model "$spec" --device h100 --micro-batch-sizes 1 --out "$tmp/none/p.json"
expect_one_error_line "none/p.json: cannot write"
expect_status 2 "$sim" profile --model "$spec" --device h100 --out "$tmp/p.json"
expect_one_error_line "--micro-batch-sizes"
expect_status 0 "$sim" profile --help
grep -q -- "--micro-batch-sizes" "$tmp/out" || fail "profile --help lists its flags"
grep -q -- "llama3-8b" "$tmp/out" || fail "profile --help lists the presets"

# Presets: the header gives the counted and the published sizes.
expect_status 0 "$sim" profile --model llama3-8b --device h100 --micro-batch-sizes 1 --out "$tmp/llama.json"
expect_out "8,030,261,248 parameters; forward"
expect_out "preset llama3-8b: published 8,030,261,248 parameters"
expect_status 0 "$sim" profile --model dit-xl-2 --device h100 --micro-batch-sizes 1,2 --out "$tmp/dit.json"
expect_out "675,129,632 parameters; forward 237.2 GFLOP per sample"
expect_out "forward 118.6 G multiply-adds"
expect_status 2 "$sim" profile --model llama3-8b:kv_heads=5 --device h100 --micro-batch-sizes 1 --out "$tmp/p.json"
expect_one_error_line "heads=32 is not divisible by kv_heads=5"
# An analytic profile knows its device's memory: runs are checked against it
# less the reserve, and zb-auto searches within it, without a flag.
grep -q '"device_memory_bytes": 85520809984' "$tmp/llama.json" || fail "the profile keeps the device's memory"
expect_status 0 "$sim" run --profile "$tmp/llama.json" -K 4 -M 16 -N 16 --schedule 1f1b
expect_out "memory      every rank fits in 81.24 GB (NVIDIA H100 80GB HBM3's 85.52 GB less 5 %)"
expect_status 0 "$sim" run --profile "$tmp/llama.json" -K 4 -M 16 -N 16 --schedule zb-auto
expect_out "within 81.24 GB per rank"
expect_status 0 "$sim" run --profile "$tmp/llama.json" -K 2 -M 16 -N 16 --schedule gpipe --memory-limit device
expect_out "memory      OVER the limit of 81.24 GB"

finish "gpipe-sim profile"
