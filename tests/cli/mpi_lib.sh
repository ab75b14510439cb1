# Shared by the command-line tests that launch gpipe-run under mpirun (sourced
# after lib.sh): the launch line for this machine, our lines of mpirun's
# stderr, and the skip (exit 77) where there is no mpirun or no MPI in gpipe-run.
command -v mpirun >/dev/null || { echo "no mpirun: skipped"; exit 77; }
# Two cores here; root in containers: both need saying to Open MPI.
launch=(mpirun --oversubscribe)
[ "$(id -u)" -eq 0 ] && launch+=(--allow-run-as-root)
# Our lines only: mpirun adds its own banners on failure.
ours() { grep '^gpipe-run' "$tmp/err" >"$tmp/ours"; }
# skip_without_mpi: after a launch, skipped when this gpipe-run was built without MPI.
skip_without_mpi() {
  if grep -q "built without MPI" "$tmp/err"; then echo "gpipe-run has no MPI: skipped"; exit 77; fi
}
