#!/usr/bin/env bash
# GPU ranking sweeps (issue 7): every legal configuration of a documented reduced space (the
# oracle), measured and verified, for star3d_r4 f32 and f64, star3d_r1 f64 and box3d_r1 f32 on
# OpenCL, star3d_r4 f64 on CUDA and star3d_r4 f32 on wgpu; then all summarised together (best
# fixed configuration across the sweeps).
#
# usage: bench/gpu-sweeps.sh [BIN] [OUTDIR]     (BIN from `cargo build --release --features cuda`)
#
# Environment:
#   DOMAIN         domain (default 512,512,512)
#   MACHINE        machine model of the predictions (default h200)
#   SWEEP_SECONDS  wall-clock budget per sweep (default: none). A sweep stopped by it is resumed
#                  by running the script again with the same OUTDIR (the caches are kept there).
#   SWEEPS         which sweeps, as "stencil:dtype:backend" words (default: the six above)
#   SPACE          the space flags of `stencilscope bench` (default: the reduced space below)
#   COMMIT         commit recorded in the summaries
#
# The reduced space: blocks of 128 to 512 threads with x extent at least 32 (a whole warp in x),
# z extent up to 64, thread folding by 1, 2 or 4 in y and z (none in x): 279 configurations at
# 512³, plus the default block (8,8,4). Measuring all ~5000 configurations of the full space
# (x extents below 32, 32- to 1024-thread blocks, folding in x) at about 0.3 s each does not fit
# one GPU session; the model ranks the reduced space like any other.
set -u
BIN=${1:-target/release/stencilscope}
OUT=${2:-bench-sweeps}
DOMAIN=${DOMAIN:-512,512,512}
MACHINE=${MACHINE:-h200}
COMMIT=${COMMIT:-unknown}
SWEEPS=${SWEEPS:-"star3d_r4:f32:opencl star3d_r4:f64:opencl star3d_r1:f64:opencl box3d_r1:f32:opencl star3d_r4:f64:cuda star3d_r4:f32:wgpu"}
SPACE=${SPACE:-"--min-threads 128 --max-threads 512 --min-bx 32 --max-bz 64 --folds 1,2,4 --fold-dims yz"}
STENCILS=${STENCILS:-stencils}
mkdir -p "$OUT"

# NVRTC ships with the CUDA toolkit, often outside the loader's path.
if ! ldconfig -p | grep -q 'libnvrtc\.so'; then
  nvrtc=$(find /usr/local/cuda*/ /usr/lib /opt -name 'libnvrtc.so*' 2>/dev/null | head -1)
  [ -n "$nvrtc" ] && export LD_LIBRARY_PATH="$(dirname "$nvrtc")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
if [ -z "${VK_DRIVER_FILES:-}" ] && [ -e /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]; then
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
fi
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv > "$OUT/nvidia-smi.csv" 2>&1
"$BIN" devices --json > "$OUT/devices.json" 2>&1

budget=()
[ -n "${SWEEP_SECONDS:-}" ] && budget=(--max-seconds "$SWEEP_SECONDS")
for s in $SWEEPS; do
  IFS=: read -r stencil dtype backend <<< "$s"
  name="$stencil-$dtype-$backend"
  echo "== $name"
  # shellcheck disable=SC2086 # SPACE is a list of flags
  "$BIN" bench "$STENCILS/$stencil.toml" --machine "$MACHINE" --backend "$backend" --dtype "$dtype" \
    --domain "$DOMAIN" --all $SPACE --out "$OUT" --name "$name" --commit "$COMMIT" "${budget[@]}" \
    2> "$OUT/$name.log" | grep -v '^wrote' || echo "FAILED: $name (see $OUT/$name.log)"
done
echo "== summary over the sweeps"
"$BIN" bench summarize "$OUT"/*.sweep.json
