#!/usr/bin/env bash
# Out-of-sample counter sweep on the H200 (issue 8, stop 62): launches of one 1024-thread block
# per SM (D3Q19 AoS, star3d_r4 f64, D3Q19 SoA), seed 62, none in an earlier sweep.
# Ran twice on one lease (`bash .gx/oos62/run.sh 60cb7b6`, the binary of 60cb7b6 built with
# `--features cuda`): star3d_r4 in the first call; the AoS and SoA configuration files of that call
# had blocks 128 deep, beyond CUDA's 64, and were drawn again (seeds 62 and 162, z at most 64)
# for the second, which ran those two only.
set -u
export PATH=/usr/local/cuda/bin:$PATH
if ! ldconfig -p | grep -q 'libnvrtc\.so'; then
  nvrtc=$(find /usr/local/cuda*/ /usr/lib /opt -name 'libnvrtc.so*' 2>/dev/null | head -1)
  [ -n "$nvrtc" ] && export LD_LIBRARY_PATH="$(dirname "$nvrtc")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
B=.gx/ss61
C=.gx/oos62
mkdir -p $OUT/oos
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/oos/env.txt; ncu --version >> $OUT/oos/env.txt
cat $OUT/oos/env.txt
t0=$SECONDS
timeout 200 $B counters bench/counters/d3q19_srt_pull_aos.toml --domain 256,256,256 --configs $C/aos-configs.txt --ncu-section LaunchStats --machine h200 --commit "$1" --out $OUT/oos --name d3q19_srt_pull-aos-oos62-one > $OUT/oos/aos.out 2>&1
echo "aos rc=$? $((SECONDS-t0)) s"; tail -3 $OUT/oos/aos.out
timeout 200 $B counters stencils/star3d_r4.toml --dtype f64 --domain 256,256,256 --configs $C/star-configs.txt --ncu-section LaunchStats --machine h200 --commit "$1" --out $OUT/oos --name star3d_r4-f64-oos62-one > $OUT/oos/star.out 2>&1
echo "star rc=$? $((SECONDS-t0)) s"; tail -3 $OUT/oos/star.out
timeout 150 $B counters lbm/d3q19_srt_pull.toml --domain 256,256,256 --configs $C/soa-configs.txt --ncu-section LaunchStats --machine h200 --commit "$1" --out $OUT/oos --name d3q19_srt_pull-soa-oos62-one > $OUT/oos/soa.out 2>&1
echo "soa rc=$? $((SECONDS-t0)) s"; tail -3 $OUT/oos/soa.out
rm -f $OUT/oos/*.ncu-rep $OUT/oos/*query-metrics.txt $OUT/oos/raw/*.ncu-rep $OUT/oos/raw/*query-metrics.txt
tar czf $OUT/oos62.tgz -C $OUT oos && rm -rf $OUT/oos; ls -la $OUT
