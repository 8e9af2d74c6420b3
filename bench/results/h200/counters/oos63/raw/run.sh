#!/usr/bin/env bash
# Out-of-sample counter sweep on the H200 (issue 8, stop 63): seeded samples (seed 63, 16 each) of
# LBM kernels whose rows are not aligned to sectors (one ghost layer), never profiled before:
# for the early write-backs of row ends x-neighbouring blocks share.
# `bash .gx/oos63/run.sh COMMIT` (the binary of COMMIT built with `--features cuda`).
set -u
export PATH=/usr/local/cuda/bin:$PATH
if ! ldconfig -p | grep -q 'libnvrtc\.so'; then
  nvrtc=$(find /usr/local/cuda*/ /usr/lib /opt -name 'libnvrtc.so*' 2>/dev/null | head -1)
  [ -n "$nvrtc" ] && export LD_LIBRARY_PATH="$(dirname "$nvrtc")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
B=.gx/ss63
C=$1
mkdir -p $OUT/oos
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/oos/env.txt; ncu --version >> $OUT/oos/env.txt
t0=$SECONDS
run() { # name, timeout, domain, args...
  local n=$1 t=$2 dom=$3; shift 3
  timeout $t $B counters "$@" --domain $dom --configs sample:16 --seed 63 --ncu-section LaunchStats --machine h200 --commit "$C" --out $OUT/oos --name $n > $OUT/oos/$n.out 2>&1
  echo "$n rc=$? $((SECONDS-t0)) s"; tail -2 $OUT/oos/$n.out
}
run d3q19_trt_pull-oos63 130 256,256,256 lbm/d3q19_trt_pull.toml
run d3q27_trt_pull-oos63 150 256,256,256 lbm/d3q27_trt_pull.toml
run d2q9_srt_pull-oos63 110 4096,4096 lbm/d2q9_srt_pull.toml
run d3q19_srt_aa-oos63 130 256,256,256 lbm/d3q19_srt_aa.toml
run d3q15_trt_aa_force-oos63 130 256,256,256 lbm/d3q15_trt_aa_force.toml
rm -f $OUT/oos/*.ncu-rep $OUT/oos/*query-metrics.txt $OUT/oos/raw/*.ncu-rep $OUT/oos/raw/*query-metrics.txt
tar czf $OUT/oos63.tgz -C $OUT oos && rm -rf $OUT/oos; ls -la $OUT
