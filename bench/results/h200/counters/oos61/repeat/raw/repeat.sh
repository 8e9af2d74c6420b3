#!/usr/bin/env bash
# Out-of-sample counter sweep on the H200 (issue 8, stop 61): D3Q19 AoS tiles one or two records
# wide, unfolded along x, and their twins' SASS for the stores' places (bench/twin-sass.py).
set -u
export PATH=/usr/local/cuda/bin:$PATH
if ! ldconfig -p | grep -q 'libnvrtc\.so'; then
  nvrtc=$(find /usr/local/cuda*/ /usr/lib /opt -name 'libnvrtc.so*' 2>/dev/null | head -1)
  [ -n "$nvrtc" ] && export LD_LIBRARY_PATH="$(dirname "$nvrtc")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
B=.gx/ss61
mkdir -p $OUT/oos
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/oos/env.txt; ncu --version >> $OUT/oos/env.txt
cat $OUT/oos/env.txt
t0=$SECONDS
timeout 330 $B counters bench/counters/d3q19_srt_pull_aos.toml --domain 256,256,256 --configs .gx/oos61/aos-narrow-configs.txt --ncu-section LaunchStats --machine h200 --commit "$1" --out $OUT/oos --name d3q19_srt_pull-aos-oos61-narrow > $OUT/oos/aos.out 2>&1
echo "aos rc=$? $((SECONDS-t0)) s"; tail -22 $OUT/oos/aos.out



rm -f $OUT/oos/*.ncu-rep $OUT/oos/*query-metrics.txt
tar czf $OUT/oos61r.tgz -C $OUT oos && rm -rf $OUT/oos; ls -la $OUT
