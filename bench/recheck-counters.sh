#!/usr/bin/env bash
# Re-analyses every committed counter sweep of one GPU (H200 or H100) with the current footprint
# visitor (no GPU: the saved ncu CSVs) and prints, per sweep and level, the share of configurations within ±10 % and
# the median, p90 and max |error| — one line per level, so that a visitor change gets a
# before/after comparison.
#
# usage: bench/recheck-counters.sh [OUTDIR] [BIN]
#   OUTDIR  where the re-analysed JSON/HTML reports go (default: a temporary directory)
#   BIN     the stencilscope binary (default: target/release/stencilscope, built if missing)
# env: GPU       h200 (default) or h100: which bench/results/GPU/counters to re-analyse
#      EXP_FILE  the experiment machine file every sweep is also re-analysed with (suffix -step;
#                default the GPU's preset with the step, bench/counters/GPU-step.toml)
#      ORDERS    the compiled issue orders the estimates follow where they name a configuration
#                (`counters --compiled-order`; default the sm_90 orders of the current emitters'
#                code, bench/results/h100/counters/compiled-order/orders.txt, and for the H200
#                sweeps profiled at 18bdee4 those of that commit's emitters, orders-18bdee4.txt;
#                a sweep whose run read its twins' orders itself keeps those, timed-twin/raw/);
#                the D3Q19 AoS sweeps take the same orders with the places of the accesses
#                among the SASS instructions, compiled-order/places/ (float.txt, plain.txt);
#                empty: every estimate in the emitted order
set -eu
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${1:-$(mktemp -d)}
BIN=${2:-$HERE/target/release/stencilscope}
[ -x "$BIN" ] || (cd "$HERE" && cargo build --release --quiet)
GPU=${GPU:-h200}
case "$GPU" in
  # The H200 run profiled the SoA kernel with 1 ghost layer (the default then), the H100 run the
  # current lbm/d3q19_srt_pull.toml with 8 (rows aligned to sectors).
  # The experiment file each sweep is also re-analysed with (suffix XS): both presets carry L2's
  # measured curve and are compared with the step at its effective capacity they had before.
  h200) M=h200 SOA=$HERE/bench/counters/d3q19_srt_pull_soa.toml
        EXP=${EXP_FILE:-$HERE/bench/counters/h200-step.toml} XS=-step ;;
  h100) M=h100-sxm SOA=$HERE/lbm/d3q19_srt_pull.toml
        EXP=${EXP_FILE:-$HERE/bench/counters/h100-step.toml} XS=-step ;;
  *) echo "GPU must be h200 or h100, not $GPU" >&2; exit 2 ;;
esac
RES=$HERE/bench/results/$GPU/counters
ORDERS=${ORDERS-$HERE/bench/results/h100/counters/compiled-order/orders.txt}
REMATCHED=$HERE/bench/results/h200/counters/compiled-order/rematched/orders.txt
# The H200's first sweeps ran the emitters of 18bdee4, which left the loads fold points share to
# the compiler; their compiled order is that code's.
EARLY_ORDERS=
if [ -n "$ORDERS" ] && [ "$GPU" = h200 ]; then
  EARLY_ORDERS=$HERE/bench/results/h100/counters/compiled-order/orders-18bdee4.txt
fi
# The reports it writes share their names with the committed ones: never into the results.
case "$(realpath -m "$OUT")/" in
  "$HERE"/bench/results/*)
    echo "OUTDIR $OUT lies in bench/results, whose committed reports it would overwrite;" \
      "give a scratch directory (or none: a temporary one)" >&2
    exit 2 ;;
esac
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
STAR=$HERE/stencils/star3d_r4.toml
# name, the raw files' name, machine, domain, then the definition file and its extra arguments;
# the raw files in $RES/${RAW:-raw}.
# With EARLY set, the sweep is one of the H200's first (EARLY_ORDERS).
run() {
  local name=$1 csv=$2 machine=$3 domain=$4 raw=${RAW:-raw}; shift 4
  local orders=$ORDERS order_args=()
  [ -z "${EARLY:-}" ] || [ -z "$EARLY_ORDERS" ] || orders=$EARLY_ORDERS
  # A sweep that read its own twins' orders (raw/NAME-compiled-order.txt) keeps them.
  [ -z "${OWN_ORDERS:-}" ] || [ -z "$orders" ] || orders=$RES/$OWN_ORDERS
  # The D3Q19 AoS sweeps take the same orders with each access's place among the SASS
  # instructions (compiled-order/places/): how far apart the stores go out.
  [ -z "${PLACES:-}" ] || [ -z "$orders" ] || orders=$PLACES
  # Then the orders of the twins whose SASS the matcher of 8fa5d38 could not match, read again
  # with value numbering (compiled-order/rematched/ of the H200's results): for the
  # configurations the sweep's own file lacks.
  [ -z "$orders" ] || order_args=(--compiled-order "$orders" --compiled-order "$REMATCHED")
  (cd "$RES" && "$BIN" counters "$@" --machine "$machine" --domain "$domain" \
    --from-csv "$raw/$csv.csv.gz" --twin-info "$raw/$csv-twin.json" \
    --original "${ORIGINAL:-$raw/$csv-device-report.json}" --out "$OUT" --name "$name" \
    ${order_args[@]+"${order_args[@]}"} > "$OUT/$name.log" 2>&1) \
    || { echo "$name failed:"; tail -5 "$OUT/$name.log"; exit 1; }
}
# The sweeps of one directory of $RES whose raw files and compiled orders lie in DIR/raw: each
# "STEM:DOMAIN:FILE [ARGS]" is the sweep STEM-DIR re-analysed with MACHINE, named with SUFFIX;
# adds the names to SWEEPS.
dir_sweeps() {
  local dir=$1 m=$2 x=$3 v
  shift 3
  for v in "$@"; do
    local n=${v%%:*}-$dir rest=${v#*:}
    # shellcheck disable=SC2086 # FILE [ARGS] split into words
    RAW=$dir/raw OWN_ORDERS=$dir/raw/$n-compiled-order.txt ORIGINAL=$dir/$n.json \
      run $n$x $n "$m" ${rest%%:*} ${rest#*:}
    SWEEPS="$SWEEPS $n$x"
  done
}
# Every sweep of this GPU with MACHINE, each named with SUFFIX; adds the names to SWEEPS.
SWEEPS=""
PL=$HERE/bench/results/h100/counters/compiled-order/places
sweeps() {
  local m=$1 x=$2 aos=$HERE/bench/counters/d3q19_srt_pull_aos.toml
  # The H100's first AoS sweeps ran the twins without the float options (H200's: 18bdee4's).
  local plain=
  [ "$GPU" = h200 ] || plain=$PL/plain.txt
  EARLY=1 run star3d_r4-f64$x star3d_r4-f64 "$m" 256,256,256 "$STAR" --dtype f64
  EARLY=1 run box3d_r1-f32$x box3d_r1-f32 "$m" 256,256,256 "$HERE/stencils/box3d_r1.toml" --dtype f32
  EARLY=1 run d3q19_srt_pull-soa$x d3q19_srt_pull-soa "$m" 256,256,256 "$SOA"
  PLACES=$plain EARLY=1 run d3q19_srt_pull-aos$x d3q19_srt_pull-aos "$m" 256,256,256 "$aos"
  EARLY=1 run star3d_r4-f64-768$x star3d_r4-f64-768 "$m" 768,768,64 "$STAR" --dtype f64
  EARLY=1 run star3d_r4-f64-carveout100$x star3d_r4-f64-carveout100 "$m" 256,256,256 "$STAR" \
    --dtype f64
  EARLY=1 run star3d_r4-f64-carveout0$x star3d_r4-f64-carveout0 "$m" 256,256,256 "$STAR" \
    --dtype f64
  SWEEPS="$SWEEPS star3d_r4-f64$x box3d_r1-f32$x d3q19_srt_pull-soa$x d3q19_srt_pull-aos$x
    star3d_r4-f64-768$x star3d_r4-f64-carveout100$x star3d_r4-f64-carveout0$x"
  # The configurations the ranking's candidate models choose among at the timed sweeps' 512^3
  # (each model's top 3 and the 5 fastest measured, contested/raw/KERNEL-DTYPE-configs.txt),
  # the same lists on both GPUs.
  for kt in star3d_r4:f64 star3d_r4:f32 box3d_r1:f32 star3d_r1:f64; do
    local k=${kt%%:*} t=${kt##*:}
    RAW=contested/raw run $k-$t-512-contested$x $k-$t-512-contested "$m" 512,512,512 \
      "$HERE/stencils/$k.toml" --dtype $t
    SWEEPS="$SWEEPS $k-$t-512-contested$x"
  done
  if [ "$GPU" = h200 ]; then
    # The current SoA kernel (8 ghost layers, rows aligned to sectors, as on the H100): the 17
    # configurations above and the H100's 25 (raw/d3q19_srt_pull-soa-aligned-configs.txt).
    run d3q19_srt_pull-soa-aligned$x d3q19_srt_pull-soa-aligned "$m" 256,256,256 \
      "$HERE/lbm/d3q19_srt_pull.toml"
    SWEEPS="$SWEEPS d3q19_srt_pull-soa-aligned$x"
  fi
  # Out of sample for the lines a window takes in L2: 24 seeded configurations folded along x
  # each of D3Q19 SoA (the current kernel) and star3d_r4 f64, none in an earlier sweep, the same
  # on both GPUs (raw/*-xfold-oos-configs.txt).
  run d3q19_srt_pull-soa-xfold-oos$x d3q19_srt_pull-soa-xfold-oos "$m" 256,256,256 \
    "$HERE/lbm/d3q19_srt_pull.toml"
  run star3d_r4-f64-xfold-oos$x star3d_r4-f64-xfold-oos "$m" 256,256,256 "$STAR" --dtype f64
  SWEEPS="$SWEEPS d3q19_srt_pull-soa-xfold-oos$x star3d_r4-f64-xfold-oos$x"
  # Out of sample for partly written sectors: 12 star3d_r4 f64 tiles one or two threads wide,
  # none in an earlier sweep, whose lines partly written at a time partial-drift/ measured too,
  # the same on both GPUs (partial-drift/oos-counters/raw/star3d_r4-f64-narrow-configs.txt).
  RAW=partial-drift/oos-counters/raw \
    OWN_ORDERS=partial-drift/oos-counters/raw/star3d_r4-f64-narrow-compiled-order.txt \
    run star3d_r4-f64-narrow$x star3d_r4-f64-narrow "$m" 256,256,256 "$STAR" --dtype f64
  SWEEPS="$SWEEPS star3d_r4-f64-narrow$x"
  # Out of sample for the line renewals: 16 unfolded or once-folded D3Q19 AoS tiles of 4 to 32
  # warps, none in an earlier sweep, the same on both GPUs
  # (aos-flat-oos/raw/d3q19_srt_pull-aos-flat-oos-configs.txt; repeats in aos-flat-oos/repeat*/).
  RAW=aos-flat-oos/raw PLACES=$PL/float.txt \
    OWN_ORDERS=aos-flat-oos/raw/d3q19_srt_pull-aos-flat-oos-compiled-order.txt \
    ORIGINAL=aos-flat-oos/d3q19_srt_pull-aos-flat-oos.json \
    run d3q19_srt_pull-aos-flat-oos$x d3q19_srt_pull-aos-flat-oos "$m" 256,256,256 \
    "$HERE/bench/counters/d3q19_srt_pull_aos.toml"
  SWEEPS="$SWEEPS d3q19_srt_pull-aos-flat-oos$x"
  # Out of sample for the stores' places: 20 unfolded D3Q19 AoS tiles of 4 to 32 warps and 4
  # folded twice, none in an earlier sweep, the same on both GPUs, profiled with the twin that
  # writes the places itself (aos-b2b-oos/raw/d3q19_srt_pull-aos-b2b-oos-configs.txt; a repeat
  # on the H100 in aos-b2b-oos/repeat/).
  RAW=aos-b2b-oos/raw \
    OWN_ORDERS=aos-b2b-oos/raw/d3q19_srt_pull-aos-b2b-oos-compiled-order.txt \
    ORIGINAL=aos-b2b-oos/d3q19_srt_pull-aos-b2b-oos.json \
    run d3q19_srt_pull-aos-b2b-oos$x d3q19_srt_pull-aos-b2b-oos "$m" 256,256,256 "$aos"
  SWEEPS="$SWEEPS d3q19_srt_pull-aos-b2b-oos$x"
  # D3Q19 SoA (the current kernel) and AoS again, the H100 sweeps' 25 configurations each, with
  # the twin that compiles with `run --backend cuda`'s float options (the kernel the timing
  # harness runs) and reads its compiled orders itself (timed-twin/, both GPUs).
  for l in soa aos; do
    local lf=$HERE/lbm/d3q19_srt_pull.toml
    [ $l = soa ] || lf=$aos
    # (The device's report is the sweep's own JSON, not a copy in raw/.) The SoA orders with
    # the three spilling kernels' stack accesses, which that run's binary did not write
    # (-stack.txt: the same orders from the same twins' SASS, read at c483fd3).
    local own=timed-twin/raw/d3q19_srt_pull-$l-compiled-order.txt places=$PL/float.txt
    [ $l = aos ] || { own=${own%.txt}-stack.txt; places=; }
    RAW=timed-twin/raw OWN_ORDERS=$own PLACES=$places ORIGINAL=timed-twin/d3q19_srt_pull-$l.json \
      run d3q19_srt_pull-$l-timed$x d3q19_srt_pull-$l "$m" 256,256,256 "$lf"
    SWEEPS="$SWEEPS d3q19_srt_pull-$l-timed$x"
  done
  # Out of sample for the links and windows at the blocks' launch times (and the fitted
  # l2_reuse_distance_scale): seeded samples of star3d_r4 f64 at 512^3 (20) and 512x768x512
  # (12) and of D3Q19 AoS at 256^3 (16), profiled after the change with twins that read their
  # compiled orders (and the stores' places) themselves, the same seeds on both GPUs
  # (h100: oos56/raw/oos56.sh; h200: oos57/raw/oos57.sh, with 16 D3Q19 SoA tiles besides, and
  # at 256^3 star3d_r4 f64, box3d_r1 f32 and D3Q19 AoS and SoA samples, oos57/raw/oos57-256.sh).
  local oos=oos56 more=()
  if [ "$GPU" = h200 ]; then
    local lbm=$HERE/lbm/d3q19_srt_pull.toml
    oos=oos57 more=("d3q19_srt_pull-soa-oos57 256,256,256 $lbm"
      "star3d_r4-f64-oos57 256,256,256 $STAR --dtype f64"
      "box3d_r1-f32-oos57 256,256,256 $HERE/stencils/box3d_r1.toml --dtype f32"
      "d3q19_srt_pull-aos-oos57 256,256,256 $aos"
      "d3q19_srt_pull-soa-oos58 256,256,256 $lbm")
  fi
  for o in "star3d_r4-f64-512-oos56 512,512,512 $STAR --dtype f64" \
    "star3d_r4-f64-512x768-oos56 512,768,512 $STAR --dtype f64" \
    "d3q19_srt_pull-aos-oos56 256,256,256 $aos" ${more[@]+"${more[@]}"}; do
    set -- $o
    local n=$1 dom=$2
    shift 2
    RAW=$oos/raw OWN_ORDERS=$oos/raw/$n-compiled-order.txt ORIGINAL=$oos/$n.json \
      run $n$x $n "$m" $dom "$@"
    SWEEPS="$SWEEPS $n$x"
  done
  if [ "$GPU" = h200 ]; then
    # Out of sample for partial_sector_limit: D3Q19 SoA tiles whose thread completes each output
    # sector at two or four fold points, none in an earlier sweep (oos59/raw/oos59.sh).
    RAW=oos59/raw OWN_ORDERS=oos59/raw/d3q19_srt_pull-soa-oos59-compiled-order.txt \
      ORIGINAL=oos59/d3q19_srt_pull-soa-oos59.json \
      run d3q19_srt_pull-soa-oos59$x d3q19_srt_pull-soa-oos59 "$m" 256,256,256 \
      "$HERE/lbm/d3q19_srt_pull.toml"
    SWEEPS="$SWEEPS d3q19_srt_pull-soa-oos59$x"
    # Out of sample for the sectors x-neighbouring blocks write at one step (oos60/raw/oos60.sh):
    # D3Q19 SoA tiles one to four cells wide unfolded along x (the current kernel), and tiles 16
    # to 128 wide with one ghost layer (rows not aligned to sectors); none in an earlier sweep.
    for v in narrow:$HERE/lbm/d3q19_srt_pull.toml misaligned:$SOA; do
      local n=d3q19_srt_pull-soa-oos60-${v%%:*}
      RAW=oos60/raw OWN_ORDERS=oos60/raw/$n-compiled-order.txt ORIGINAL=oos60/$n.json \
        run $n$x $n "$m" 256,256,256 "${v#*:}"
      SWEEPS="$SWEEPS $n$x"
    done
    # And star3d_r4 f64 tiles one or two wide, at the driver's carve-out and at 100 % (28 KiB of
    # L1, the L1 each launch got read from ncu), for the one-array kernels (oos60/raw/oos60b.sh).
    for n in star3d_r4-f64-oos60-narrow star3d_r4-f64-oos60-narrow-c100; do
      RAW=oos60/raw OWN_ORDERS=oos60/raw/$n-compiled-order.txt ORIGINAL=oos60/$n.json \
        run $n$x $n "$m" 256,256,256 "$STAR" --dtype f64
      SWEEPS="$SWEEPS $n$x"
    done
    # D3Q19 AoS tiles one or two records wide, unfolded along x, whose sectors two records
    # straddle x-neighbouring blocks write at one fold point; none in an earlier sweep
    # (oos61/raw/oos61.sh; the twins write their stores' places themselves).
    n=d3q19_srt_pull-aos-oos61-narrow
    RAW=oos61/raw OWN_ORDERS=oos61/raw/$n-compiled-order.txt ORIGINAL=oos61/$n.json \
      run $n$x $n "$m" 256,256,256 "$aos"
    SWEEPS="$SWEEPS $n$x"
    # Out of sample for a block alone on its SM: launches of 1024-thread blocks of D3Q19 AoS,
    # star3d_r4 f64 (two per SM at their registers) and D3Q19 SoA, none in an earlier sweep
    # (oos62/raw/run.sh).
    for v in "d3q19_srt_pull-aos:$aos" "star3d_r4-f64:$STAR" \
      "d3q19_srt_pull-soa:$HERE/lbm/d3q19_srt_pull.toml"; do
      n=${v%%:*}-oos62-one
      local dt=()
      [ "${v%%:*}" != star3d_r4-f64 ] || dt=(--dtype f64)
      RAW=oos62/raw OWN_ORDERS=oos62/raw/$n-compiled-order.txt ORIGINAL=oos62/$n.json \
        run $n$x $n "$m" 256,256,256 "${v#*:}" ${dt[@]+"${dt[@]}"}
      SWEEPS="$SWEEPS $n$x"
    done
    # Out of sample for the kernels no sweep above has: seeded samples (seed 63, 16 each) of
    # D3Q19 TRT and D3Q27 TRT pull, D2Q9 SRT pull (f64) and the in-place AA kernels D3Q19 SRT and
    # D3Q15 TRT with a force (f64), their files' one ghost layer (oos63/raw/run.sh).
    local lb=$HERE/lbm st=$HERE/stencils
    dir_sweeps oos63 "$m" "$x" "d3q19_trt_pull:256,256,256:$lb/d3q19_trt_pull.toml" \
      "d3q27_trt_pull:256,256,256:$lb/d3q27_trt_pull.toml" \
      "d2q9_srt_pull:4096,4096:$lb/d2q9_srt_pull.toml" \
      "d3q19_srt_aa:256,256,256:$lb/d3q19_srt_aa.toml" \
      "d3q15_trt_aa_force:256,256,256:$lb/d3q15_trt_aa_force.toml"
    # The same kernels drawn again (seed 64) after the rules they showed landed (stores in
    # place; row ends), with the AA kernel's even step and the one-ghost-layer D3Q19 SRT SoA
    # (oos64/raw/run.sh; D3Q27's draw ran past its time and is not here).
    dir_sweeps oos64 "$m" "$x" "d3q19_trt_pull:256,256,256:$lb/d3q19_trt_pull.toml" \
      "d2q9_srt_pull:4096,4096:$lb/d2q9_srt_pull.toml" \
      "d3q19_srt_aa:256,256,256:$lb/d3q19_srt_aa.toml" \
      "d3q15_trt_aa_force:256,256,256:$lb/d3q15_trt_aa_force.toml" \
      "d3q19_srt_aa-even:256,256,256:$lb/d3q19_srt_aa.toml --step even" \
      "d3q19_srt_pull-soa1:256,256,256:$SOA"
    # The AA kernels drawn a third time (seed 65) after the written data's room in place
    # (oos65/raw/run.sh).
    dir_sweeps oos65 "$m" "$x" "d3q19_srt_aa:256,256,256:$lb/d3q19_srt_aa.toml" \
      "d3q19_srt_aa-even:256,256,256:$lb/d3q19_srt_aa.toml --step even" \
      "d3q15_trt_aa_force:256,256,256:$lb/d3q15_trt_aa_force.toml"
    # The AA kernels a fourth time (seed 66) after stop 64's in-place rules (no fills, no partly
    # written sectors at any tile width), with D3Q19 SRT SoA (one ghost layer) and D2Q9 SRT
    # (oos66/raw/run.sh).
    dir_sweeps oos66 "$m" "$x" "d3q19_srt_aa:256,256,256:$lb/d3q19_srt_aa.toml" \
      "d3q19_srt_aa-even:256,256,256:$lb/d3q19_srt_aa.toml --step even" \
      "d3q15_trt_aa_force:256,256,256:$lb/d3q15_trt_aa_force.toml" \
      "d3q19_srt_pull-soa1:256,256,256:$SOA" \
      "d2q9_srt_pull:4096,4096:$lb/d2q9_srt_pull.toml"
    # D3Q19 SRT push AoS drawn twice (seeds 67, 68) after stop 64's push rule (oos67/raw/run.sh, one
    # call for both; oos68/ holds the second draw).
    dir_sweeps oos67 "$m" "$x" "d3q19_srt_push_aos:256,256,256:$lb/d3q19_srt_push_aos.toml"
    dir_sweeps oos68 "$m" "$x" "d3q19_srt_push_aos:256,256,256:$lb/d3q19_srt_push_aos.toml"
    # Drawn after stop 65's L1 store rules (seed 69; oos69/raw/run.sh): push AoS, pull AoS,
    # TRT pull (SoA) and star3d_r4 f64.
    dir_sweeps oos69 "$m" "$x" "d3q19_srt_push_aos:256,256,256:$lb/d3q19_srt_push_aos.toml" \
      "d3q19_srt_pull-aos:256,256,256:$aos" \
      "d3q19_trt_pull:256,256,256:$lb/d3q19_trt_pull.toml" \
      "star3d_r4-f64:256,256,256:$STAR --dtype f64"
    # Eight D3Q19 SoA tiles no wider than a sector folded along x that older sweeps measured
    # (xfold-oos, aligned, timed, oos59), again with the twins of 0be80b8 (xf65/raw/run.sh).
    dir_sweeps xf65 "$m" "$x" "d3q19_srt_pull-soa:256,256,256:$lb/d3q19_srt_pull.toml"
    # What a user deploys: each kernel's 16 configurations the ranking put first (`--configs
    # top:16` with the binary of 1fedadd): the four kernels of the sweeps above
    # (top63/raw/run.sh) and the project's other stencils and LBM kernels at their files' element
    # type (top63/raw/run-more.sh). Not in the totals, which measure the visitor over the
    # configuration space: listed on their own line (TOPK), with the preset only.
    local before=$SWEEPS
    [ -n "$x" ] || dir_sweeps top63 "$m" "$x" "star3d_r4-f64:256,256,256:$STAR --dtype f64" \
      "box3d_r1-f32:256,256,256:$st/box3d_r1.toml --dtype f32" \
      "d3q19_srt_pull-soa:256,256,256:$lb/d3q19_srt_pull.toml" \
      "d3q19_srt_pull-aos:256,256,256:$aos" "star3d_r1-f64:256,256,256:$st/star3d_r1.toml" \
      "varcoeff3d_r1-f64:256,256,256:$st/varcoeff3d_r1.toml" \
      "star2d_r1-f64:4096,4096:$st/star2d_r1.toml" \
      "d3q19_srt_aa:256,256,256:$lb/d3q19_srt_aa.toml" \
      "d3q19_trt_pull:256,256,256:$lb/d3q19_trt_pull.toml" \
      "d3q27_trt_pull:256,256,256:$lb/d3q27_trt_pull.toml" \
      "d3q19_srt_push_aos:256,256,256:$lb/d3q19_srt_push_aos.toml" \
      "d2q9_srt_pull:4096,4096:$lb/d2q9_srt_pull.toml"
    # The ranking's new top 16 of D3Q19 push AoS after stop 64's push rule (top64/raw/run.sh).
    [ -n "$x" ] || dir_sweeps top64 "$m" "$x" \
      "d3q19_srt_push_aos:256,256,256:$lb/d3q19_srt_push_aos.toml"
    # Its top 8 at 128^3 and 64^3, where fewer sectors are partly written at a time
    # (dom64/raw/run.sh).
    if [ -z "$x" ]; then
      local dn
      for dn in 128 64; do
        RAW=dom64/raw OWN_ORDERS=dom64/raw/d3q19_srt_push_aos-$dn-compiled-order.txt \
          ORIGINAL=dom64/d3q19_srt_push_aos-$dn.json run d3q19_srt_push_aos-$dn \
          d3q19_srt_push_aos-$dn "$m" $dn,$dn,$dn "$lb/d3q19_srt_push_aos.toml"
        SWEEPS="$SWEEPS d3q19_srt_push_aos-$dn"
      done
    fi
    TOPK="${TOPK:-}${SWEEPS#"$before"}"
  fi
  if [ "$GPU" = h100 ]; then
    # Register spills: D3Q19 SoA and AoS at 1024-thread blocks (64 registers at most) and
    # 512-thread blocks folded 8 to 64 times (128), with the timed kernel's twin; 18 of the 25
    # SoA kernels spill (24 to 416 bytes of stack per thread), no AoS kernel does (spill/).
    for l in soa aos; do
      local lf=$HERE/lbm/d3q19_srt_pull.toml
      [ $l = soa ] || lf=$aos
      local places=$PL/float.txt
      [ $l = aos ] || places=
      RAW=spill/raw OWN_ORDERS=spill/raw/d3q19_srt_pull-$l-compiled-order.txt PLACES=$places \
        ORIGINAL=spill/d3q19_srt_pull-$l.json \
        run d3q19_srt_pull-$l-spill$x d3q19_srt_pull-$l "$m" 256,256,256 "$lf"
      SWEEPS="$SWEEPS d3q19_srt_pull-$l-spill$x"
    done
    # The D3Q19 AoS sweep's configurations again at 128^3, where the exact simulator reaches
    # (all but 128x2x2 fold 2x2x4, whose x-fold points overshoot 128), with the twin that reads
    # its compiled orders itself (aos128/).
    RAW=aos128/raw OWN_ORDERS=aos128/raw/d3q19_srt_pull-aos-128-compiled-order.txt \
      PLACES=$PL/float.txt \
      ORIGINAL=aos128/d3q19_srt_pull-aos-128.json \
      run d3q19_srt_pull-aos-128$x d3q19_srt_pull-aos-128 "$m" 128,128,128 "$aos"
    SWEEPS="$SWEEPS d3q19_srt_pull-aos-128$x"
    # An out-of-sample AoS sweep taken after the partly-written-sector rule (seed 7 and 8
    # unfolded blocks of 4 to 32 warps, raw/d3q19_srt_pull-aos-oos-extra.txt); the top 6 of
    # the step and of the reuse curve for the timed star3d_r4 f64 CUDA sweep (512^3), and its
    # 3 fastest (raw/star3d_r4-f64-512-top-configs.txt).
    if [ -z "$x" ]; then
      PLACES=$plain run d3q19_srt_pull-aos-oos d3q19_srt_pull-aos-oos "$m" 256,256,256 "$aos"
      SWEEPS="$SWEEPS d3q19_srt_pull-aos-oos"
    fi
    run star3d_r4-f64-512-top$x star3d_r4-f64-512-top "$m" 512,512,512 "$STAR" --dtype f64
    SWEEPS="$SWEEPS star3d_r4-f64-512-top$x"
    # Flat tiles folded 1x1x2 at 512^3, which the step, the curve and launch-order gaps rank
    # differently (raw/star3d_r4-f64-512-fold2-configs.txt).
    run star3d_r4-f64-512-fold2$x star3d_r4-f64-512-fold2 "$m" 512,512,512 "$STAR" --dtype f64
    SWEEPS="$SWEEPS star3d_r4-f64-512-fold2$x"
    # The same 15 and two more at 512 x NY x 512, NY = 256 ... 768: how far L2 keeps a z-halo
    # as the plane grows (l2-plane/, raw/configs.txt).
    for ny in 256 384 512 640 768; do
      RAW=l2-plane/raw run star3d_r4-f64-512x${ny}x512$x star3d_r4-f64-512x${ny}x512 "$m" \
        512,$ny,512 "$STAR" --dtype f64
      SWEEPS="$SWEEPS star3d_r4-f64-512x${ny}x512$x"
    done
  else
    # The same 17 at 512 x NY x 512, NY = 512 and 768, on this GPU (l2-plane/).
    for ny in 512 768; do
      RAW=l2-plane/raw run star3d_r4-f64-512x${ny}x512$x star3d_r4-f64-512x${ny}x512 "$m" \
        512,$ny,512 "$STAR" --dtype f64
      SWEEPS="$SWEEPS star3d_r4-f64-512x${ny}x512$x"
    done
  fi
}
sweeps "$M" ""
if [ "$GPU" = h200 ]; then
  # The machine-file experiment of the H200 run: the whole L2 effective. (The 28 KiB L1 of
  # carve-out 100 %, once the experiment file h200-l1-28k.toml, is now what the estimate takes
  # from ncu's shared-memory configuration of each launch.)
  # An experiment, not the preset: listed on its own, outside the totals.
  EARLY=1 run star3d_r4-f64-768-full-l2 star3d_r4-f64-768 "$HERE/bench/counters/h200-full-l2.toml" 768,768,64 "$STAR" --dtype f64
  SWEEPS="$SWEEPS star3d_r4-f64-768-full-l2"
  EXPERIMENTS="star3d_r4-f64-768-full-l2"
fi
# Every sweep again with the experiment file: on the H100 L2's measured misses by reuse distance
# and the measured L2 room of written data in place of the preset's step, on the H200 the step in
# place of the preset's measured curve.
sweeps "$EXP" "$XS"
EXPERIMENTS=${EXPERIMENTS:-} TOPK=${TOPK:-} BENCH=$HERE/bench python3 - "$OUT" "$XS" $SWEEPS <<'EOF'
import json, os, sys
from pathlib import Path
sys.path.insert(0, os.environ["BENCH"])
from benchlib import LEVELS, TOL  # noqa: E402
SHORT = ["L1req", "L1wf", "L2ld", "L2st", "DRld", "DRst"]
out, xs = Path(sys.argv[1]), sys.argv[2]
print(f"{'sweep':38} {'n':>3}  " + "  ".join(f"{s:>27}" for s in SHORT))
print(f"{'':38} {'':>3}  " + "  ".join(f"{'in10% med/p90/max abs':>27}" for _ in SHORT))
reports = {f: json.load(open(out / f"{f}.json")) for f in sys.argv[3:]}
for f, s in reports.items():
    cells = []
    for lv in LEVELS:
        e = next(x for x in s["summary"] if x["level"] == lv)
        cells.append(f"{e['within_tolerance']*100:3.0f}% {e['median_abs']*100:5.1f}/"
                     f"{e['p90_abs']*100:5.1f}/{e['max_abs']*100:6.1f}")
    print(f"{f:38} {len(s['records']):3}  " + "  ".join(f"{c:>27}" for c in cells))


def within(name, level):
    """Configurations of sweep `name` whose `level` is within ±10 %, and all of them."""
    recs = reports[name]["records"]
    i = LEVELS.index(level)
    return sum(1 for r in recs if r["errors"][i] is not None and abs(r["errors"][i]) <= TOL), len(recs)


# Totals: every sweep with the preset, and the sweeps both the preset and the experiment file
# re-analysed (the experiment file skips some), each way. Other experiments (another machine file
# for one sweep, `EXPERIMENTS`) count in neither; the ranking's top configurations (`TOPK`) have
# a line of their own.
names = list(reports)
other = os.environ.get("EXPERIMENTS", "").split()
top = os.environ.get("TOPK", "").split()
exp = [n for n in names if n.endswith(xs)]
preset = [n for n in names if n not in exp and n not in other and n not in top]
both = [n for n in preset if n + xs in exp]
groups = [("all sweeps, preset", preset), ("both variants, preset", both),
          ("both variants, experiment file", [n + xs for n in both])]
if top:
    groups.append(("rankings' top configurations (12 kernels; push AoS twice, and at 128^3, 64^3), preset", [n for n in top if not n.endswith(xs)]))
for label, group in groups:
    cells = []
    for lv in ("l2_load", "dram_load", "dram_store"):
        k, n = map(sum, zip(*(within(g, lv) for g in group)))
        cells.append(f"{lv} {k} of {n} ({100 * k / n:.0f} %)")
    print(f"{label:32} " + ", ".join(cells))
EOF
