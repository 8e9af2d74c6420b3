#!/usr/bin/env bash
# The ranking's top 16 of D3Q19 SRT push AoS after stop 64's push rule (issue 8): `counters
# --configs top:16` with the binary of 5cfe1bc, H200. The rule changed which configurations the
# ranking puts first (1x512x1 and 512x1x1 where 64x1x1 and 32x2x1 were).
# `bash .gx/top64/run.sh COMMIT`.
set -u
export PATH=/usr/local/cuda/bin:$PATH
if ! ldconfig -p | grep -q 'libnvrtc\.so'; then
  nvrtc=$(find /usr/local/cuda*/ /usr/lib /opt -name 'libnvrtc.so*' 2>/dev/null | head -1)
  [ -n "$nvrtc" ] && export LD_LIBRARY_PATH="$(dirname "$nvrtc")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
B=.gx/ss64b
C=$1
mkdir -p $OUT/top
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/top/env.txt; ncu --version >> $OUT/top/env.txt
t0=$SECONDS
timeout 200 $B counters lbm/d3q19_srt_push_aos.toml --domain 256,256,256 --configs top:16 --ncu-section LaunchStats --machine h200 --commit "$C" --out $OUT/top --name d3q19_srt_push_aos-top64 > $OUT/top/d3q19_srt_push_aos-top64.out 2>&1
echo "rc=$? $((SECONDS-t0)) s"; tail -12 $OUT/top/d3q19_srt_push_aos-top64.out
rm -f $OUT/top/*.ncu-rep $OUT/top/*query-metrics.txt $OUT/top/raw/*.ncu-rep $OUT/top/raw/*query-metrics.txt
tar czf $OUT/top64.tgz -C $OUT top && rm -rf $OUT/top; ls -la $OUT
