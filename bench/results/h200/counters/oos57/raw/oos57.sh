#!/usr/bin/env bash
# Out-of-sample counter sweeps on the H200 for the launch-time L2 model (issue 8): the H100's
# oos56 samples (same seeds), and a D3Q19 SoA sample no sweep had.
# Ran on the device machine (2026-11-28) from the repository root with OUT set, .gx/ss57 the binary of
# 7c697c5 built with `cargo build --release --features cuda`.
set -u
export PATH=/usr/local/cuda/bin:$PATH
if ! ldconfig -p | grep -q 'libnvrtc\.so'; then
  nvrtc=$(find /usr/local/cuda*/ /usr/lib /opt -name 'libnvrtc.so*' 2>/dev/null | head -1)
  [ -n "$nvrtc" ] && export LD_LIBRARY_PATH="$(dirname "$nvrtc")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
B=.gx/ss57
mkdir -p $OUT/oos
run() { name=$1; limit=$2; shift 2
  t0=$SECONDS
  timeout $limit $B counters "$@" --ncu-section LaunchStats --machine ${MACHINE:-h200} --commit 7c697c5 --out $OUT/oos --name $name > $OUT/oos/$name.out 2>&1
  echo "$name rc=$? $((SECONDS-t0)) s"; tail -3 $OUT/oos/$name.out
}
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/oos/env.txt; ncu --version >> $OUT/oos/env.txt
cat $OUT/oos/env.txt
run star3d_r4-f64-512-oos56 170 stencils/star3d_r4.toml --dtype f64 --domain 512,512,512 --configs sample:20 --seed 56
run star3d_r4-f64-512x768-oos56 120 stencils/star3d_r4.toml --dtype f64 --domain 512,768,512 --configs sample:12 --seed 57
run d3q19_srt_pull-aos-oos56 120 bench/counters/d3q19_srt_pull_aos.toml --domain 256,256,256 --configs sample:16 --seed 56
# (A first call gave this sweep 120 s, too few: it ran again alone, with 450.)
run d3q19_srt_pull-soa-oos57 450 lbm/d3q19_srt_pull.toml --domain 256,256,256 --configs sample:16 --seed 57
tar czf $OUT/oos57.tgz -C $OUT oos && rm -rf $OUT/oos; ls -la $OUT
