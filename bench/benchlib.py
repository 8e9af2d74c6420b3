"""Helpers shared by the issue-8 scripts in bench/ (imported, not run)."""
import csv
import datetime
import io
import os
import re
import json
import subprocess
import sys
import tempfile
from pathlib import Path


def parse_twin(src):
    """What a generated CUDA source says about its launch: `(grid, first input's extent x,y,z,
    kernel name)`."""
    grid = [int(g) for g in re.search(r"blocks \[(\d+), (\d+), (\d+)\]", src).groups()]
    ext = [int(e) for e in re.search(r"input \d+ elements, extent \[(\d+), (\d+), (\d+)\]",
                                     src).groups()]
    name = re.search(r"__global__ void (?:__launch_bounds__\(\d+\) )?(\w+)\(", src).group(1)
    return grid, ext, name


def emit_cuda(binary, kernel, block, fold, dtype, domain):
    """The CUDA twin of one configuration: `(source, grid, input extent x,y,z, kernel name)`."""
    cmd = [binary, "emit", kernel, "--target", "cuda", "--block", ",".join(map(str, block)),
           "--fold", ",".join(map(str, fold)), "--dtype", dtype, "--domain", domain]
    src = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return (src, *parse_twin(src))


# CUDA lines naming a thread's linear index in its block (`ss_lin`), the block's warps
# (`ss_wpb`) and the block's linear index (`ss_blk`), for a per-warp stamp record.
WARP_IDS = """    const unsigned ss_lin = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const unsigned ss_wpb = (blockDim.x * blockDim.y * blockDim.z + 31) / 32;
    const unsigned long long ss_blk = blockIdx.x + (unsigned long long)gridDim.x * (blockIdx.y + (unsigned long long)gridDim.y * blockIdx.z);
"""


def stamp_fold_points(src, clock, ready=False):
    """The generated CUDA source with a record per warp, written by lane 0 into an extra last
    argument `ss_ts`: the SM, then the clock register `clock` (`clock64` or `globaltimer`) at
    the start of every fold point and at the end, and with `ready` then at every fold point's
    first store to the output (its loads' values are back: the stored value needs them); `(source,
    the fold points' (i, j, k) in their order)`."""
    lines = src.split("\n")
    out = []
    points = []
    sig = None
    pending = False
    nf_all = len(re.findall(r"^\s*// fold point \(i, j, k\)", src, re.M))
    dst = re.search(r"^// (\w+): output ", src, re.M).group(1) if ready else None
    first_store = False
    for line in lines:
        if dst and first_store and re.match(rf"\s*{dst}\[.*\] =", line):
            out.append(f"    SS_STAMP({nf_all + 1 + len(points)});")
            first_store = False
        if line.startswith('extern "C" __global__'):
            sig = len(out)
            line = line.rstrip()
            assert line.endswith(")"), line
            line = line[:-1] + ", unsigned long long* __restrict__ ss_ts)"
        m = re.match(r"\s*// fold point \(i, j, k\) = \((\d+), (\d+), (\d+)\)", line)
        if m:
            points.append(tuple(int(g) for g in m.groups()))
            pending = True
            first_store = True
        elif pending and line.endswith("{"):
            # Before the fold point's block (plain or guarded), so that every warp stamps it;
            # after the declarations of the values it keeps in registers.
            out.append(f"    SS_STAMP({len(points)});")
            pending = False
        out.append(line)
    assert sig is not None and points, "not a generated CUDA kernel"
    nf = len(points)
    # The kernel body ends with the last line "}"; the end stamp goes before it.
    end = max(i for i, l in enumerate(out) if l == "}")
    out.insert(end, f"    SS_STAMP({nf + 1});")
    # Per warp record: SM, then the clock at each fold point's start and at the end (and at
    # each fold point's first store).
    width = nf + 2 + (nf if ready else 0)
    prologue = f"""
{WARP_IDS}    unsigned long long* ss_rec = ss_ts + (ss_blk * ss_wpb + ss_lin / 32) * {width};
    if (ss_lin % 32 == 0) {{ unsigned smid; asm volatile("mov.u32 %0, %%smid;" : "=r"(smid)); ss_rec[0] = smid; }}
#define SS_STAMP(k) do {{ unsigned long long t_; asm volatile("mov.u64 %0, %%{clock};" : "=l"(t_) :: "memory"); if (ss_lin % 32 == 0) ss_rec[k] = t_; }} while (0)"""
    body = out.index("{", sig)
    out.insert(body + 1, prologue)
    return "\n".join(out), points


# Variants of a stencil twin whose loads take their index modulo a period (elements), with an
# input that repeats with it (the same result): `l1`, every load hits L1 (8 KiB in f64); `l2`,
# the loads reach L2 as emitted but the input stays there (4 MiB in f64).
LOAD_PERIODS = {"l1": 1024, "l2": 1 << 19}


def redirect_loads(src, period):
    """A stencil twin's source with every load of the input `fld_u` at its index modulo
    `period`."""
    out, n = re.subn(r"(fld_u\[)(base_u \+ -?\d+)\]", rf"\1(\2) % {period}]", src)
    if n == 0:
        sys.exit("no load of fld_u found to redirect")
    return out


def periodic_input(cp, ext, dtype, period):
    """An input of extent `ext` (x, y, z) repeating `period` random elements (reproducible)."""
    ty = cp.float64 if dtype == "f64" else cp.float32
    n = ext[0] * ext[1] * ext[2]
    one = cp.random.default_rng(1).random(period, dtype=cp.float64).astype(ty)
    return cp.tile(one, -(-n // period))[:n].reshape(ext[::-1])


def lbm_formula(src):
    """An LBM kernel's formula, as its generated source prints it, as Python statements over
    `S(dx, dy, dz, c)` (the input's component c at the neighbour) and `FMA`, with the outputs
    assigned to `OUT[c]`."""
    lines = []
    for lhs, rhs in re.findall(r"^//   (\S+) = (.*)$", src, re.M):
        rhs = re.sub(r"src\[(-?\d+),(-?\d+),(-?\d+)\]\((\d+)\)", r"S(\1, \2, \3, \4)", rhs)
        rhs = rhs.replace("fma(", "FMA(")
        out = re.fullmatch(r"dst\[0,0,0\]\((\d+)\)", lhs)
        lines.append(f"OUT[{out.group(1)}] = {rhs}" if out else f"{lhs} = {rhs}")
    return "\n".join(lines)


# Planes of interior cells an LBM twin's output is checked on (the formula evaluated in float64).
LBM_SLAB = 8


def lbm_soa_layout(src):
    """`(components, extent x,y,z, ghost layers)` of a structure-of-arrays LBM twin's input, from
    its source's header; exits for other layouts."""
    m = re.search(r"^// fld_src: input \d+ elements, extent \[(\d+), (\d+), (\d+)\] x (\d+) "
                  r"components, strides \[1, (\d+), (\d+)\] q (\d+)$", src, re.M)
    if not m:
        sys.exit("not a structure-of-arrays LBM twin")
    ext = [int(m.group(i)) for i in (1, 2, 3)]
    if int(m.group(7)) != ext[0] * ext[1] * ext[2]:
        sys.exit("components not stored one after another")
    dom = int(re.search(r"domain (\d+)x", src).group(1))
    return int(m.group(4)), ext, (ext[0] - dom) // 2


def lbm_soa_fields(cp, src):
    """Input and output of a structure-of-arrays LBM twin: populations near 1/19 each (density
    near 1), reproducible; zeros."""
    comps, ext, _ = lbm_soa_layout(src)
    n = comps * ext[0] * ext[1] * ext[2]
    u = (0.04 + 0.02 * cp.random.default_rng(1).random(n, dtype=cp.float64)).astype(cp.float32)
    return u, cp.zeros_like(u)


def lbm_aos_reference(cp, u, src, slab):
    """An array-of-structures LBM twin's outputs on `slab` planes of interior cells (component,
    z, y, x), float64, from the formula in its source; `u` is the input as (z, y, x, component)
    with one ghost layer."""
    n = [s - 2 for s in u.shape[:3]]

    def S(dx, dy, dz, c):
        return u[1 + dz:1 + dz + slab, 1 + dy:1 + dy + n[1], 1 + dx:1 + dx + n[2], c].astype(
            cp.float64)

    env = {"S": S, "FMA": lambda a, b, c: a * b + c, "OUT": {}}
    exec(lbm_formula(src), env)
    return cp.stack([env["OUT"][c] for c in range(u.shape[3])])


# NVRTC's float options of `run --backend cuda` (`src/runtime/cuda.rs`, NVRTC_FLOAT_OPTIONS),
# with which the D3Q19 twins of the counter sweeps ran.
FLOAT_OPTIONS = ("--ftz=true", "--prec-div=false", "--prec-sqrt=false")


def lbm_aos_fields(cp, ext, comps):
    """Input `(z, y, x, component)` of an array-of-structures LBM twin of input extent `ext`
    (x, y, z) with `comps` components per cell, populations near 1/`comps` each (density near
    1), reproducible; and a zero output of the same size, flat."""
    rng = cp.random.default_rng(1)
    u = (0.04 + 0.02 * rng.random((ext[2], ext[1], ext[0], comps), dtype=cp.float64)).astype(
        cp.float32)
    return u, cp.zeros(u.size, dtype=cp.float32)


def check_lbm_aos(cp, u, v, src, ext, what):
    """The largest error of an array-of-structures LBM twin's output `v` on `LBM_SLAB` planes of
    interior cells, relative to the formula in its source evaluated in float64; `u` is `(z, y,
    x, component)` with one ghost layer; exits with a message naming `what` above 1e-5."""
    comps = u.shape[3]
    ref = lbm_aos_reference(cp, u, src, LBM_SLAB)
    out = v.reshape(ext[2], ext[1], ext[0], comps)
    got = cp.moveaxis(out[1:1 + LBM_SLAB, 1:-1, 1:-1, :], 3, 0)
    err = float(cp.max(cp.abs(got - ref)) / cp.max(cp.abs(ref)))
    if not err <= 1e-5:
        sys.exit(f"{what}: result differs from the reference ({err:.2e})")
    return err


def lbm_layout(src):
    """`(components, aos)` of an LBM twin (`components` 1 for a stencil): whether its input
    keeps a cell's components next to each other (array of structures)."""
    m = re.search(r"^// fld_\w+: input .* x (\d+) components, strides \[(\d+),", src, re.M)
    if not m:
        return 1, False
    comps = int(m.group(1))
    return comps, comps > 1 and int(m.group(2)) == comps


def check_lbm_soa(cp, u, v, src, what):
    """The largest error of a structure-of-arrays LBM twin's output `v` on `LBM_SLAB` planes of
    interior cells, relative to the formula in its source evaluated in float64; exits with a
    message naming `what` above 1e-5."""
    comps, ext, g = lbm_soa_layout(src)
    n = [e - 2 * g for e in ext]
    u4 = u.reshape(comps, ext[2], ext[1], ext[0])

    def S(dx, dy, dz, c):
        return u4[c, g + dz:g + dz + LBM_SLAB, g + dy:g + dy + n[1],
                  g + dx:g + dx + n[0]].astype(cp.float64)

    env = {"S": S, "FMA": lambda a, b, c: a * b + c, "OUT": {}}
    exec(lbm_formula(src), env)
    ref = cp.stack([env["OUT"][c] for c in range(comps)])
    got = v.reshape(comps, ext[2], ext[1], ext[0])[:, g:g + LBM_SLAB, g:g + n[1], g:g + n[0]]
    err = float(cp.max(cp.abs(got - ref)) / cp.max(cp.abs(ref)))
    if not err <= 1e-5:
        sys.exit(f"{what}: result differs from the reference ({err:.2e})")
    return err


def set_carveout(kern, percent):
    """Sets a kernel's carve-out preference (the share of the unified L1 given to shared
    memory, in per cent; CuPy moved the attribute between versions)."""
    import cupy as cp

    fn = kern.kernel if hasattr(kern, "kernel") else kern.function
    attr = cp.cuda.driver.CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT
    cp.cuda.driver.funcSetAttribute(fn.ptr, attr, percent)


# The H100's and H200's shared memory per SM (228 KiB), and what the driver reserves per block.
SM_SHARED = 233472
BLOCK_RESERVED = 1024


def block_share(n, total=SM_SHARED):
    """Dynamic shared bytes that hold a kernel at `n` blocks per SM out of `total` shared bytes:
    a 1/n share less what a block reserves and 256 bytes to spare."""
    return total // n - BLOCK_RESERVED - 256


def occupancy_smem(bps):
    """Dynamic shared memory per block that lets exactly `bps` blocks fit on an SM (0 where none
    is asked, and at the SM's 32 blocks, which the blocks' own limit keeps)."""
    if not bps or bps >= 32:
        return 0
    smem = block_share(bps)
    # The most that `bps` blocks fit with, less a little: `bps + 1` do not.
    assert SM_SHARED // (smem + BLOCK_RESERVED) == bps, bps
    return smem


def stamped_run(cp, binary, kernel, dtype, domain, config, options=(), ready=False):
    """Emits the CUDA twin of `config` (`bx,by,bz/fx,fy,fz`, then optionally `/l1` or `/l2` for
    one of the [`LOAD_PERIODS`] variants, `/cN` for a carve-out of N % and `/kN` for dynamic
    shared memory that lets N blocks fit on an SM; a stencil, or an LBM
    kernel in either layout), compiled with NVRTC `options`, checks its output against the
    reference (exits where it differs) and runs it again with every warp stamping `%globaltimer`
    at its fold points (and with `ready` at their first stores; see [`stamp_fold_points`]); a
    dict of `block`, `fold`, `variant` (`orig`
    where none), `carveout` (None where not set), `src` (the unstamped source), `grid`, `points`
    (the fold points in order), `wpb` (warps per block), `records` (one row per warp: SM, the
    stamps, the end; a NumPy array), `kernel` (the stamped one), `blocks_per_sm` (None where
    not set) and `max_rel_error`."""
    parts = config.split("/")
    block = [int(x) for x in parts[0].split(",")]
    fold = [int(x) for x in parts[1].split(",")]
    carveout = next((int(p[1:]) for p in parts[2:] if re.fullmatch(r"c\d+", p)), None)
    bps = next((int(p[1:]) for p in parts[2:] if re.fullmatch(r"k\d+", p)), None)
    which = next((p for p in parts[2:] if p in LOAD_PERIODS), "orig")
    src, grid, ext, name = emit_cuda(binary, kernel, block, fold, dtype, domain)
    # An LBM twin's input has a component per population; a stencil's one.
    comps, aos = lbm_layout(src)
    lbm = comps > 1
    if lbm and which != "orig":
        sys.exit("the load variants are for stencils")
    if which != "orig":
        src = redirect_loads(src, LOAD_PERIODS[which])
    isrc, points = stamp_fold_points(src, "globaltimer", ready)
    nf = len(points)
    kern = cp.RawKernel(isrc, name, options=tuple(options))
    if carveout is not None:
        kern.compile()
        set_carveout(kern, carveout)
    smem = occupancy_smem(bps)
    if smem:
        kern.max_dynamic_shared_size_bytes = smem
    if aos:
        u, v = lbm_aos_fields(cp, ext, comps)
    elif lbm:
        u, v = lbm_soa_fields(cp, src)
    elif which != "orig":
        u = periodic_input(cp, ext, dtype, LOAD_PERIODS[which])
        v = cp.zeros_like(u)
    else:
        u, v = twin_fields(cp, ext, dtype)
    wpb = (block[0] * block[1] * block[2] + 31) // 32
    nb = grid[0] * grid[1] * grid[2]
    width = nf + 2 + (nf if ready else 0)
    rec = cp.zeros(nb * wpb * width, dtype=cp.uint64)
    kern(tuple(grid), tuple(block), (u, v, rec), shared_mem=smem)  # warm-up, checked result
    what = f"{block} fold {fold}"
    if aos:
        err = check_lbm_aos(cp, u, v, src, ext, what)
    elif lbm:
        err = check_lbm_soa(cp, u, v, src, what)
    else:
        err = check_twin(cp, u, v, src, dtype, what)
    rec.fill(0)
    kern(tuple(grid), tuple(block), (u, v, rec), shared_mem=smem)
    cp.cuda.runtime.deviceSynchronize()
    return {"block": block, "fold": fold, "variant": which, "carveout": carveout,
            "blocks_per_sm": bps, "src": src,
            "grid": grid, "points": points, "wpb": wpb,
            "records": cp.asnumpy(rec).reshape(nb * wpb, width), "kernel": kern,
            "max_rel_error": err}


def stamped_measure(binary, out_path, kernel, dtype, domain, configs, analyse, ready=False):
    """Runs [`stamped_run`] for each of `configs` (LBM kernels with the float options the counter
    sweeps' twins ran with) and writes the results to `out_path` with the provenance;
    `analyse(config, run)` gives each configuration's `(result dict, line to print)`."""
    import cupy as cp

    src = emit_cuda(binary, kernel, [1, 1, 1], [1, 1, 1], dtype, domain)[0]
    options = FLOAT_OPTIONS if lbm_layout(src)[0] > 1 else ()
    results = []
    for config in configs:
        run = stamped_run(cp, binary, kernel, dtype, domain, config, options, ready=ready)
        res, line = analyse(config, run)
        print(f"{config}: {line}", flush=True)
        results.append(res)
    out = {**provenance(cp), "kernel": kernel, "dtype": dtype, "domain": domain,
           "options": list(options), "results": results}
    with open(out_path, "w") as f:
        json.dump(out, f, indent=1)


def report_levels(reports, level):
    """`(block, fold)` → `(estimated, measured, blocks per SM)` of `level` in the counter reports
    `reports` (the first report naming a configuration gives it)."""
    found = {}
    for rp in reports:
        for r in json.load(open(rp))["records"]:
            if r.get("estimate") and r.get("measured"):
                key = (tuple(r["config"]["block"]), tuple(r["config"]["fold"]))
                found.setdefault(key, (r["estimate"][level], r["measured"][level],
                                       r.get("blocks_per_sm")))
    return found


def stamped_heading(d):
    """The first line of a stamped probe's summary: device, driver, date, commit and kernel."""
    return (f"{d.get('device')}, driver {d.get('driver')}, {d.get('date')}, commit "
            f"{d.get('commit')}: {os.path.basename(d['kernel'])} {d['dtype']} {d['domain']}\n")


def stamped_cli(doc, measure, summary):
    """The command line of the scripts built on [`stamped_run`]: `summary OUT.json [REPORT...]`
    or `measure BIN OUT.json KERNEL DTYPE DOMAIN CONFIG...`; else exits with `doc`."""
    a = sys.argv[1:]
    if len(a) >= 2 and a[0] == "summary":
        summary(a[1], *a[2:])
    elif len(a) >= 7 and a[0] == "measure":
        measure(a[1], a[2], a[3], a[4], a[5], a[6:])
    else:
        sys.exit(doc)


def stencil_reference(cp, u, src):
    """The stencil's result from the formula and coefficients printed in a generated source
    (interior only): `(result, slices of the interior)`."""
    formula = re.search(r"^//\s+\w+\[0,0,0\] = (.*)$", src, re.M).group(1)
    coef = {}
    for val, idx in re.findall(r"\(?(-?[0-9][0-9.e+-]*)f?\)? /\* c(\d+) \*/", src):
        coef.setdefault(int(idx), float(val))
    terms = []
    for idx, body in re.findall(r"c(\d+) \* (\([^)]*\)|\w+\[[^\]]*\])", formula):
        for off in re.findall(r"\[(-?\d+),(-?\d+),(-?\d+)\]", body):
            terms.append((coef[int(idx)], [int(o) for o in off]))
    r = max(abs(o) for _, off in terms for o in off)
    n = [s - 2 * r for s in u.shape]  # u is (z, y, x)
    core = tuple(slice(r, r + m) for m in n)
    v = cp.zeros(tuple(n), dtype=u.dtype)
    for c, (ox, oy, oz) in terms:
        v += c * u[r + oz:r + oz + n[0], r + oy:r + oy + n[1], r + ox:r + ox + n[2]]
    return v, core


def twin_fields(cp, ext, dtype):
    """The input (random, reproducible) and output arrays of a generated kernel, `(u, v)`."""
    ty = cp.float64 if dtype == "f64" else cp.float32
    u = cp.random.default_rng(1).random(ext[::-1], dtype=cp.float64).astype(ty)
    return u, cp.zeros_like(u)


def check_twin(cp, u, v, src, dtype, what):
    """The largest error of a launched kernel's output `v` relative to the reference; exits with
    a message naming `what` where it is above 1e-12 (f64) or 1e-5 (f32)."""
    ref, core = stencil_reference(cp, u, src)
    err = float(cp.max(cp.abs(v[core] - ref)) / (cp.max(cp.abs(ref)) + 1e-30))
    if not err <= (1e-12 if dtype == "f64" else 1e-5):
        sys.exit(f"{what}: result differs from the reference ({err:.2e})")
    return err


def sim_domain(block, fold, blocks_per_sm, sms, base, full):
    """The domain to simulate a configuration on: `base` grown along each axis to two tiles where
    a tile is larger (a clipped block would not be the one measured), then doubled along z, y and
    x until the grid fills a wave (fewer blocks would share an SM's L1 than in the measurement),
    at most the measured domain `full`; as `x,y,z`."""
    tile = [b * f for b, f in zip(block, fold)]
    dom = [min(max(n, 2 * t), m) for n, t, m in zip(base, tile, full)]
    for ax in (2, 1, 0):
        while True:
            blocks = 1
            for n, t in zip(dom, tile):
                blocks *= -(-n // t)
            if blocks >= sms * blocks_per_sm or dom[ax] >= full[ax]:
                break
            dom[ax] = min(2 * dom[ax], full[ax])
    return ",".join(map(str, dom))


def simulated_l2_load(binary, kernel, machine, domain, block, fold, blocks_per_sm, args=()):
    """`(visitor, simulator)` L2 load in B/LUP of one configuration from `stencilscope volumes
    --simulate` (`args` adds options: the issue order, its timing, a dtype); None where the
    domain is too large to simulate; exits on any other failure."""
    cmd = [binary, "volumes", kernel, "--machine", machine, "--domain", domain,
           "--block", block, "--fold", fold, "--blocks-per-sm", str(blocks_per_sm),
           "--simulate", *args]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        if "too many to simulate" in out.stderr:
            return None
        sys.exit(f"{' '.join(cmd)} failed: {out.stderr.strip()}")
    m = re.search(r"^L2 load\s+([\d.]+) B/LUP\s+[\d.]+ B/LUP\s+([\d.]+) B/LUP", out.stdout, re.M)
    return float(m.group(1)), float(m.group(2))


def ncu_rows(text):
    """The rows of ncu's raw CSV page (header, units, then one row per launch)."""
    start = text.index('"ID"')
    rows = list(csv.reader(io.StringIO(text[start:])))
    head = rows[0]
    return [dict(zip(head, r)) for r in rows[2:] if len(r) == len(head)]


def profile_plan(script, points, names, metrics, cache="all", replay="kernel", settings=None):
    """Runs `script launch PLAN` (PLAN: a JSON of `points`, and of `settings` where given, e.g. a
    carve-out for every launch) under Nsight Compute (`--clock-control none`, caches `cache`
    before each launch, replay mode `replay`) and returns `(rows, stdout)`: ncu's rows of the
    kernels named in `names`, one per point in launch order (exits where their number differs),
    and what the launches printed."""
    with tempfile.TemporaryDirectory() as tmp:
        plan_path = os.path.join(tmp, "plan.json")
        json.dump({**(settings or {}), "points": points}, open(plan_path, "w"))
        log = os.path.join(tmp, "ncu.csv")
        run = subprocess.run(
            ["ncu", "--clock-control", "none", "--cache-control", cache, "--replay-mode", replay,
             "--kernel-name", f"regex:^({'|'.join(names)})$", "--metrics", ",".join(metrics),
             "--csv", "--page", "raw", "--print-units", "base", "--log-file", log,
             sys.executable, os.path.abspath(script), "launch", plan_path],
            check=True, capture_output=True, text=True)
        rows = [r for r in ncu_rows(open(log).read()) if r["Kernel Name"].split("(")[0] in names]
    if len(rows) != len(points):
        sys.exit(f"ncu recorded {len(rows)} launches, expected {len(points)}")
    return rows, run.stdout


def profile_twins(script, points, metrics):
    """Profiles the generated-kernel launches `points` of `script` (each with its `source` and
    kernel `name`, see [`profile_plan`]) and returns them without their sources, each with the
    `counters` ncu measured for it."""
    rows, _ = profile_plan(script, points, sorted({p["name"] for p in points}), metrics)
    results = []
    for pt, row in zip(points, rows):
        pt = {k: v for k, v in pt.items() if k != "source"}
        pt["counters"] = {k: number(row[k]) for k in metrics}
        results.append(pt)
    return results


def measure_twins(script, points, metrics, out_path, domain, **extra):
    """Profiles the launches `points` of `script` ([`profile_twins`]) and writes them to
    `out_path` as JSON with the run's [`provenance`], the `domain` (`"NX,NY,NZ"`) and `extra`."""
    import cupy as cp

    results = profile_twins(script, points, metrics)
    dom = [int(d) for d in domain.split(",")]
    json.dump({**provenance(cp), "domain": dom, **extra, "results": results},
              open(out_path, "w"), indent=1)


def twin_results(path):
    """A JSON of [`measure_twins`] and its lattice updates per launch: `(data, updates)`."""
    d = json.load(open(path))
    return d, d["domain"][0] * d["domain"][1] * d["domain"][2]


def number(s):
    """A number as ncu prints it (thousands separated by commas)."""
    return float(s.replace(",", ""))


def provenance(cp):
    """What a probe's JSON records about its run: the device's name, the NVIDIA driver version,
    the commit (`$SS_COMMIT` where set, else git's short HEAD, else None) and the date (UTC)."""
    dev = cp.cuda.runtime.getDeviceProperties(0)
    smi = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip()
    commit = os.environ.get("SS_COMMIT")
    if not commit:
        git = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, cwd=os.path.dirname(os.path.abspath(__file__)))
        commit = git.stdout.strip() or None
    return {"device": dev["name"].decode(), "driver": smi, "commit": commit,
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}


# The order of a counter report's records' `errors` (the tool's `Level::ALL`), and the line the
# issue's target draws (within ±10 % of the counters).
LEVELS = ["l1_load_requests", "l1_wavefronts", "l2_load", "l2_store", "dram_load", "dram_store"]
TOL = 0.10

# The suffixes `bench/recheck-counters.sh` gives a sweep re-analysed with an experiment file.
EXPERIMENT_VARIANTS = ("-reuse-curve", "-step", "-full-l2")


# The suffixes of the sweeps of the ranking's top configurations, which `bench/recheck-counters.sh`
# keeps out of its totals (a line of their own).
TOP_SWEEPS = ("-top63", "-top64", "push_aos-128", "push_aos-64")


def recheck_sweeps(outdir, top=False):
    """The sweeps of a `bench/recheck-counters.sh` OUTDIR (the stems of its reports), without
    the variants re-analysed with an experiment file, and with the sweeps of the ranking's top
    configurations only where `top`."""
    return sorted(p.stem for p in Path(outdir).glob("*.json")
                  if not p.stem.endswith(EXPERIMENT_VARIANTS)
                  and (top or not p.stem.endswith(TOP_SWEEPS)))
