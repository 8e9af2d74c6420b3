#!/usr/bin/env bash
# Out-of-sample counter sweeps on the H200 (issue 8, stop 60): D3Q19 SoA tiles whose sectors
# x-neighbouring blocks write at one step. .gx/ss60c: cargo build --release --features cuda.
set -u
export PATH=/usr/local/cuda/bin:$PATH
if ! ldconfig -p | grep -q 'libnvrtc\.so'; then
  nvrtc=$(find /usr/local/cuda*/ /usr/lib /opt -name 'libnvrtc.so*' 2>/dev/null | head -1)
  [ -n "$nvrtc" ] && export LD_LIBRARY_PATH="$(dirname "$nvrtc")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
B=.gx/ss60c
R=bench/results/h200/counters/oos60/raw
mkdir -p $OUT/oos
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/oos/env.txt; ncu --version >> $OUT/oos/env.txt
cat $OUT/oos/env.txt
t0=$SECONDS
timeout 270 $B counters lbm/d3q19_srt_pull.toml --domain 256,256,256 --configs $R/narrow-configs.txt --ncu-section LaunchStats --machine h200 --commit "$1" --out $OUT/oos --name d3q19_srt_pull-soa-oos60-narrow > $OUT/oos/narrow.out 2>&1
echo "narrow rc=$? $((SECONDS-t0)) s"; tail -22 $OUT/oos/narrow.out
timeout 200 $B counters bench/counters/d3q19_srt_pull_soa.toml --domain 256,256,256 --configs $R/misaligned-configs.txt --ncu-section LaunchStats --machine h200 --commit "$1" --out $OUT/oos --name d3q19_srt_pull-soa-oos60-misaligned > $OUT/oos/misaligned.out 2>&1
echo "misaligned rc=$? $((SECONDS-t0)) s"; tail -15 $OUT/oos/misaligned.out
tar czf $OUT/oos60.tgz -C $OUT oos && rm -rf $OUT/oos; ls -la $OUT
