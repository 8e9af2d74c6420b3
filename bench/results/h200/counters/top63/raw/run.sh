#!/usr/bin/env bash
# Out-of-sample counter sweep on the H200 (issue 8, stop 63): each kernel's 16 configurations the
# ranking puts first (`--configs top:16`) at 256^3, as a user deploying the ranking would run them.
# `bash .gx/top63/run.sh COMMIT` (the binary of COMMIT built with `--features cuda`).
set -u
export PATH=/usr/local/cuda/bin:$PATH
if ! ldconfig -p | grep -q 'libnvrtc\.so'; then
  nvrtc=$(find /usr/local/cuda*/ /usr/lib /opt -name 'libnvrtc.so*' 2>/dev/null | head -1)
  [ -n "$nvrtc" ] && export LD_LIBRARY_PATH="$(dirname "$nvrtc")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
B=.gx/ss63
mkdir -p $OUT/top
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/top/env.txt; ncu --version >> $OUT/top/env.txt
cat $OUT/top/env.txt
t0=$SECONDS
run() { # name, timeout, args...
  local n=$1 t=$2; shift 2
  timeout $t $B counters "$@" --domain 256,256,256 --configs top:16 --ncu-section LaunchStats --machine h200 --commit "$C" --out $OUT/top --name $n > $OUT/top/$n.out 2>&1
  echo "$n rc=$? $((SECONDS-t0)) s"; tail -2 $OUT/top/$n.out
}
C=$1
run star3d_r4-f64-top63 130 stencils/star3d_r4.toml --dtype f64
run box3d_r1-f32-top63 110 stencils/box3d_r1.toml --dtype f32
run d3q19_srt_pull-soa-top63 130 lbm/d3q19_srt_pull.toml
run d3q19_srt_pull-aos-top63 130 bench/counters/d3q19_srt_pull_aos.toml
rm -f $OUT/top/*.ncu-rep $OUT/top/*query-metrics.txt $OUT/top/raw/*.ncu-rep $OUT/top/raw/*query-metrics.txt
tar czf $OUT/top63.tgz -C $OUT top && rm -rf $OUT/top; ls -la $OUT
