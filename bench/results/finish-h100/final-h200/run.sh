#!/usr/bin/env bash
# The workers' own finish, third build (the gate left before the reset, the record copied only when claimed; the temporary probe
# of a planned call's host time in plan_bench under TASKWEAVE_PROBE=1): plan_bench with and
# without the probe, heat_steps with the finish on and off, faults, selfcheck, the sanitizers over
# planned loops; part b adds the gpu-evidence script.
set -u
cd "$(dirname "$0")"
part=${1:-a}
[ -d s/bin ] || { mkdir -p s; tar xJf fin3.tar.xz -C s; }
san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
rec() { local f=$1 t=$2; shift 2; timeout "$t" "$@" > "$OUT/$f" 2>&1; echo "exit $?" >> "$OUT/$f"; }
if [ "$part" = a ] || [ "$part" = ab ]; then
  TASKWEAVE_PROBE=1 rec plan-bench-probe.txt 150 s/run.sh plan_bench --tasks 1000,10000,100000 --reps 100
  rec plan-bench.txt 150 s/run.sh plan_bench --tasks 1000,10000,100000 --reps 100
  rec heat-steps.txt 60 s/run.sh heat_steps --n 2880 --steps 100
  TASKWEAVE_RESET_ON_DEVICE=0 rec heat-steps-host-reset.txt 60 s/run.sh heat_steps --n 2880 --steps 100
  mkdir -p $OUT/x
  for tool in memcheck racecheck synccheck; do
    { echo "# command: $san --tool $tool --error-exitcode 3 heat_steps --n 256 --steps 4"; timeout 120 $san --tool $tool --error-exitcode 3 s/bin/heat_steps --n 256 --steps 4; echo "exit $?";
      echo "# command: $san --tool $tool --error-exitcode 3 plan_bench --tasks 1000,10000 --reps 2"; timeout 120 $san --tool $tool --error-exitcode 3 s/bin/plan_bench --tasks 1000,10000 --reps 2; echo "exit $?"; } > $OUT/x/san-$tool.txt 2>&1
  done
  tar czf $OUT/sanitizers.tgz -C $OUT/x . && rm -rf $OUT/x
fi
if [ "$part" = b ] || [ "$part" = ab ]; then
  (cd ../.. && scripts/gpu-evidence.sh .gpu/fin3/s /tmp/ev > /tmp/ev.log 2>&1; echo "exit $?" >> /tmp/ev.log)
  cp /tmp/ev.log /tmp/ev/run.log
  tar czf $OUT/evidence.tgz -C /tmp/ev .
fi
if [ "$part" = c ]; then
  rec bench.txt 280 s/run.sh bench --reps 5 --policies grr,static --out /tmp/bench
  cp /tmp/bench/table.md $OUT/bench-table.md 2>/dev/null
fi
