#!/usr/bin/env bash
# The matplotlib plot scripts (plots/) on the hand-made inputs of tests/plots/data:
# loaders, PNGs written, one-line errors with exit 2. Usage: plots_test.sh [GPIPE_SIM]
# (CTest passes the gpipe-sim path to every cli test; the plots do not need it.)
set -u
cd "$(dirname "$0")/../.." || exit 1
python=/usr/bin/python3

# The plots use the Debian Python's matplotlib; a machine without it skips, not fails.
if ! "$python" -c 'import matplotlib, numpy' 2>/dev/null; then
  echo "SKIPPED: matplotlib missing"
  exit 0
fi

# Matplotlib writes its font cache under $MPLCONFIGDIR; keep it out of $HOME and the tree.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export MPLCONFIGDIR="$tmp"

if "$python" -m unittest discover -s tests/plots -p 'test_*.py' 2>"$tmp/log"; then
  tail -n 3 "$tmp/log"
  echo "plots: all tests passed"
else
  cat "$tmp/log"
  echo "plots: FAILED"
  exit 1
fi
