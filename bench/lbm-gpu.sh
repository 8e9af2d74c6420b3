#!/usr/bin/env bash
# LBM on an NVIDIA GPU (issue 6): D3Q19 SRT (f32, f64) and D3Q27 TRT f32, pull and AA, SoA and
# AoS, through CUDA and OpenCL on a 256³ domain; the copy kernel's bandwidth in the same run.
# Each run is `stencilscope run` on the variant's bulk kernel (AA: its even and its odd step):
# warm-up launches, timed launches (device timers, median), then one launch on NaN-poisoned
# outputs checked element by element against the CPU reference; a run that fails verification
# is marked and does not count (summarize-lbm.py drops it).
#
# usage: bench/lbm-gpu.sh [BIN] [OUTDIR]      (BIN built with `cargo build --release --features cuda`)
# then:  python3 bench/summarize-lbm.py OUTDIR bench/results/<gpu> --commit SHA
#
# Environment: DOMAIN (256,256,256), COPY_DOMAIN (512,512,512), REPS (10), BACKENDS ("cuda opencl"),
# SWEEP (block configurations tried on D3Q19 SRT f32 SoA through the first backend), CONFIGS (those
# of every other run), EXTRA_BACKENDS (backends of the aligned-row experiments), COPY (0: skip the
# copy runs), PTXAS (0: skip the register report), VARIANTS (run only these variants, in this order; names as in OUTDIR/variants).
# Runs append to OUTDIR, so several invocations (say, one per backend) can share it.
set -u
BIN=${1:-target/release/stencilscope}
OUT=${2:-bench-lbm}
DOMAIN=${DOMAIN:-256,256,256}
COPY_DOMAIN=${COPY_DOMAIN:-512,512,512}
REPS=${REPS:-10}
BACKENDS=${BACKENDS:-cuda opencl}
# A configuration is `block[/fold]`.
SWEEP=${SWEEP:-64,1,1 128,1,1 256,1,1 512,1,1 32,4,2 128,1,1/1,1,2}
CONFIGS=${CONFIGS:-128,1,1 256,1,1}
COPY_CONFIGS=${COPY_CONFIGS:-256,1,1 128,2,1/1,1,2 256,1,1/1,1,4 512,1,1/1,2,1}
EXTRA_BACKENDS=${EXTRA_BACKENDS:-${BACKENDS%% *}}
COPY=${COPY:-1}
mkdir -p "$OUT/variants"

# NVRTC ships with the CUDA toolkit, often outside the loader's path.
if ! ldconfig -p | grep -q 'libnvrtc\.so'; then
  nvrtc=$(find /usr/local/cuda*/ /usr/lib /opt -name 'libnvrtc.so*' 2>/dev/null | head -1)
  [ -n "$nvrtc" ] && export LD_LIBRARY_PATH="$(dirname "$nvrtc")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem,clocks.sm,clocks.mem \
  --format=csv > "$OUT/nvidia-smi.csv" 2>&1
"$BIN" devices --json > "$OUT/devices.json" 2> "$OUT/devices.err"

# `block[/fold]` list → --block/--fold arguments.
config_args() {
  local c
  for c in "$@"; do
    case $c in
      */*) printf -- '--block %s --fold %s ' "${c%/*}" "${c#*/}" ;;
      *) printf -- '--block %s --fold 1,1,1 ' "$c" ;;
    esac
  done
}

run() { # name: the JSON file's stem; the rest: arguments of `stencilscope run`
  local name=$1; shift
  local t0=$SECONDS
  if "$BIN" run "$@" --reps "$REPS" --json "$OUT/$name.json" > "$OUT/$name.log" 2>&1; then
    echo "== $name ($((SECONDS - t0)) s)"
  else
    echo "== $name FAILED ($((SECONDS - t0)) s)"
  fi
  grep -E '^block' "$OUT/$name.log" | sed -E 's/\(min [^)]*\), //; s/verification passed .*/verified/'
}

# variant NAME LATTICE COLLISION DTYPE STREAMING LAYOUT [GHOST]: writes an LBM file.
variant() {
  cat > "$OUT/variants/$1.toml" <<EOF
name = "$1"
lattice = "$2"
collision = "$3"
tau = 0.6
dtype = "$4"
streaming = "$5"
layout = "$6"
ghost = ${7:-1}
EOF
}

# The copy bandwidth first: the yardstick of every fraction below.
[ "$COPY" = 0 ] || for backend in $BACKENDS; do
  for dtype in f32 f64; do
    # shellcheck disable=SC2046
    run "copy-$dtype-$backend" --copy --backend "$backend" --dtype "$dtype" --domain "$COPY_DOMAIN" \
      $(config_args $COPY_CONFIGS)
  done
done

# The variants: (lattice collision dtype) × streaming × layout.
names=()
for k in "D3Q19 srt f32" "D3Q19 srt f64" "D3Q27 trt f32"; do
  read -r lattice coll dtype <<< "$k"
  for streaming in pull aa; do
    for layout in fzyx zyxf; do
      l=$([ $layout = fzyx ] && echo soa || echo aos)
      name=$(echo "${lattice}_${coll}_${dtype}_${streaming}_$l" | tr 'A-Z' 'a-z')
      variant "$name" "$lattice" "$coll" "$dtype" "$streaming" "$layout"
      names+=("$name")
    done
  done
done
# Rows aligned to 32-byte sectors (ghost 8 f32 / 4 f64: nx + 2·ghost is a multiple of 8 / 4).
variant d3q19_srt_f32_pull_soa_g8 D3Q19 srt f32 pull fzyx 8
variant d3q19_srt_f32_aa_soa_g8 D3Q19 srt f32 aa fzyx 8
variant d3q19_srt_f64_pull_soa_g4 D3Q19 srt f64 pull fzyx 4
extra=(d3q19_srt_f32_pull_soa_g8 d3q19_srt_f32_aa_soa_g8 d3q19_srt_f64_pull_soa_g4)

# Registers and spills of the CUDA kernels (ptxas), where the toolkit is there; in the background
# (one CPU core; the runs time on the device).
if [ "${PTXAS:-1}" != 0 ] && command -v nvcc > /dev/null; then
  for name in "${names[@]}" "${extra[@]}"; do
    for step in $(grep -q '"aa"' "$OUT/variants/$name.toml" && echo "even odd" || echo single); do
      stepargs=(); [ "$step" != single ] && stepargs=(--step "$step")
      "$BIN" emit "$OUT/variants/$name.toml" "${stepargs[@]}" --target cuda --block 128,1,1 \
        --domain "$DOMAIN" -o "$OUT/k-$name-$step.cu" &&
        # The NVRTC options of the CUDA backend (runtime::cuda::NVRTC_FLOAT_OPTIONS).
        echo "$name $step: $(nvcc -arch=sm_90 -cubin -o /dev/null -ftz=true -prec-div=false \
          -prec-sqrt=false -Xptxas -v "$OUT/k-$name-$step.cu" 2>&1 |
          grep -E 'registers|spill' | tr -s ' \n' ' ')"
      rm -f "$OUT/k-$name-$step.cu"
    done
  done >> "$OUT/ptxas.txt" 2>&1 &
fi

# run_variant NAME BACKEND CONFIG...: the bulk kernel, or both AA steps.
run_variant() {
  local name=$1 backend=$2; shift 2
  if grep -q '"aa"' "$OUT/variants/$name.toml"; then
    for step in even odd; do
      # shellcheck disable=SC2046
      run "$name-$step-$backend" "$OUT/variants/$name.toml" --step $step --backend "$backend" \
        --domain "$DOMAIN" $(config_args "$@")
    done
  else
    # shellcheck disable=SC2046
    run "$name-$backend" "$OUT/variants/$name.toml" --backend "$backend" --domain "$DOMAIN" \
      $(config_args "$@")
  fi
}

first=${BACKENDS%% *}
if [ -n "${VARIANTS+set}" ]; then
  for name in $VARIANTS; do
    for backend in $BACKENDS; do
      configs=$CONFIGS
      case $name-$backend in d3q19_srt_f32_*_soa*-$first) configs=$SWEEP ;; esac
      # shellcheck disable=SC2086
      run_variant "$name" "$backend" $configs
    done
  done
  wait
  exit 0
fi
for name in "${names[@]}"; do
  for backend in $BACKENDS; do
    configs=$CONFIGS
    case $name-$backend in d3q19_srt_f32_*_soa-$first) configs=$SWEEP ;; esac
    # shellcheck disable=SC2086
    run_variant "$name" "$backend" $configs
  done
done
for name in "${extra[@]}"; do
  for backend in $EXTRA_BACKENDS; do
    # shellcheck disable=SC2086
    run_variant "$name" "$backend" $CONFIGS
  done
done
wait
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> "$OUT/nvidia-smi.csv" 2>&1
