#!/usr/bin/env bash
# Compiles every DIR/NAME.cu of `bench/compiled-order.py emit` as the CUDA runtime's NVRTC would
# for the H100/H200 (sm_90, the float options of runtime::cuda::NVRTC_FLOAT_OPTIONS) and writes
# DIR/NAME.sass (cuobjdump -sass) and DIR/NAME.res (registers); run where nvcc and cuobjdump are,
# then `bench/compiled-order.py orders DIR`.
#
# usage: bench/compiled-order-sass.sh DIR [JOBS]
set -eu
DIR=$1; JOBS=${2:-16}
command -v nvcc >/dev/null && command -v cuobjdump >/dev/null \
  || { echo "needs nvcc and cuobjdump (CUDA toolkit)" >&2; exit 1; }
nvcc --version | tail -2 > "$DIR/nvcc.txt"
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
export TMP DIR
ls "$DIR" | grep '\.cu$' | xargs -P "$JOBS" -I{} bash -c '
  n=$(basename {} .cu)
  nvcc -arch=sm_90 -cubin --ftz=true --prec-div=false --prec-sqrt=false -o "$TMP/$n.cubin" "$DIR/$n.cu"
  cuobjdump -sass "$TMP/$n.cubin" > "$DIR/$n.sass"
  cuobjdump -res-usage "$TMP/$n.cubin" > "$DIR/$n.res"'
