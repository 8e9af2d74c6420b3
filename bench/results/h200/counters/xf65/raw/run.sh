#!/usr/bin/env bash
# D3Q19 SoA (lbm/d3q19_srt_pull.toml, rows aligned to sectors) tiles no wider than a sector
# folded along x, measured again with the twins of 0be80b8 (issue 8, stop 65): the older sweeps
# (xfold-oos, aligned, timed) measured 3.9-7.4 writes per sector at folds where oos59/ and
# oos69/ measured 1.9. Same configuration, new twin code: does the store order separate them?
# `bash .gx/xf65/run.sh COMMIT`.
set -u
export PATH=/usr/local/cuda/bin:$PATH
if ! ldconfig -p | grep -q 'libnvrtc\.so'; then
  nvrtc=$(find /usr/local/cuda*/ /usr/lib /opt -name 'libnvrtc.so*' 2>/dev/null | head -1)
  [ -n "$nvrtc" ] && export LD_LIBRARY_PATH="$(dirname "$nvrtc")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
B=.gx/ss65
C=$1
mkdir -p $OUT/xf
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/xf/env.txt; ncu --version >> $OUT/xf/env.txt
t0=$SECONDS
timeout 200 $B counters lbm/d3q19_srt_pull.toml --domain 256,256,256 --configs .gx/xf65/configs.txt --ncu-section LaunchStats --machine h200 --commit "$C" --out $OUT/xf --name d3q19_srt_pull-soa-xf65 > $OUT/xf/d3q19_srt_pull-soa-xf65.out 2>&1
echo "rc=$? $((SECONDS-t0)) s"; tail -3 $OUT/xf/d3q19_srt_pull-soa-xf65.out
rm -f $OUT/xf/*.ncu-rep $OUT/xf/*query-metrics.txt $OUT/xf/raw/*.ncu-rep $OUT/xf/raw/*query-metrics.txt
tar czf $OUT/xf65.tgz -C $OUT xf && rm -rf $OUT/xf; ls -la $OUT
