#!/usr/bin/env bash
# Run-to-run repeat of the H200's oos60/ sweeps (issue 8, stop 61): the same configurations and
# kernels, profiled again, for how much the counters move between runs.
set -u
export PATH=/usr/local/cuda/bin:$PATH
if ! ldconfig -p | grep -q 'libnvrtc\.so'; then
  nvrtc=$(find /usr/local/cuda*/ /usr/lib /opt -name 'libnvrtc.so*' 2>/dev/null | head -1)
  [ -n "$nvrtc" ] && export LD_LIBRARY_PATH="$(dirname "$nvrtc")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
B=.gx/ss61
R=bench/results/h200/counters/oos60/raw
mkdir -p $OUT/oos
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $OUT/oos/env.txt; ncu --version >> $OUT/oos/env.txt
cat $OUT/oos/env.txt
t0=$SECONDS
timeout 200 $B counters lbm/d3q19_srt_pull.toml --domain 256,256,256 --configs $R/narrow-configs.txt --ncu-section LaunchStats --machine h200 --commit "$1" --out $OUT/oos --name d3q19_srt_pull-soa-oos60-narrow > $OUT/oos/d3q19_srt_pull-soa-oos60-narrow-run.log 2>&1
echo "narrow rc=$? $((SECONDS-t0)) s"
timeout 150 $B counters bench/counters/d3q19_srt_pull_soa.toml --domain 256,256,256 --configs $R/misaligned-configs.txt --ncu-section LaunchStats --machine h200 --commit "$1" --out $OUT/oos --name d3q19_srt_pull-soa-oos60-misaligned > $OUT/oos/d3q19_srt_pull-soa-oos60-misaligned-run.log 2>&1
echo "misaligned rc=$? $((SECONDS-t0)) s"
timeout 150 $B counters stencils/star3d_r4.toml --dtype f64 --domain 256,256,256 --configs $R/star-narrow-configs.txt --ncu-section LaunchStats --machine h200 --commit "$1" --out $OUT/oos --name star3d_r4-f64-oos60-narrow > $OUT/oos/star3d_r4-f64-oos60-narrow-run.log 2>&1
echo "star rc=$? $((SECONDS-t0)) s"
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $OUT/oos/env.txt
rm -f $OUT/oos/*.ncu-rep $OUT/oos/*query-metrics.txt $OUT/oos/raw/*.ncu-rep $OUT/oos/raw/*query-metrics.txt
tar czf $OUT/rep60.tgz -C $OUT oos && rm -rf $OUT/oos; ls -la $OUT
