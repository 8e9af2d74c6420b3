#!/usr/bin/env bash
# Where the warps of a few counter-sweep configurations wait, and how their loads are placed in the
# compiled code (issue 8: is the issue order inside an SM the warp's or the load queue's?). Needs
# an NVIDIA GPU, nvcc, cuobjdump and ncu; summarise with bench/warp-stalls.py OUTDIR.
#
# usage: bench/warp-stalls.sh BIN OUTDIR [CONFIGS]   (BIN built with --features cuda)
#   CONFIGS  a file of lines `name file block fold [extra arguments]` (file relative to the
#            repository root, e.g. bench/warp-stalls-narrow.txt); default: the six below
set -eu
BIN=$(realpath "$1"); OUT=$2; LIST=${3:-}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mkdir -p "$OUT"; OUT=$(realpath "$OUT")
AOS=$HERE/bench/counters/d3q19_srt_pull_aos.toml
STAR=$HERE/stencils/star3d_r4.toml
# name, file, block, fold, extra arguments (as in the counter sweeps: their domains and dtypes)
CONFIGS=(
  "aos_32x4x4 $AOS 32,4,4 1,1,1"
  "aos_64x2x1 $AOS 64,2,1 1,1,1"
  "aos_128x1x1 $AOS 128,1,1 1,1,1"
  "aos_2x64x2_f2 $AOS 2,64,2 2,1,1"
  "star_4x4x8_f442 $STAR 4,4,8 4,4,2 --dtype f64"
  "star_2x4x4_f441 $STAR 2,4,4 4,4,1 --dtype f64"
)
if [ -n "$LIST" ]; then
  CONFIGS=()
  while read -r name file rest; do
    case "$name" in ''|'#'*) continue ;; esac
    CONFIGS+=("$name $HERE/$file $rest")
  done < "$LIST"
fi
nvcc --version | tail -2 > "$OUT/nvcc.txt"
for c in "${CONFIGS[@]}"; do
  set -- $c; name=$1 file=$2 block=$3 fold=$4; shift 4
  "$BIN" emit "$file" --target cuda --block "$block" --fold "$fold" "$@" > "$OUT/$name.cu"
  # The float options the CUDA runtime passes to NVRTC (runtime::cuda::NVRTC_FLOAT_OPTIONS).
  nvcc -arch=sm_90 -cubin --ftz=true --prec-div=false --prec-sqrt=false -o "$OUT/$name.cubin" "$OUT/$name.cu"
  cuobjdump -sass "$OUT/$name.cubin" > "$OUT/$name.sass"
  ncu --clock-control none -c 1 --section WarpStateStats --section SchedulerStats --section LaunchStats \
    --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio' --csv --page details "$BIN" run "$file" --backend cuda --block "$block" --fold "$fold" "$@" \
    > "$OUT/ncu_$name.csv"
done
