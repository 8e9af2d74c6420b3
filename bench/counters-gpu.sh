#!/usr/bin/env bash
# Hardware-counter validation sweep (issue 8): the CUDA twin of each configuration under Nsight
# Compute, for star3d_r4 f64, box3d_r1 f32 and D3Q19 SRT pull f32 in SoA and AoS layout.
#
# usage: bench/counters-gpu.sh BIN OUTDIR [CONFIGDIR]
#   BIN        built with `cargo build --release --features cuda`
#   OUTDIR     gets NAME.json, NAME.html and raw/ per kernel, env.txt, run.log
#   CONFIGDIR  optional files NAME-top.txt (the model's top configurations, from
#              `stencilscope rank --json`) and NAME-extra.txt (others), added to each sweep's
#              seeded sample
# env: MACHINE (default: from the GPU's name), DOMAIN (default 256,256,256),
#      STENCILSCOPE_COMMIT (recorded in the reports), SEED (of the samples, default 1: another
#      seed draws configurations the model was not checked on), SAMPLE_* (sample sizes), LIMIT_* (seconds
#      per sweep), AOS_FILE (the D3Q19 AoS definition, default bench/counters/...), SECTIONS
#      (ncu sections, default LaunchStats), EXPERIMENTS (empty: skip the L1 carve-out and L2
#      split sweeps).
set -u
BIN=${1:?binary}
OUT=${2:?output directory}
CONFIGS=${3:-}
DOMAIN=${DOMAIN:-256,256,256}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mkdir -p "$OUT"

# NVRTC ships with the CUDA toolkit, often outside the loader's path.
if ! ldconfig -p | grep -q 'libnvrtc\.so'; then
  nvrtc=$(find /usr/local/cuda*/ /usr/lib /opt -name 'libnvrtc.so*' 2>/dev/null | head -1)
  [ -n "$nvrtc" ] && export LD_LIBRARY_PATH="$(dirname "$nvrtc")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$gpu" in
  *H200*) MACHINE=${MACHINE:-h200} ;;
  *H100*) MACHINE=${MACHINE:-h100-sxm} ;;
  *A100*) MACHINE=${MACHINE:-a100-40gb} ;;
  *V100*) MACHINE=${MACHINE:-v100} ;;
  *) MACHINE=${MACHINE:-h200} ;;
esac
{
  date -u +%Y-%m-%dT%H:%M:%SZ
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv
  echo "ncu: $(command -v ncu)"; ncu --version
  echo "machine model: $MACHINE; domain $DOMAIN; seed ${SEED:-1}; commit ${STENCILSCOPE_COMMIT:-unknown}"
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

SECTIONS=(${SECTIONS-LaunchStats})
sweep() { # name, time limit (s), then the arguments of `stencilscope counters`
  local name=$1 limit=$2; shift 2
  local extra=() sec=()
  # NAME-top.txt: the model's top configurations; NAME-extra.txt: any others to include.
  for f in "$CONFIGS/$name-top.txt" "$CONFIGS/$name-extra.txt"; do
    [ -n "$CONFIGS" ] && [ -f "$f" ] && extra+=(--configs "$f")
  done
  for s in "${SECTIONS[@]}"; do sec+=(--ncu-section "$s"); done
  extra+=(--seed "${SEED:-1}")
  local t0=$SECONDS
  echo "== $name: $BIN counters $* ${extra[*]} ${sec[*]} --machine $MACHINE --out $OUT --name $name"
  timeout "$limit" "$BIN" counters "$@" "${extra[@]}" "${sec[@]}" --machine "$MACHINE" --out "$OUT" \
    --name "$name" > "$OUT/$name.out" 2>&1
  local rc=$?
  if [ $rc -ne 0 ] && [ ${#sec[@]} -gt 0 ]; then
    # The sections are extra evidence, not the measurement: try once more without them.
    echo "== $name: exit $rc with ${sec[*]}; again without"; tail -n 5 "$OUT/$name.out"
    timeout "$limit" "$BIN" counters "$@" "${extra[@]}" --machine "$MACHINE" --out "$OUT" \
      --name "$name" > "$OUT/$name.out" 2>&1
    rc=$?
  fi
  echo "== $name: exit $rc after $((SECONDS - t0)) s"
  tail -n 12 "$OUT/$name.out"
  return $rc
}

# Two configurations on a small domain first: a failure here (no counters, no NVRTC) costs
# seconds, not the whole budget.
printf '128,1,1\n32,4,2 1,1,2\n' > "$OUT/smoke-configs.txt"
sweep smoke 90 "$HERE/stencils/star3d_r4.toml" --dtype f64 --domain 128,128,128 \
  --configs "$OUT/smoke-configs.txt" || { echo "smoke sweep failed: stopping"; exit 1; }
STAR="$HERE/stencils/star3d_r4.toml"
sweep star3d_r4-f64 "${LIMIT_STAR:-170}" "$STAR" --dtype f64 --domain "$DOMAIN" \
  --configs "sample:${SAMPLE_STAR:-40}"
sweep box3d_r1-f32 "${LIMIT_BOX:-80}" "$HERE/stencils/box3d_r1.toml" --dtype f32 --domain "$DOMAIN" \
  --configs "sample:${SAMPLE_BOX:-16}"
sweep d3q19_srt_pull-soa "${LIMIT_LBM:-70}" "$HERE/lbm/d3q19_srt_pull.toml" --domain "$DOMAIN" \
  --configs "sample:${SAMPLE_LBM:-12}"
sweep d3q19_srt_pull-aos "${LIMIT_LBM:-70}" "${AOS_FILE:-$HERE/bench/counters/d3q19_srt_pull_aos.toml}" --domain "$DOMAIN" \
  --configs "sample:${SAMPLE_LBM:-12}"
if [ -n "${EXPERIMENTS-1}" ]; then
  # L1 capacity: the same star3d_r4 configurations with the smallest and the largest L1
  # (preferred carve-out 100 % and 0 % shared memory); ncu's LaunchStats says what was granted.
  for c in 100 0; do
    sweep star3d_r4-f64-carveout$c "${LIMIT_STAR:-170}" "$STAR" --dtype f64 --domain "$DOMAIN" \
      --configs "sample:${SAMPLE_STAR:-40}" --carveout $c
  done
  # L2 split: at 768x768x64 the radius-4 layer condition needs about 40 MB of f64 planes,
  # between half of the H200's L2 and all of it.
  sweep star3d_r4-f64-768 "${LIMIT_STAR:-170}" "$STAR" --dtype f64 --domain 768,768,64 \
    --configs "sample:${SAMPLE_768:-16}"
fi
echo "done"
