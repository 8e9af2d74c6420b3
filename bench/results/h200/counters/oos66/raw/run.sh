#!/usr/bin/env bash
# Out-of-sample counter sweep on the H200 (issue 8, stop 64): seeded samples (seed 66, 16 each) of
# the AA kernels (stores in place), a fourth draw after the in-place rules of stop 64 (no fills,
# no partly written sectors at any tile width), and of D3Q19 SRT SoA with one ghost layer and
# D2Q9 SRT (f64), pull kernels whose narrow x-folded tiles the visitor over-estimates.
# `bash .gx/oos66/run.sh COMMIT` (the binary of COMMIT built with `--features cuda`).
set -u
export PATH=/usr/local/cuda/bin:$PATH
if ! ldconfig -p | grep -q 'libnvrtc\.so'; then
  nvrtc=$(find /usr/local/cuda*/ /usr/lib /opt -name 'libnvrtc.so*' 2>/dev/null | head -1)
  [ -n "$nvrtc" ] && export LD_LIBRARY_PATH="$(dirname "$nvrtc")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
B=.gx/ss64
C=$1
mkdir -p $OUT/oos
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/oos/env.txt; ncu --version >> $OUT/oos/env.txt
t0=$SECONDS
run() { # name, timeout, domain, args...
  local n=$1 t=$2 dom=$3; shift 3
  timeout $t $B counters "$@" --domain $dom --configs sample:16 --seed 66 --ncu-section LaunchStats --machine h200 --commit "$C" --out $OUT/oos --name $n > $OUT/oos/$n.out 2>&1
  echo "$n rc=$? $((SECONDS-t0)) s"; tail -2 $OUT/oos/$n.out
}
run d3q19_srt_aa-oos66 120 256,256,256 lbm/d3q19_srt_aa.toml
run d3q19_srt_aa-even-oos66 120 256,256,256 lbm/d3q19_srt_aa.toml --step even
run d3q15_trt_aa_force-oos66 120 256,256,256 lbm/d3q15_trt_aa_force.toml
run d3q19_srt_pull-soa1-oos66 120 256,256,256 bench/counters/d3q19_srt_pull_soa.toml
run d2q9_srt_pull-oos66 110 4096,4096 lbm/d2q9_srt_pull.toml
rm -f $OUT/oos/*.ncu-rep $OUT/oos/*query-metrics.txt $OUT/oos/raw/*.ncu-rep $OUT/oos/raw/*query-metrics.txt
tar czf $OUT/oos66.tgz -C $OUT oos && rm -rf $OUT/oos; ls -la $OUT
