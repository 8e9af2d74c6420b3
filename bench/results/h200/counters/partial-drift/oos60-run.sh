#!/usr/bin/env bash
set -u
export PATH=/usr/local/cuda/bin:$PATH
if ! ldconfig -p | grep -q 'libnvrtc\.so'; then
  nvrtc=$(find /usr/local/cuda*/ /usr/lib /opt -name 'libnvrtc.so*' 2>/dev/null | head -1)
  [ -n "$nvrtc" ] && export LD_LIBRARY_PATH="$(dirname "$nvrtc")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
export SS_COMMIT=e11a2b0
t0=$SECONDS
timeout 420 python3 bench/partial-drift.py measure .gx/ss60c $OUT/oos60-narrow.json lbm/d3q19_srt_pull.toml f32 256,256,256 \
  4,64,1/1,1,4 4,32,4/1,1,1 1,16,16/1,1,1 1,32,8/1,1,2 2>&1 | tail -8
echo "rc=$? $((SECONDS-t0)) s"
timeout 150 python3 bench/partial-drift.py measure .gx/ss60c $OUT/oos60-misaligned.json bench/counters/d3q19_srt_pull_soa.toml f32 256,256,256 \
  16,4,4/1,1,1 2>&1 | tail -5
echo "rc=$? $((SECONDS-t0)) s"
for f in narrow misaligned; do python3 bench/partial-drift.py summary $OUT/oos60-$f.json > $OUT/oos60-$f.md 2>&1; cat $OUT/oos60-$f.md; done
