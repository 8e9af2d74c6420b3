#!/usr/bin/env bash
# D3Q19 SRT push AoS at smaller domains (issue 8, stop 64): whether every sector stored together
# is still written twice where fewer sectors are partly written at a time (the push rule ignores
# the count). `counters --configs top:8` at 128^3 and 64^3, binary of 35d5439, H200.
# `bash .gx/dom64/run.sh COMMIT`.
set -u
export PATH=/usr/local/cuda/bin:$PATH
if ! ldconfig -p | grep -q 'libnvrtc\.so'; then
  nvrtc=$(find /usr/local/cuda*/ /usr/lib /opt -name 'libnvrtc.so*' 2>/dev/null | head -1)
  [ -n "$nvrtc" ] && export LD_LIBRARY_PATH="$(dirname "$nvrtc")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
B=.gx/ss64c
C=$1
mkdir -p $OUT/dom
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/dom/env.txt; ncu --version >> $OUT/dom/env.txt
t0=$SECONDS
run() { # name, timeout, domain, args...
  local n=$1 t=$2 dom=$3; shift 3
  timeout $t $B counters "$@" --domain $dom --configs top:8 --ncu-section LaunchStats --machine h200 --commit "$C" --out $OUT/dom --name $n > $OUT/dom/$n.out 2>&1
  echo "$n rc=$? $((SECONDS-t0)) s"; tail -9 $OUT/dom/$n.out
}
run d3q19_srt_push_aos-128 120 128,128,128 lbm/d3q19_srt_push_aos.toml
run d3q19_srt_push_aos-64 120 64,64,64 lbm/d3q19_srt_push_aos.toml
rm -f $OUT/dom/*.ncu-rep $OUT/dom/*query-metrics.txt $OUT/dom/raw/*.ncu-rep $OUT/dom/raw/*query-metrics.txt
tar czf $OUT/dom64.tgz -C $OUT dom && rm -rf $OUT/dom; ls -la $OUT
