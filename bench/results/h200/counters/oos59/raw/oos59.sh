#!/usr/bin/env bash
# Out-of-sample counter sweep on the H200 (issue 8): D3Q19 SoA tiles whose thread completes each output
# sector at two or four fold points, none in an earlier sweep, after partial_sector_limit landed
# (ea906c1). Ran on the device machine (2026-11-28) from the repository root with OUT set, .gx/ss59c
# the binary of 548f84a built with `cargo build --release --features cuda`.
set -u
export PATH=/usr/local/cuda/bin:$PATH
if ! ldconfig -p | grep -q 'libnvrtc\.so'; then
  nvrtc=$(find /usr/local/cuda*/ /usr/lib /opt -name 'libnvrtc.so*' 2>/dev/null | head -1)
  [ -n "$nvrtc" ] && export LD_LIBRARY_PATH="$(dirname "$nvrtc")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
B=.gx/ss59c
mkdir -p $OUT/oos
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/oos/env.txt; ncu --version >> $OUT/oos/env.txt
cat $OUT/oos/env.txt
t0=$SECONDS
timeout 480 $B counters lbm/d3q19_srt_pull.toml --domain 256,256,256 --configs bench/results/h200/counters/oos59/raw/oos59-configs.txt --ncu-section LaunchStats --machine h200 --commit 548f84a --out $OUT/oos --name d3q19_srt_pull-soa-oos59 > $OUT/oos/d3q19_srt_pull-soa-oos59.out 2>&1
echo "rc=$? $((SECONDS-t0)) s"; tail -25 $OUT/oos/d3q19_srt_pull-soa-oos59.out
cp bench/results/h200/counters/oos59/raw/oos59-configs.txt $OUT/oos/
tar czf $OUT/oos59.tgz -C $OUT oos && rm -rf $OUT/oos; ls -la $OUT
