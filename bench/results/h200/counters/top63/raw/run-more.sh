#!/usr/bin/env bash
# Out-of-sample counter sweep on the H200 (issue 8, stop 63), the project's other kernels: each
# kernel's 16 configurations the ranking puts first (`--configs top:16`), at its file's dtype.
# `bash .gx/top63b/run.sh COMMIT` (the binary of COMMIT built with `--features cuda`).
set -u
export PATH=/usr/local/cuda/bin:$PATH
if ! ldconfig -p | grep -q 'libnvrtc\.so'; then
  nvrtc=$(find /usr/local/cuda*/ /usr/lib /opt -name 'libnvrtc.so*' 2>/dev/null | head -1)
  [ -n "$nvrtc" ] && export LD_LIBRARY_PATH="$(dirname "$nvrtc")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
B=.gx/ss63
C=$1
mkdir -p $OUT/top
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/top/env.txt; ncu --version >> $OUT/top/env.txt
t0=$SECONDS
run() { # name, timeout, domain, args...
  local n=$1 t=$2 dom=$3; shift 3
  timeout $t $B counters "$@" --domain $dom --configs top:16 --ncu-section LaunchStats --machine h200 --commit "$C" --out $OUT/top --name $n > $OUT/top/$n.out 2>&1
  echo "$n rc=$? $((SECONDS-t0)) s"; tail -2 $OUT/top/$n.out
}
run star3d_r1-f64-top63 100 256,256,256 stencils/star3d_r1.toml
run varcoeff3d_r1-f64-top63 100 256,256,256 stencils/varcoeff3d_r1.toml
run star2d_r1-f64-top63 100 4096,4096 stencils/star2d_r1.toml
run d3q19_srt_aa-top63 120 256,256,256 lbm/d3q19_srt_aa.toml
run d3q19_trt_pull-top63 120 256,256,256 lbm/d3q19_trt_pull.toml
run d3q27_trt_pull-top63 140 256,256,256 lbm/d3q27_trt_pull.toml
run d3q19_srt_push_aos-top63 120 256,256,256 lbm/d3q19_srt_push_aos.toml
run d2q9_srt_pull-top63 100 4096,4096 lbm/d2q9_srt_pull.toml
rm -f $OUT/top/*.ncu-rep $OUT/top/*query-metrics.txt $OUT/top/raw/*.ncu-rep $OUT/top/raw/*query-metrics.txt
tar czf $OUT/top63b.tgz -C $OUT top && rm -rf $OUT/top; ls -la $OUT
