"""Helpers shared by the issue-8 scripts in bench/ (imported, not run)."""
import re
import subprocess


def emit_cuda(binary, kernel, block, fold, dtype, domain):
    """The CUDA twin of one configuration: `(source, grid, input extent x,y,z, kernel name)`."""
    cmd = [binary, "emit", kernel, "--target", "cuda", "--block", ",".join(map(str, block)),
           "--fold", ",".join(map(str, fold)), "--dtype", dtype, "--domain", domain]
    src = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    grid = [int(g) for g in re.search(r"blocks \[(\d+), (\d+), (\d+)\]", src).groups()]
    ext = [int(e) for e in re.search(r"input \d+ elements, extent \[(\d+), (\d+), (\d+)\]",
                                     src).groups()]
    name = re.search(r"__global__ void (?:__launch_bounds__\(\d+\) )?(\w+)\(", src).group(1)
    return src, grid, ext, name


def star_reference(cp, u, src):
    """The star stencil's result from the coefficients printed in a generated source (interior
    only): `(result, slices of the interior)`."""
    found = {}
    for val, idx in re.findall(r"\(?(-?[0-9][0-9.e+-]*)\)? /\* c(\d+) \*/", src):
        found.setdefault(int(idx), float(val))
    coef = [found[k] for k in sorted(found)]
    r = len(coef) - 1
    n = [s - 2 * r for s in u.shape]
    core = (slice(r, r + n[0]), slice(r, r + n[1]), slice(r, r + n[2]))
    v = coef[0] * u[core]
    for k in range(1, r + 1):
        acc = cp.zeros_like(v)
        for ax in range(3):
            for sgn in (-1, 1):
                sl = list(core)
                sl[ax] = slice(r + sgn * k, r + sgn * k + n[ax])
                acc += u[tuple(sl)]
        v += coef[k] * acc
    return v, core


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
