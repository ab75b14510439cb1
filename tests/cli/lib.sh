# Shared by the command-line tests (sourced, never run by CTest itself): a
# scratch folder, failure counting, and the checks each test makes.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# expect_status STATUS CMD...: runs CMD, keeps stdout/stderr in $tmp/out, $tmp/err.
expect_status() {
  local want=$1; shift
  "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  [ "$got" -eq "$want" ] || fail "'$*' exited $got, expected $want; stderr: $(cat "$tmp/err")"
}
# expect_one_error_line [--] TEXT: stderr is one line, and it contains TEXT (literally).
expect_one_error_line() {
  [ "$1" = "--" ] && shift
  local n; n=$(wc -l <"$tmp/err")
  [ "$n" -eq 1 ] || fail "expected one error line, got $n: $(cat "$tmp/err")"
  grep -qF -- "$1" "$tmp/err" || fail "error line lacks '$1': $(cat "$tmp/err")"
}
# expect_out PATTERN: a line of stdout matches PATTERN (a basic regular expression).
expect_out() { grep -q -- "$1" "$tmp/out" || fail "stdout lacks '$1': $(cat "$tmp/out")"; }

# finish NAME: the closing line and the exit status.
finish() {
  [ "$failures" -eq 0 ] && echo "$1: all checks passed"
  exit $((failures > 0))
}

# expect_cuda CMD...: a --backend cuda command either runs (exit 0, on a
# machine with a GPU) or ends with exit 1 and one error line naming CUDA ("no
# CUDA device: ...", or no CUDA backend in a build without the toolkit).
expect_cuda() {
  "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  if [ "$got" -eq 0 ]; then
    return
  fi
  [ "$got" -eq 1 ] || fail "'$*' exited $got, expected 0 (a GPU) or 1 (none); stderr: $(cat "$tmp/err")"
  expect_one_error_line "CUDA"
}
