#!/usr/bin/env bash
# GPU smoke benchmark (issue 3): star3d_r4 f32 and f64 and star3d_r1 f64 on a 512^3 domain
# through OpenCL, wgpu and CUDA, three launch configurations each; the copy kernel per backend
# and dtype (the device's copy bandwidth through the same emitters and backends); and the same
# wgpu runs with wgpu's runtime bounds checks switched on, for the checked/unchecked comparison.
#
# usage: bench/gpu-smoke.sh [BIN] [OUTDIR]      (BIN built with `cargo build --release --features cuda`)
# then:  python3 bench/summarize-smoke.py OUTDIR bench/results/<gpu> --commit SHA --command "..."
#
# Every run verifies its output against the CPU reference; a failure is printed and the rest go on.
set -u
BIN=${1:-target/release/stencilscope}
OUT=${2:-bench-smoke}
DOMAIN=${DOMAIN:-512,512,512}
REPS=${REPS:-20}
BACKENDS=${BACKENDS:-opencl wgpu cuda}
# Rounds of the wgpu bounds-check study: unchecked and checked modules, alternating.
CHECK_ROUNDS=${CHECK_ROUNDS:-2}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STENCILS=${STENCILS:-$HERE/stencils}
mkdir -p "$OUT"

# NVRTC ships with the CUDA toolkit, often outside the loader's path.
if ! ldconfig -p | grep -q 'libnvrtc\.so'; then
  nvrtc=$(find /usr/local/cuda*/ /usr/lib /opt -name 'libnvrtc.so*' 2>/dev/null | head -1)
  [ -n "$nvrtc" ] && export LD_LIBRARY_PATH="$(dirname "$nvrtc")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
# The Vulkan ICD of the NVIDIA driver, where the container keeps it.
if [ -z "${VK_DRIVER_FILES:-}" ] && [ -e /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]; then
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
fi
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv > "$OUT/nvidia-smi.csv" 2>&1
"$BIN" devices --json > "$OUT/devices.json"
"$BIN" devices

CONFIGS=(--block 128,1,1 --fold 1,1,1 --block 32,4,2 --fold 1,1,2 --block 64,4,1 --fold 1,1,4)
COPY=(--block 256,1,1 --fold 1,1,1 --block 128,2,1 --fold 1,1,2 --block 1024,1,1 --fold 1,1,1)

run() { # name: the JSON file's stem; the rest: arguments of `stencilscope run`
  local name=$1; shift
  echo "== $name"
  "$BIN" run "$@" --domain "$DOMAIN" --reps "$REPS" --json "$OUT/$name.json" || echo "FAILED: $name"
}

for backend in $BACKENDS; do
  for k in "star3d_r4 f32" "star3d_r4 f64" "star3d_r1 f64"; do
    read -r stencil dtype <<< "$k"
    run "$stencil-$dtype-$backend" "$STENCILS/$stencil.toml" --backend $backend --dtype $dtype "${CONFIGS[@]}"
  done
  for dtype in f32 f64; do
    run "copy-$dtype-$backend" --copy --backend $backend --dtype $dtype "${COPY[@]}"
  done
done
# wgpu with and without its runtime bounds checks, alternating, so that drift shows up.
for round in $(seq 1 "$CHECK_ROUNDS"); do
  for checks in off on; do
    flag=(); [ $checks = on ] && flag=(--wgpu-bounds-checks)
    run "checks-copy-f32-wgpu-$checks-$round" --copy --backend wgpu --dtype f32 "${flag[@]}" "${COPY[@]}"
    run "checks-star3d_r4-f32-wgpu-$checks-$round" "$STENCILS/star3d_r4.toml" --backend wgpu --dtype f32 "${flag[@]}" "${CONFIGS[@]}"
  done
done
echo "done"
