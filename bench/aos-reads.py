#!/usr/bin/env python3
"""Why the D3Q19 AoS tiles folded 4 points or more miss L2 on nearly every read (issue 8).

In the committed AoS counter sweeps, tiles with 4 or more folded points read up to 2.5 times the
estimated DRAM load, their L2 read lookup misses reaching 70-144 % of the L2 reads, while the
visitor keeps the reuses 1 to 6 steps apart (neighbouring blocks' loads of one record's
components) at 3-17 MiB (bench/results/h100/counters/README.md, "D3Q19 AoS folded"). This takes
the kernels apart. For each configuration it emits the CUDA twin of `d3q19_srt_pull_aos` and
launches, under Nsight Compute (caches flushed before each launch, `--clock-control none`):

- `orig`: the twin as emitted (19 one-word stores per point into 76-byte records, partly
  written sectors until the neighbouring words arrive);
- `soa`: the same loads and arithmetic, every store redirected to the same cell of a
  structure-of-arrays output (component c of cell i at c·cells + i): a warp's stores fill whole
  sectors, nothing is partly written;
- `nostore`: the same loads and arithmetic, the 19 values of each point summed into a register
  and one word stored per thread at the end: hardly any write traffic.

If the read misses fall in `soa` and `nostore`, the stores take the reads' place in L2 (written
data's room, or the limit on partly written sectors); if they stay, the loads' own pattern does.

The set `layout` takes the loads apart in turn, all as `nostore`: the input's records padded from
19 to 20 or 32 words (`pad20`, `pad32`: the same cells and components at other addresses, so
other L2 sets and partitions), and the kernel at one block per SM (`1bps`, a dynamic shared
allocation of more than half the SM's shared memory: fewer requests in flight).

The set `occupancy` runs the `nostore` twin of three folded tiles and an unfolded one at 1, 2, 4
and 8 blocks per SM (a dynamic shared allocation of a 1/N share of the SM's 228 KiB, less the
1 KiB each block reserves; the natural occupancy where lower), for the visitor's estimate at the
same blocks per SM (`stencilscope volumes --blocks-per-sm N`).
The set `fence` runs folded tiles whose compiled code interleaves several fold points' stores
(the timed kernel's float options, `--ftz=true --prec-div=false --prec-sqrt=false`, as the
`timed-twin/` and `spill/` sweeps) as emitted (`orig`) and with `__threadfence_block()` between
fold points (`fence`): each fold point's 19 stores then go out before the next fold point's
memory accesses, one record per thread partly written at a time. If the record sectors L2
writes back early (DRAM write beyond the output) fall to what tiles without interleaved stores
lose, the interleaving is what costs them; with two unfolded controls.

The set `occstore` asks what makes the interleaved stores cost: the same compiled code at fewer
blocks per SM. Tiles whose compiled code interleaves fold points' stores lose 0.35-0.88 of their
record sectors at 28-36 warps per SM and 0.09-0.16 at 40-48 (`bench/aos-store-share.py`); but
the latter also have fewer registers (40 against 64). Each tile runs as emitted, then under a
fixed carve-out (a 192 KiB L1 in every launch) at its own occupancy and at fewer blocks per SM,
held there by dynamic shared memory (`OCCSTORE_PLAN`). The DRAM reads of the same launches say
how the L2 misses of folded AoS re-fetches follow the occupancy at a fixed L1.

The set `cg` reads every load through L2 only (`__ldcg`: L1 bypassed), at the tiles' own
occupancy and at fewer blocks per SM (`CG_PLAN`): every reuse of the pull pattern then reaches L2
at the gap the code gives it, so L2's hits are measured without L1's re-fetch timing in between,
against the visitor with an L1 of one line.

The set `cgstores` holds three folded `cg` twins at 48 warps per SM and takes their stores
apart as `stores` does (`CGSTORES_PLAN`): summed into one word, or sent to a structure-of-arrays
output.

The set `spin` runs the `cg` twin with every warp waiting a fixed number of cycles after each
load (`SPIN_PLAN`, `SPINS`): the same accesses in the same order GPU-wide, further apart in time.
L2 misses that stay come from the data between two accesses; misses that fall came from a sector
asked for again while its fill was still on its way.

The set `options` compiles unfolded tiles three ways (`OPTIONS_PLAN`): without the float options
(`optplain`: 32 registers, the 19 stores spread among the collision's arithmetic), with them
(`optfloat`: 40 registers, the stores back to back) and with them at full occupancy
(`optfloatfull`: `__launch_bounds__` asking for 2048 threads per SM, which holds them to 32
registers; NVRTC's `--maxrregcount` does not lower a kernel with launch bounds). The record sectors
L2 writes back early then say whether the float options' lower share comes from the stores'
spacing or from the occupancy.

The set `occunfolded` holds unfolded tiles, compiled without the float options (32 registers),
at fewer blocks per SM than fit, as `occstore` does (`OCCUNFOLDED_PLAN`: a 192 KiB L1 in every
launch, dynamic shared memory for the blocks per SM): how the share of record sectors written
back early falls with the warps per SM at a fixed L1.

Every launch is checked: `orig`, `fence`, the `occstore`, `cg` and `spin` launches and `soa` against a reference evaluated from the formula printed
in the source (float64, on a slab of 8 planes), `nostore` by the sum of its words against the sum
of `orig`'s output (relative 1e-4).

usage (GPU, CuPy, ncu, the stencilscope binary):
  bench/aos-reads.py measure BIN OUT.json [stores|layout|occupancy|fence|occstore|cg|spin|cgstores|
                                           options|occunfolded]
  bench/aos-reads.py summary OUT.json
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import (FLOAT_OPTIONS, block_share, emit_cuda, lbm_aos_reference,  # noqa: E402
                      measure_twins, set_carveout, twin_results)

HERE = os.path.dirname(os.path.abspath(__file__))
KERNEL = os.path.join(HERE, "counters", "d3q19_srt_pull_aos.toml")
DOMAIN = "256,256,256"
COMPONENTS = 19
# The worst folded tiles of the H100 AoS sweeps (DRAM load estimated / measured in B/LUP), and two
# unfolded controls estimated within ±10 %.
PLAN = [
    ((4, 1, 32), (2, 2, 1)),    # 194 / 305
    ((1, 2, 32), (4, 2, 1)),    # 283 / 698
    ((128, 2, 2), (2, 2, 4)),   # 214 / 360
    ((32, 2, 2), (1, 4, 1)),    # 134 / 199
    ((32, 1, 8), (2, 2, 4)),    # 182 / 240
    ((128, 1, 1), (1, 1, 1)),   # 131 / 126
    ((16, 4, 16), (1, 1, 1)),   # 135 / 131
]
VARIANTS = ("orig", "soa", "nostore")
# The sets `layout` and `occupancy`: variant, words per input record, dynamic shared bytes per
# block (`bpsN`: a 1/N share of the SM's shared memory less the 1 KiB a block reserves and 256
# bytes to spare).
LAYOUTS = {"nostore": (19, 0), "pad20": (20, 0), "pad32": (32, 0), "1bps": (19, 120 << 10)}
# The set `occupancy`: the tiles, and the blocks per SM each runs at (`bpsN` variants).
OCCUPANCY_PLAN = [((4, 1, 32), (2, 2, 1)), ((128, 2, 2), (2, 2, 4)), ((32, 1, 8), (2, 2, 4)),
                  ((128, 1, 1), (1, 1, 1))]
BPS = (1, 2, 4, 8)
LAYOUTS.update({f"bps{n}": (19, block_share(n)) for n in BPS})
# The set `fence`: folded tiles whose compiled code interleaves fold points' stores (their loss of
# record sectors, spill/ and timed-twin/: 0.67-0.88), and two controls that do not (0.38, 0.45).
FENCE_PLAN = [((64, 8, 1), (2, 2, 4)), ((16, 8, 4), (2, 2, 4)), ((8, 8, 8), (4, 2, 2)),
              ((128, 2, 2), (2, 2, 4)), ((32, 8, 4), (2, 2, 1)), ((16, 64, 1), (2, 2, 1)),
              ((64, 16, 1), (1, 1, 1)), ((8, 8, 16), (1, 1, 2))]
# The set `occstore`: tiles at fewer blocks per SM than they run at, with the L1 the same in
# every launch (carve-out 28 %: a 64 KiB shared-memory configuration, a 192 KiB L1) and the timed
# kernel's float options; each tile as emitted (`orig`, the default carve-out), at its own
# occupancy under the carve-out (`c64`) and at N blocks per SM (`c64bpsN`, a dynamic shared
# allocation of a 1/N share of 64 KiB less the 1 KiB a block reserves and 256 bytes to spare).
# Two interleave fold points' stores at 40 registers and 6 blocks per SM (losing 0.10 of their
# record sectors in timed-twin/), two at 64 registers and 2-4 blocks per SM (0.72, 0.88), one
# does not interleave (0.05), and one unfolded-ish tile whose L2 re-fetches the visitor keeps.
OCCSTORE_PLAN = [((4, 1, 64), (2, 1, 1), (4, 2)), ((4, 16, 4), (4, 1, 2), (2,)),
                 ((32, 1, 8), (2, 2, 4), (2, 1)), ((128, 2, 2), (2, 2, 4), (1,)),
                 ((32, 4, 2), (1, 1, 2), (4, 2)), ((4, 1, 32), (2, 2, 1), (8, 4, 2))]
# The set `cg`: the loads read through L2 only (`__ldcg`, L1 bypassed), so that every reuse of
# the pull pattern reaches L2 at the gap the code gives it, at the tiles' own occupancy (`cg`)
# and at N blocks per SM (`cgbpsN`, dynamic shared memory as in `occupancy`); with `orig`.
CG_PLAN = [((4, 1, 32), (2, 2, 1), (4, 2)), ((128, 2, 2), (2, 2, 4), (1,)),
           ((32, 1, 8), (2, 2, 4), (2, 1)), ((4, 1, 64), (2, 1, 1), (2,)),
           ((128, 1, 1), (1, 1, 1), (4,)), ((16, 4, 16), (1, 1, 1), (1,))]
# The set `spin`: the `cg` twin at its own occupancy with every warp waiting SPIN cycles after
# each load (`cgspinSPIN`): the same accesses in the same order GPU-wide, further apart in time.
# If L2 loses the short reuses by capacity (the data between two accesses), the misses stay; if
# by time (a sector asked for again while its fill is still on its way), they fall.
SPIN_PLAN = [((4, 1, 32), (2, 2, 1)), ((128, 2, 2), (2, 2, 4)), ((32, 1, 8), (2, 2, 4))]
SPINS = (0, 400, 1600, 6400)
SPIN_FN = ("__device__ __forceinline__ void ss_spin(long long n)\n{\n"
           "    const long long t0 = clock64();\n    while (clock64() - t0 < n) {\n    }\n"
           "    asm volatile(\"\" ::: \"memory\");\n}\n")
# The set `cgstores`: the `cg` twins of three folded tiles held at the blocks per SM the `cg` set
# found them at (48 warps), as emitted (`cgbpsN`), with the 19 values of a point summed into one
# word (`cgnostorebpsN`) and with the stores sent to a structure-of-arrays output
# (`cgsoabpsN`): whether L2 loses their reuses to the partly written records, to any writes, or
# to the loads alone.
CGSTORES_PLAN = [((4, 1, 32), (2, 2, 1), 12), ((128, 2, 2), (2, 2, 4), 3),
                 ((32, 1, 8), (2, 2, 4), 6)]
# The set `options`: unfolded tiles of 4, 8 and 16 warps.
OPTIONS_PLAN = [((128, 1, 1), (1, 1, 1), None), ((64, 2, 1), (1, 1, 1), None),
                ((256, 1, 1), (1, 1, 1), None), ((16, 8, 4), (1, 1, 1), None),
                ((8, 8, 8), (1, 1, 1), None)]
# The set `occunfolded`: unfolded tiles of 4, 8 and 16 warps, and the blocks per SM each runs at
# besides its own (16, 8, 4).
OCCUNFOLDED_PLAN = [((128, 1, 1), (1, 1, 1), (14, 12, 10, 8)), ((8, 8, 4), (1, 1, 1), (7, 6, 4)),
                    ((8, 8, 8), (1, 1, 1), (3, 2))]
OCCSTORE_CARVEOUT = 28
OCCSTORE_SHARED = 64 << 10
FOLD = "    // fold point"
LOAD = re.compile(r"fld_src\[base_src \+ (\d+)\]")
METRICS = [
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "lts__t_sectors_srcunit_tex_op_read.sum",
    "lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum",
    "lts__t_sectors_srcunit_tex_op_write.sum",
    "lts__d_sectors_fill_device.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "gpu__time_duration.sum",
    # What the launch got (the sets before `occupancy` were measured without these two).
    "launch__shared_mem_config_size",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
]
STORE = re.compile(r"fld_dst\[base_dst \+ (\d+)\] = (.*);")
# The slab the reference is evaluated on: 8 planes of interior cells from z = 1.
SLAB = 8


# The sets whose launches differ per tile: the tiles `(block, fold, argument)`, the launches of a
# tile from its argument as `(variant, launch settings)` (a carve-out, dynamic shared bytes; keys
# left out are not set), and the metrics beyond METRICS.
SHARE_METRICS = ["launch__occupancy_limit_shared_mem", "launch__registers_per_thread"]
TILE_SETS = {
    "occstore": (OCCSTORE_PLAN, lambda bps: [
        ("orig", {"carveout": None, "shared": 0}),
        ("c64", {"carveout": OCCSTORE_CARVEOUT, "shared": 0}),
        *((f"c64bps{n}", {"carveout": OCCSTORE_CARVEOUT,
                          "shared": block_share(n, OCCSTORE_SHARED)}) for n in bps)],
        SHARE_METRICS),
    "cg": (CG_PLAN, lambda bps: [
        ("orig", {"shared": 0}), ("cg", {"shared": 0}),
        *((f"cgbps{n}", {"shared": block_share(n)}) for n in bps)], SHARE_METRICS),
    "cgstores": (CGSTORES_PLAN, lambda n: [
        ("orig", {"shared": 0}),
        *((f"{form}bps{n}", {"shared": block_share(n)})
          for form in ("cg", "cgnostore", "cgsoa"))], SHARE_METRICS),
    "options": (OPTIONS_PLAN, lambda _: [
        ("optplain", {"options": []}), ("optfloat", {"options": list(FLOAT_OPTIONS)}),
        ("optfloatfull", {"options": list(FLOAT_OPTIONS)})],
        ["launch__registers_per_thread", "launch__occupancy_limit_registers",
         "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum"]),
    "occunfolded": (OCCUNFOLDED_PLAN, lambda bps: [
        ("orig", {"carveout": None, "shared": 0, "options": []}),
        ("c64", {"carveout": OCCSTORE_CARVEOUT, "shared": 0, "options": []}),
        *((f"c64bps{n}", {"carveout": OCCSTORE_CARVEOUT, "options": [],
                          "shared": block_share(n, OCCSTORE_SHARED)}) for n in bps)],
        SHARE_METRICS),
    "spin": ([(block, fold, None) for block, fold in SPIN_PLAN],
             lambda _: [("orig", {}), *((f"cgspin{n}", {}) for n in SPINS)],
             ["launch__registers_per_thread", "launch__occupancy_limit_registers"]),
}


def variant(src, which, cells):
    """The source of a variant (see the module text); `cells` is the grid's cell count."""
    if which in LAYOUTS and which != "nostore":
        words = LAYOUTS[which][0]
        out = variant(src, "nostore", cells)
        if words != COMPONENTS:
            # base_src and every offset's cell part are multiples of the record (19 words).
            def pad(m):
                k = int(m.group(1))
                c = k % COMPONENTS
                return f"fld_src[(long)((base_src + {k - c}) / {COMPONENTS}) * {words}L + {c}]"
            out = LOAD.sub(pad, out)
        return out
    if which == "optfloatfull":
        # Launch bounds asking for a full SM (2048 threads): 32 registers at most.
        return re.sub(r"__launch_bounds__\((\d+)\)",
                      lambda m: f"__launch_bounds__({m.group(1)}, {2048 // int(m.group(1))})",
                      src, count=1)
    if which == "orig" or which.startswith(("c64", "opt")):
        # `c64...` and `opt...` differ from `orig` in how they are launched or compiled only.
        return src
    if which.startswith("cgspin"):
        spin = int(which[len("cgspin"):])
        out = LOAD.sub(lambda m: f"__ldcg(&fld_src[base_src + {m.group(1)}]); ss_spin({spin})",
                       src)
        return SPIN_FN + out
    if which.startswith("cg"):
        # cgnostore..., cgsoa...: the `nostore` or `soa` form, its loads through L2 only.
        base = next((variant(src, form, cells) for form in ("nostore", "soa") if form in which),
                    src)
        return LOAD.sub(lambda m: f"__ldcg(&fld_src[base_src + {m.group(1)}])", base)
    if which == "fence":
        # Every fold point after the first begins once the ones before have stored.
        first = src.find(FOLD)
        rest = src[first + len(FOLD):].replace(FOLD, "    __threadfence_block();\n" + FOLD)
        return src[:first + len(FOLD)] + rest
    stores = STORE.findall(src)
    if len(stores) % COMPONENTS != 0 or not stores:
        sys.exit(f"expected stores of {COMPONENTS} components, found {len(stores)}")
    if which == "soa":
        # base_dst and every offset's cell part are multiples of the record (19 words).
        def soa(m):
            k = int(m.group(1))
            c = k % COMPONENTS
            return (f"fld_dst[{c}L * {cells}L + (long)((base_dst + {k - c}) / {COMPONENTS})]"
                    f" = {m.group(2)};")
        return STORE.sub(soa, src)
    # nostore: the kernel's stores summed into `acc`, one word per thread at the end.
    out = STORE.sub(lambda m: f"acc += {m.group(2)};", src)
    out = out.replace("const int base_dst", "float acc = 0.0f;\n    const int base_dst", 1)
    tid = ("(((long)blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x) * "
           "(blockDim.x * blockDim.y * blockDim.z) + (threadIdx.z * blockDim.y + threadIdx.y) * "
           "blockDim.x + threadIdx.x")
    end = out.rstrip().rfind("}")
    return out[:end] + f"    fld_dst[{tid}] = acc;\n}}\n"


def launch(plan_path):
    import cupy as cp

    ref_sum = {}
    for pt in json.load(open(plan_path))["points"]:
        ext = pt["ext"]
        cells = ext[0] * ext[1] * ext[2]
        words, shared = LAYOUTS.get(pt["variant"], (COMPONENTS, pt.get("shared", 0)))
        rng = cp.random.default_rng(1)
        # Populations near 1/19 each, so that rho is near 1 (the same values whatever the
        # padding: the padded words stay zero).
        u = cp.zeros((ext[2], ext[1], ext[0], words), dtype=cp.float32)
        u[..., :COMPONENTS] = (0.04 + 0.02 * rng.random((ext[2], ext[1], ext[0], COMPONENTS),
                                                         dtype=cp.float64)).astype(cp.float32)
        v = cp.zeros(cells * COMPONENTS, dtype=cp.float32)
        kern = cp.RawKernel(pt["source"], pt["name"], options=tuple(pt.get("options", ())))
        if pt.get("carveout") is not None:
            set_carveout(kern, pt["carveout"])
        if shared:
            kern.max_dynamic_shared_size_bytes = shared
        kern(tuple(pt["grid"]), tuple(pt["block"]), (u, v), shared_mem=shared)
        cp.cuda.runtime.deviceSynchronize()
        what = f"{pt['block']} fold {pt['fold']} {pt['variant']}"
        key = (tuple(pt["block"]), tuple(pt["fold"]))
        if pt["variant"] in LAYOUTS or "nostore" in pt["variant"]:
            got = float(v.sum(dtype=cp.float64))
            want = ref_sum.get(key)
            if want is None:
                sys.exit(f"{what}: launch `orig` first")
            if not abs(got - want) <= 1e-4 * abs(want):
                sys.exit(f"{what}: sum {got} against orig's {want}")
            continue
        if pt["variant"] in ("orig", "fence") or (pt["variant"].startswith(("c64", "cg", "opt"))
                                                 and "soa" not in pt["variant"]):
            out = v.reshape(ext[2], ext[1], ext[0], COMPONENTS)
            slab = cp.moveaxis(out[1:1 + SLAB, 1:-1, 1:-1, :], 3, 0)
            ref_sum[key] = float(out[1:-1, 1:-1, 1:-1, :].sum(dtype=cp.float64))
        else:
            out = v.reshape(COMPONENTS, ext[2], ext[1], ext[0])
            slab = out[:, 1:1 + SLAB, 1:-1, 1:-1]
        ref = lbm_aos_reference(cp, u[..., :COMPONENTS], pt["source"], SLAB)
        err = float(cp.max(cp.abs(slab - ref)) / cp.max(cp.abs(ref)))
        if not err <= 1e-5:
            sys.exit(f"{what}: result differs from the reference ({err:.2e})")
        del u, v


def measure(binary, out_path, which_set):
    points = []
    sets = {"stores": (PLAN, VARIANTS),
            "layout": (PLAN, ("orig", "nostore", "pad20", "pad32", "1bps")),
            "occupancy": (OCCUPANCY_PLAN, ("orig", *(f"bps{n}" for n in BPS))),
            "fence": (FENCE_PLAN, ("orig", "fence"))}
    if which_set in TILE_SETS:
        plan, launches, extra = TILE_SETS[which_set]
        tiles = [(block, fold, launches(arg)) for block, fold, arg in plan]
        options, metrics = list(FLOAT_OPTIONS), METRICS + extra
    else:
        plan, variants = sets[which_set]
        tiles = [(block, fold, [(which, {}) for which in variants]) for block, fold in plan]
        options = list(FLOAT_OPTIONS) if which_set == "fence" else []
        metrics = METRICS
    for block, fold, tile_launches in tiles:
        src, grid, ext, name = emit_cuda(binary, KERNEL, block, fold, "f32", DOMAIN)
        cells = ext[0] * ext[1] * ext[2]
        # `orig` is launched first: the checks of the `nostore` forms need its sum.
        for which, settings in tile_launches:
            points.append({"block": list(block), "fold": list(fold), "variant": which,
                           "grid": grid, "ext": ext, "name": name, "options": options,
                           **settings, "source": variant(src, which, cells)})
    measure_twins(__file__, points, metrics, out_path, DOMAIN)


def summary(path):
    d, updates = twin_results(path)
    print(f"# D3Q19 AoS reads with the stores taken apart, on the {d['device']} (issue 8)\n")
    print(f"Measured {d['date'][:10]}, driver {d['driver']}, commit {d['commit']}, domain "
          f"{'×'.join(map(str, d['domain']))}. B/LUP; `miss` is the L2 read lookup misses over "
          "the L2 reads.\n")
    print("| block | fold | variant | L1 ld | L2 rd | L2 rd miss | miss | L2 wr | fills | DRAM rd | "
          "DRAM wr | record sectors lost | time µs | shared config KiB | blocks per SM (shared) "
          "| warps active % | registers |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in d["results"]:
        c = {k: v / updates for k, v in r["counters"].items()}
        rd = 32 * c["lts__t_sectors_srcunit_tex_op_read.sum"]
        miss = 32 * c["lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum"]
        print(f"| {'×'.join(map(str, r['block']))} | {'×'.join(map(str, r['fold']))} | "
              f"{r['variant']} | {32 * c['l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum']:.1f} | "
              f"{rd:.1f} | {miss:.1f} | {miss / rd:.2f} | "
              f"{32 * c['lts__t_sectors_srcunit_tex_op_write.sum']:.1f} | "
              f"{32 * c['lts__d_sectors_fill_device.sum']:.1f} | "
              f"{c['dram__bytes_read.sum']:.1f} | {c['dram__bytes_write.sum']:.1f} | "
              # DRAM write beyond the 76-byte record over a record's 2.375 sectors (76 bytes).
              f"{(c['dram__bytes_write.sum'] - 4 * COMPONENTS) / (4 * COMPONENTS):.2f} | "
              f"{r['counters']['gpu__time_duration.sum'] / 1e3:.0f} | "
              f"{cell(r, 'launch__shared_mem_config_size', 1 / 1024)} | "
              f"{cell(r, 'launch__occupancy_limit_shared_mem', 1)} | "
              f"{cell(r, 'sm__warps_active.avg.pct_of_peak_sustained_active', 1)} | "
              f"{cell(r, 'launch__registers_per_thread', 1)} |")


def cell(r, metric, scale):
    """A launch's counter as a table cell, scaled (empty where the run did not measure it)."""
    v = r["counters"].get(metric)
    return "" if v is None else f"{v * scale:.0f}"


if __name__ == "__main__":
    a = sys.argv[1:]
    if a[:1] == ["launch"] and len(a) == 2:
        launch(a[1])
    elif a[:1] == ["measure"] and len(a) in (3, 4) and a[3:] in (
            [], ["stores"], ["layout"], ["occupancy"], ["fence"], ["occstore"], ["cg"], ["spin"],
            ["cgstores"], ["options"], ["occunfolded"]):
        measure(a[1], a[2], (a[3:] or ["stores"])[0])
    elif a[:1] == ["summary"] and len(a) == 2:
        summary(a[1])
    else:
        sys.exit(__doc__)
