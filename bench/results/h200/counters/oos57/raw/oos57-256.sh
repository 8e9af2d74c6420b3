#!/usr/bin/env bash
# Out-of-sample counter sweeps on the H200 at 256^3 (issue 8): star3d_r4 f64, box3d_r1 f32 and
# D3Q19 AoS samples no sweep had (seed 57), D3Q19 SoA (seed 58; seed 57's tiles are in
# oos57.sh), with the estimator of 8c93109 (the re-fetches that follow a neighbour). Ran on the device machine (2026-11-28) from the repository root with OUT set,
# .gx/ss57 the binary of 0512ce4 built with `cargo build --release --features cuda`.
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
  timeout $limit $B counters "$@" --ncu-section LaunchStats --machine ${MACHINE:-h200} --commit 0512ce4 --out $OUT/oos --name $name > $OUT/oos/$name.out 2>&1
  echo "$name rc=$? $((SECONDS-t0)) s"; tail -3 $OUT/oos/$name.out
}
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/oos/env.txt; ncu --version >> $OUT/oos/env.txt
cat $OUT/oos/env.txt
run star3d_r4-f64-oos57 280 stencils/star3d_r4.toml --dtype f64 --domain 256,256,256 --configs sample:24 --seed 57
run box3d_r1-f32-oos57 200 stencils/box3d_r1.toml --dtype f32 --domain 256,256,256 --configs sample:16 --seed 57
# (A second call ran the two D3Q19 sweeps.)
run d3q19_srt_pull-aos-oos57 200 bench/counters/d3q19_srt_pull_aos.toml --domain 256,256,256 --configs sample:16 --seed 57
run d3q19_srt_pull-soa-oos58 300 lbm/d3q19_srt_pull.toml --domain 256,256,256 --configs sample:16 --seed 58
tar czf $OUT/oos57b.tgz -C $OUT oos && rm -rf $OUT/oos; ls -la $OUT
