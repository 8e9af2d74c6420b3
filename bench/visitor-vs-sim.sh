#!/usr/bin/env bash
# The visitor's L2 load against its own lockstep simulator, per configuration (issue 8): the
# preset's estimate, the estimate without the first fold point's burst interleave (the preset
# less `l1_interleave`, i.e. lockstep as the simulator), and the simulator's lockstep figure with
# the measured L1 set function; then the preset's estimate and the simulator's lockstep figure
# in the compiled issue order (`--compiled-order`; the order ORDERS holds for the configuration
# at 256^3, which the compiled code keeps on other domains). No GPU; 5-60 s per configuration
# and order on a small domain.
#
# usage: bench/visitor-vs-sim.sh [CONFIGS] [BIN]
#   CONFIGS  lines `kernel dtype block fold blocks-per-sm` (default: the l1-less misses of the
#            H100's star3d_r4 f64 sweep, bench/visitor-vs-sim.txt)
#   BIN      the stencilscope binary (default: target/release/stencilscope, built if missing)
# env: MACHINE  the preset (default h100-sxm); DOMAIN (default 256,256,64); ORDERS (default
#      bench/results/h100/counters/compiled-order/orders.txt)
set -eu
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CONFIGS=${1:-$HERE/bench/visitor-vs-sim.txt}
BIN=${2:-$HERE/target/release/stencilscope}
[ -x "$BIN" ] || (cd "$HERE" && cargo build --release --quiet)
MACHINE=${MACHINE:-h100-sxm}
DOMAIN=${DOMAIN:-256,256,64}
ORDERS=${ORDERS:-$HERE/bench/results/h100/counters/compiled-order/orders.txt}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# The preset without the burst interleave: the machine file less its `l1_interleave` table and
# that table's source line.
python3 - "$HERE/machines/$MACHINE.toml" "$TMP/lockstep.toml" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
for pattern, repl, flags in [(r"^l1_interleave = \[.*?\n\]\n", "", re.S | re.M),
                             (r"^l1_interleave = \".*\"\n", "", re.M),
                             (r'^name = "(.*)"', r'name = "\1-lockstep"', re.M)]:
    text, n = re.subn(pattern, repl, text, count=1, flags=flags)
    if n != 1:
        # Without the table the lockstep column would repeat the preset's.
        sys.exit(f"{sys.argv[1]}: no line matching {pattern!r} to take out or rename")
open(sys.argv[2], "w").write(text)
EOF
l2() { awk '/^L2 load/ {print $'"$1"'}'; }
echo "| kernel | block | fold | blocks/SM | visitor | visitor, lockstep | simulator, lockstep |" \
  "visitor, compiled order | simulator, lockstep in the compiled order |"
echo "|---|---|---|---|---|---|---|---|---|"
grep -v '^\s*\(#\|$\)' "$CONFIGS" | while read -r kernel dtype block fold bps; do
  args=("$HERE/stencils/$kernel.toml" --dtype "$dtype" --domain "$DOMAIN" --block "$block"
    --fold "$fold" --blocks-per-sm "$bps")
  sim=$("$BIN" volumes "${args[@]}" --machine "$MACHINE" --simulate)
  lock=$("$BIN" volumes "${args[@]}" --machine "$TMP/lockstep.toml")
  # The configuration's compiled order at 256^3, moved to DOMAIN.
  grep "^$kernel $dtype $block $fold 256,256,256:" "$ORDERS" \
    | sed "s/ 256,256,256:/ $DOMAIN:/" > "$TMP/order.txt" || true
  if [ -s "$TMP/order.txt" ]; then
    comp=$("$BIN" volumes "${args[@]}" --machine "$MACHINE" --simulate \
      --compiled-order "$TMP/order.txt")
    compiled="$(l2 3 <<<"$comp") | $(l2 7 <<<"$comp")"
  else
    compiled="— | —"
  fi
  echo "| $kernel $dtype | $block | $fold | $bps | $(l2 3 <<<"$sim") | $(l2 3 <<<"$lock") |" \
    "$(l2 7 <<<"$sim") | $compiled |"
done
