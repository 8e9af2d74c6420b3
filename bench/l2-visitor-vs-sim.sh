#!/usr/bin/env bash
# The visitor's L2 law against its own simulator's LRU of lines, with L1 out of the way (issue 8):
# both run on a machine file with an L1 of 1 KiB, so that every reuse reaches L2, and an L2 that is
# an LRU of its effective capacity (the experiment file with the step, bench/counters/GPU-step.toml),
# the simulator's own L2. DRAM load of the visitor, of the simulator, and their ratio, per
# configuration. No GPU; 5-60 s per configuration at 128^3.
#
# usage: bench/l2-visitor-vs-sim.sh [CONFIGS] [BIN]
#   CONFIGS  lines `definition-file dtype block fold blocks-per-sm` (default: the folded D3Q19 AoS
#            tiles of the `cg` probe, D3Q19 SoA and star3d_r4 controls; bench/l2-visitor-vs-sim.txt)
#   BIN      the stencilscope binary (default: target/release/stencilscope, built if missing)
# env: GPU (h100, default, or h200), DOMAIN (default 128,128,128)
set -eu
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CONFIGS=${1:-$HERE/bench/l2-visitor-vs-sim.txt}
BIN=${2:-$HERE/target/release/stencilscope}
[ -x "$BIN" ] || (cd "$HERE" && cargo build --release --quiet)
GPU=${GPU:-h100}
DOMAIN=${DOMAIN:-128,128,128}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# The step file with the first (numeric) l1_bytes set to one KiB; its source line stays.
sed '0,/^l1_bytes = [0-9]*$/s//l1_bytes = 1024/' "$HERE/bench/counters/$GPU-step.toml" \
  > "$TMP/no-l1.toml"
grep -q '^l1_bytes = 1024$' "$TMP/no-l1.toml" || { echo "no numeric l1_bytes in $GPU-step.toml" >&2; exit 1; }
printf '%-44s %-10s %-10s %s\n' configuration visitor simulator visitor/sim
grep -v '^#' "$CONFIGS" | while read -r file dtype block fold bps; do
  [ -n "$file" ] || continue
  row=$("$BIN" volumes "$HERE/$file" --dtype "$dtype" --machine "$TMP/no-l1.toml" \
    --domain "$DOMAIN" --block "$block" --fold "$fold" --blocks-per-sm "$bps" --simulate \
    | grep '^DRAM load')
  printf '%-44s %-10s %-10s %s\n' "$(basename "$file" .toml) $block f$fold x$bps" \
    "$(echo "$row" | awk '{print $3}')" "$(echo "$row" | awk '{print $7}')" \
    "$(echo "$row" | awk '{print $9}')"
done
