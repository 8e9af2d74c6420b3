#!/bin/bash
# The visitor's own simulator, star3d_r4 f64 at 256x128x64, for one line of configs.txt
# (sweep, machine, block, fold, blocks per SM, measured and estimated L2 load at 256^3):
# L2 load in lockstep, interleaved by 4, 8, 16 and 32 warps, and in warp bursts (issue 8, stop 61).
# usage (from the repository root, after cargo build --release):
#   grep -v '^#' bench/results/h200/counters/l1-interleave/sim-fit/configs.txt \
#     | xargs -P 2 -I{} bench/results/h200/counters/l1-interleave/sim-fit/run-one.sh "{}"
read sweep mach b f bps meas est <<< "$1"
M=machines/h200.toml
if [ "$mach" = h200c100 ]; then
  # the L1 a launch gets at carve-out 100 %: 28 KiB
  M=$(mktemp --suffix .toml); sed "s/^l1_bytes = .*/l1_bytes = 28672/" machines/h200.toml > "$M"
fi
res=""
for o in lockstep "interleave --interleave 4" "interleave --interleave 8" \
    "interleave --interleave 16" "interleave --interleave 32" warp-burst; do
  v=$(timeout 120 target/release/stencilscope volumes stencils/star3d_r4.toml --dtype f64 \
    --machine "$M" --domain 256,128,64 --block "$b" --fold "$f" --blocks-per-sm "$bps" \
    --simulate --issue-order $o 2>&1 | grep -E 'L2 load' | awk '{print $7}')
  res="$res ${v:-NA}"
done
echo "$sweep $b $f $bps meas $meas est $est |$res"
