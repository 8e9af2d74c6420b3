#!/usr/bin/env bash
# Out-of-sample counter sweeps on the H200 (issue 8, stop 60): star3d_r4 f64 tiles whose sectors
# x-neighbouring blocks write at one step, at the driver's carve-out and at 100 %.
set -u
export PATH=/usr/local/cuda/bin:$PATH
if ! ldconfig -p | grep -q 'libnvrtc\.so'; then
  nvrtc=$(find /usr/local/cuda*/ /usr/lib /opt -name 'libnvrtc.so*' 2>/dev/null | head -1)
  [ -n "$nvrtc" ] && export LD_LIBRARY_PATH="$(dirname "$nvrtc")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
B=.gx/ss60c
R=bench/results/h200/counters/oos60/raw
mkdir -p $OUT/oos
t0=$SECONDS
timeout 250 $B counters stencils/star3d_r4.toml --dtype f64 --domain 256,256,256 --configs $R/star-narrow-configs.txt --ncu-section LaunchStats --machine h200 --commit "$1" --out $OUT/oos --name star3d_r4-f64-oos60-narrow > $OUT/oos/star3d_r4-f64-oos60-narrow-run.log 2>&1
echo "narrow rc=$? $((SECONDS-t0)) s"; tail -12 $OUT/oos/star3d_r4-f64-oos60-narrow-run.log
[ "${2:-}" = narrow ] || timeout 200 $B counters stencils/star3d_r4.toml --dtype f64 --domain 256,256,256 --configs $R/star-narrow-c100-configs.txt --carveout 100 --ncu-section LaunchStats --machine h200 --commit "$1" --out $OUT/oos --name star3d_r4-f64-oos60-narrow-c100 > $OUT/oos/star3d_r4-f64-oos60-narrow-c100-run.log 2>&1
echo "c100 rc=$? $((SECONDS-t0)) s"; tail -12 $OUT/oos/star3d_r4-f64-oos60-narrow-c100-run.log
rm -f $OUT/oos/raw/*.ncu-rep $OUT/oos/raw/*query-metrics.txt
tar czf $OUT/oos60b.tgz -C $OUT oos && rm -rf $OUT/oos; ls -la $OUT
