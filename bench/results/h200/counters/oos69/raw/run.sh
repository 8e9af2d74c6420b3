#!/usr/bin/env bash
# Out-of-sample counter sweep on the H200 (issue 8, stop 65): seeded samples (seed 69, 16 each)
# of D3Q19 SRT push AoS, D3Q19 SRT pull AoS, D3Q19 TRT pull (SoA) and star3d_r4 f64, drawn after
# the two L1 store rules (a store allocates its lines in L1: in a first burst's windows at the
# block's rate, in lockstep windows where the stores go out).
# `bash .gx/oos69/run.sh COMMIT` (the binary of COMMIT built with `--features cuda`).
set -u
export PATH=/usr/local/cuda/bin:$PATH
if ! ldconfig -p | grep -q 'libnvrtc\.so'; then
  nvrtc=$(find /usr/local/cuda*/ /usr/lib /opt -name 'libnvrtc.so*' 2>/dev/null | head -1)
  [ -n "$nvrtc" ] && export LD_LIBRARY_PATH="$(dirname "$nvrtc")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
B=.gx/ss65
C=$1
mkdir -p $OUT/oos
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/oos/env.txt; ncu --version >> $OUT/oos/env.txt
t0=$SECONDS
run() { # name, timeout, seed, domain, args...
  local n=$1 t=$2 s=$3 dom=$4; shift 4
  timeout $t $B counters "$@" --domain $dom --configs sample:16 --seed $s --ncu-section LaunchStats --machine h200 --commit "$C" --out $OUT/oos --name $n > $OUT/oos/$n.out 2>&1
  echo "$n rc=$? $((SECONDS-t0)) s"; tail -2 $OUT/oos/$n.out
}
run d3q19_srt_push_aos-oos69 150 69 256,256,256 lbm/d3q19_srt_push_aos.toml
run d3q19_srt_pull-aos-oos69 150 69 256,256,256 bench/counters/d3q19_srt_pull_aos.toml
run d3q19_trt_pull-oos69 150 69 256,256,256 lbm/d3q19_trt_pull.toml
run star3d_r4-f64-oos69 150 69 256,256,256 stencils/star3d_r4.toml --dtype f64
rm -f $OUT/oos/*.ncu-rep $OUT/oos/*query-metrics.txt $OUT/oos/raw/*.ncu-rep $OUT/oos/raw/*query-metrics.txt
tar czf $OUT/oos69.tgz -C $OUT oos && rm -rf $OUT/oos; ls -la $OUT
