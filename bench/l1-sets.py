#!/usr/bin/env python3
"""Which 128-byte lines share a set of one SM's L1 (issue 8): the set mapping, measured.

The footprint visitor counts set conflicts as if the lines of a window fell into the L1's sets at
random (`l1_conflict_ways` in the machine files). The replacement probe (`bench/l1-policy.py`)
showed that the hardware spreads consecutive lines and power-of-2 strides perfectly but loses
lines a row or layer pitch apart early, so the placement is a fixed function of the address. This
finds it, with eviction sets timed by one thread per SM:

- test T(x, L): one thread reads line x, then the lines of L, `rounds` times over (each load's
  address depends on the value the previous one returned, so they reach L1 in this order), then
  times one more read of x with `clock64`. A hit takes some 40 cycles, a miss several hundred: x
  was evicted iff L holds at least as many lines of x's set as a set has ways (under LRU);
- a minimal eviction set of x: from a random list that evicts x, groups are removed while it still
  does (Vila et al., "Theory and practice of finding eviction sets", 2019) until every line left is
  needed. Its size is the number of ways A;
- the lines of x's set: y belongs iff T(x, E - e + y) evicts x, for E a minimal eviction set and e
  one of its lines. Every candidate is one test; the SMs each run a share, each with its own L1.

A set mapping that is linear over GF(2) (each set-index bit the XOR of some address bits, as is
usual) makes the lines that share line 0's set a subspace K, and the lines sharing x's set x XOR K;
`summary` checks both and prints the address bits each index bit depends on.

Loads use `ld.global.ca`; everything else the kernel reads bypasses L1 (`ld.global.cg`), so the
only lines in L1 are the probe's. The buffer is one allocation; line numbers are relative to its
start, whose address the JSON records.

usage (GPU, CuPy): bench/l1-sets.py measure OUT.json [--carveout -1] [--lines 2097152] [--bases 0,1,...]
                    bench/l1-sets.py summary OUT.json
                    bench/l1-sets.py ways OUT.json MASK,MASK,... [--carveout -1]
                    bench/l1-sets.py launch-once CARVEOUT   (under ncu: the carve-out granted)
                    bench/l1-sets.py selftest      (the search on a simulated cache, no GPU)
"""
import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import provenance  # noqa: E402

SOURCE = r"""
__device__ __forceinline__ unsigned ldca(const unsigned* p) {
    unsigned v;
    asm volatile("ld.global.ca.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ long long ldcg64(const long long* p) {
    long long v;
    asm volatile("ld.global.cg.s64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ int ldcg32(const int* p) {
    int v;
    asm volatile("ld.global.cg.s32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

// Test t reads probe[t], then lines[start[t] .. start[t] + count[t]) and extra[t] (when >= 0),
// `rounds` times, then times one more read of probe[t]. One thread per block; blocks take tests
// gridDim.x apart and record the SM they ran on.
extern "C" __global__ void evict(const unsigned* __restrict__ buf, const long long* __restrict__ probe,
                                 const long long* __restrict__ lines, const int* __restrict__ start,
                                 const int* __restrict__ count, const long long* __restrict__ extra,
                                 int ntests, int rounds, unsigned* __restrict__ cycles,
                                 int* __restrict__ smid)
{
    __shared__ unsigned sink[2];
    unsigned id;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
    smid[blockIdx.x] = (int)id;
    for (int t = blockIdx.x; t < ntests; t += gridDim.x) {
        const long long x = ldcg64(probe + t);
        const int s = ldcg32(start + t);
        const int n = ldcg32(count + t);
        const long long y = ldcg64(extra + t);
        unsigned v = 0;
        for (int r = 0; r < rounds; ++r) {
            v = ldca(buf + x * 32 + v);
            for (int i = 0; i < n; ++i) {
                v = ldca(buf + ldcg64(lines + s + i) * 32 + v);
            }
            if (y >= 0) {
                v = ldca(buf + y * 32 + v);
            }
        }
        sink[0] = v;
        long long t0, t1;
        asm volatile("mov.u64 %0, %%clock64;" : "=l"(t0) :: "memory");
        const unsigned w = ldca(buf + x * 32 + v);
        sink[1] = w;  // the clock below is read after the load returned
        asm volatile("mov.u64 %0, %%clock64;" : "=l"(t1) :: "memory");
        cycles[t] = (unsigned)(t1 - t0) + (sink[0] & sink[1]);
    }
}
"""
LINE = 128


class GpuCache:
    """Runs eviction tests on the GPU, every SM its share."""

    def __init__(self, lines, carveout):
        import cupy as cp

        self.cp = cp
        self.kern = cp.RawKernel(SOURCE, "evict")
        fn = self.kern.kernel if hasattr(self.kern, "kernel") else self.kern.function
        if carveout is not None:
            cp.cuda.driver.funcSetAttribute(
                fn.ptr, cp.cuda.driver.CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, carveout)
        self.buf = cp.zeros(lines * 32 + 64, dtype=cp.uint32)
        self.base = int(self.buf.data.ptr)
        if self.base % LINE:
            sys.exit(f"buffer at {self.base:#x} is not line-aligned")
        self.sms = cp.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
        self.threshold = None
        self.launches = 0

    def cycles(self, tests, rounds, shared=None, tries=6):
        """Cycles of the final read of x per test; tests are (x, lines, extra) with extra -1 for
        none, or (x, extra) with `shared` the lines of every test."""
        cp = self.cp
        flat, start, count, probe, extra = [], [], [], [], []
        if shared is not None:
            flat = list(shared)
        for t in tests:
            if shared is None:
                x, ls, y = t
                start.append(len(flat))
                count.append(len(ls))
                flat.extend(ls)
            else:
                x, y = t
                start.append(0)
                count.append(len(shared))
            probe.append(x)
            extra.append(y)
        dev = lambda a, dt: cp.asarray(a if a else [0], dtype=dt)
        out = cp.zeros(len(tests), dtype=cp.uint32)
        # Fewer blocks than SMs after a failed try: the scheduler may then spread them.
        grid = min(self.sms if tries > 3 else self.sms // 2, len(tests))
        smid = cp.full(grid, -1, dtype=cp.int32)
        self.kern((grid,), (1,), (self.buf, dev(probe, cp.int64), dev(flat, cp.int64),
                                  dev(start, cp.int32), dev(count, cp.int32), dev(extra, cp.int64),
                                  cp.int32(len(tests)), cp.int32(rounds), out, smid))
        cp.cuda.runtime.deviceSynchronize()
        self.launches += 1
        ids = smid.get().tolist()
        if len(set(ids)) != len(ids):
            # Two blocks on one SM share its L1 and disturb each other's tests: run again.
            if not tries:
                sys.exit("blocks keep sharing an SM")
            return self.cycles(tests, rounds, shared, tries - 1)
        return out.get().tolist()


class SimCache:
    """A set-associative LRU L1 with a fixed set function, for `selftest`."""

    def __init__(self, sets, ways, hashfn):
        self.sets, self.ways, self.hashfn = sets, ways, hashfn
        self.threshold = 100
        self.launches = 0

    def cycles(self, tests, rounds, shared=None):
        self.launches += 1
        out = []
        for t in tests:
            if shared is None:
                x, ls, y = t
            else:
                (x, y), ls = t, shared
            seq = [x] + list(ls) + ([y] if y >= 0 else [])
            state = {}
            for _ in range(rounds):
                for a in seq:
                    self.touch(state, a)
            out.append(40 if self.touch(state, x) else 400)
        return out

    def touch(self, state, a):
        s = state.setdefault(self.hashfn(a) % self.sets, [])
        hit = a in s
        if hit:
            s.remove(a)
        elif len(s) == self.ways:
            s.pop(0)
        s.append(a)
        return hit


def evicted(cache, tests, rounds, shared=None, votes=2):
    """Whether each test's final read missed, by the calibrated threshold; a test whose `votes`
    runs disagree is run again until three agree."""
    runs = [cache.cycles(tests, rounds, shared) for _ in range(votes)]
    res = []
    for i in range(len(tests)):
        v = [r[i] > cache.threshold for r in runs]
        if all(v) or not any(v):
            res.append(v[0])
            continue
        more = [c > cache.threshold for c in
                (cache.cycles([tests[i]], rounds, shared)[0] for _ in range(3))]
        res.append(sum(more) >= 2)
    return res


def calibrate(cache):
    """The hit/miss threshold: half-way between the slowest hit (a line read twice) and the
    fastest L2 hit (a line read, then pushed out of L1 by 4096 consecutive lines). L2 hits take
    two latencies, from the near and the far half of the L2; DRAM misses take longer still."""
    hits = sorted(cache.cycles([(7, [], -1)] * 64, 2))
    far = [(1 << 20) + 8192 * i for i in range(64)]
    miss = sorted(cache.cycles([(x, list(range(x + 1, x + 4097)), -1) for x in far], 2))
    cache.threshold = (hits[-1] + miss[0]) / 2
    if miss[0] <= hits[-1]:
        sys.exit(f"hits ({hits[0]}..{hits[-1]} cycles) and misses ({miss[0]}..{miss[-1]}) overlap")
    return {"hit_cycles_median": hits[len(hits) // 2], "miss_cycles_median": miss[len(miss) // 2],
            "hit_cycles_max": hits[-1], "miss_cycles_min": miss[0], "threshold": cache.threshold}


def minimal_eviction_set(cache, x, pool, start_size, rounds, rng):
    """A minimal eviction set of line x drawn from `pool` (lines other than x)."""
    for _ in range(4):
        cand = [a for a in rng.sample(pool, min(start_size, len(pool))) if a != x]
        if evicted(cache, [(x, cand, -1)], rounds)[0]:
            break
        start_size *= 2
    else:
        raise RuntimeError(f"no random list of {start_size} lines evicts line {x}")
    k = 16
    while True:
        k = min(k, len(cand))
        size = -(-len(cand) // k)
        groups = [cand[i:i + size] for i in range(0, len(cand), size)]
        rest = [[a for j, g in enumerate(groups) if j != i for a in g] for i in range(len(groups))]
        res = evicted(cache, [(x, r, -1) for r in rest], rounds)
        if any(res):
            cand = rest[res.index(True)]
        elif size == 1:
            return cand
        else:
            k *= 2


def congruent(cache, x, eset, candidates, rounds, chunk=1 << 16):
    """The candidates that share x's set: y with T(x, E - e + y) evicting x."""
    keep = eset[1:]
    skip = set(eset) | {x}
    found = []
    for i in range(0, len(candidates), chunk):
        part = [y for y in candidates[i:i + chunk] if y not in skip]
        res = evicted(cache, [(x, y) for y in part], rounds, shared=keep)
        found.extend(y for y, r in zip(part, res) if r)
    return sorted(set(found) | skip)


def search(cache, nlines, bases, rounds, start_size, scan_lines, seed=1):
    """Eviction sets and congruence classes of each base line; a dict for the JSON."""
    rng = random.Random(seed)
    out = {"calibration": calibrate(cache), "bases": []}
    pool = range(nlines)
    for x in bases:
        # A wrong vote early in the reduction can strand it on a long list whose lines all seem
        # needed; such a result (more lines than any L1 has ways) is searched again.
        for _ in range(3):
            eset = minimal_eviction_set(cache, x, pool, start_size, rounds, rng)
            if len(eset) <= 32:
                break
        # The eviction set must still evict, and every line of it be needed.
        check = evicted(cache, [(x, eset, -1)] + [(x, eset[:i] + eset[i + 1:], -1)
                                                  for i in range(len(eset))], rounds)
        lines = congruent(cache, x, eset, list(range(scan_lines)), rounds)
        out["bases"].append({"line": x, "eviction_set": sorted(eset), "ways": len(eset),
                             "eviction_set_evicts": check[0], "each_line_needed": not any(check[1:]),
                             "scanned_lines": scan_lines, "congruent": lines})
        print(f"base {x}: {len(eset)} ways, {len(lines)} of {scan_lines} lines share its set "
              f"({cache.launches} launches so far)", file=sys.stderr)
    return out


def measure(out_path, carveout, nlines, bases, scan_lines, start_size):
    cache = GpuCache(nlines, carveout)
    res = search(cache, nlines, bases, 2, start_size, scan_lines)
    import cupy as cp

    res.update({**provenance(cp), "carveout": carveout, "line_bytes": LINE, "buffer_address": cache.base,
                "buffer_lines": nlines, "launches": cache.launches})
    json.dump(res, open(out_path, "w"))


def span_basis(vectors):
    """A reduced GF(2) basis of the span of `vectors`: {pivot bit: vector}, each pivot bit set in
    its own vector only."""
    basis = {}
    for v in vectors:
        for b in sorted(basis, reverse=True):
            if v >> b & 1:
                v ^= basis[b]
        if v:
            top = v.bit_length() - 1
            for b in list(basis):
                if basis[b] >> top & 1:
                    basis[b] ^= v
            basis[top] = v
    return basis


def reduce(v, basis):
    """`v` reduced by `basis` (0 iff `v` lies in its span)."""
    for b in sorted(basis, reverse=True):
        if v >> b & 1:
            v ^= basis[b]
    return v


def nullspace_rows(pivots, nbits):
    """A basis of {h : popcount(h & k) even for every k in the span}: the set-index bit functions,
    read from the free columns of the reduced basis `span_basis` returns."""
    free = [b for b in range(nbits) if b not in pivots]
    rows = []
    for f in free:
        h = 1 << f
        for p, w in pivots.items():
            if w >> f & 1:
                h |= 1 << p
        rows.append(h)
    return rows


def summary(path):
    d = json.load(open(path))
    if "sets" in d:
        rows = d["sets"]
        hist = {}
        for r in rows:
            hist[r["ways"]] = hist.get(r["ways"], 0) + 1
        c = d["calibration"]
        print(f"- carve-out preference {d['carveout']}: {len(rows)} sets; lines of its own set that "
              f"evict a set's first line: {', '.join(f'{k} in {v} sets' for k, v in sorted(hist.items(), key=str))}; "
              f"evicting not monotone in {sum(not r['monotone'] for r in rows)}; as many lines of other "
              f"sets evicted it in {sum(r['control_evicted'] for r in rows)} (hit {c['hit_cycles_median']}, "
              f"L2 {c['miss_cycles_median']} cycles)")
        return
    print(f"# L1 set mapping of the {d['device']} (issue 8)\n")
    c = d["calibration"]
    print(f"Measured {d['date'][:10]}, driver {d['driver']}, carve-out preference {d['carveout']}; "
          f"{d['launches']} launches. Hit {c['hit_cycles_median']} cycles (max {c['hit_cycles_max']}), "
          f"miss {c['miss_cycles_median']} (min {c['miss_cycles_min']}); buffer at "
          f"{d['buffer_address']:#x}.\n")
    print("| base line | ways | eviction set | its lines needed | lines sharing the set | of scanned |")
    print("|---|---|---|---|---|---|")
    # The set function acts on absolute line addresses (the buffer's start is 2 MiB-aligned, not
    # aligned to the scanned range, so relative numbers carry into higher bits).
    base = d["buffer_address"] // d["line_bytes"]
    classes = {}
    for b in d["bases"]:
        print(f"| {b['line']} | {b['ways']} | {b['eviction_set']} | {b['each_line_needed']} | "
              f"{len(b['congruent'])} | {b['scanned_lines']} |")
        if b["ways"] > 32:
            continue  # a failed search (see `search`)
        # Eviction-set lines beyond the scanned range would add address bits the scan never saw.
        classes[b["line"]] = [base + a for a in b["congruent"] if a < b["scanned_lines"]]
    scanned = max(b["scanned_lines"] for b in d["bases"])
    nbits = (base ^ (base + scanned - 1)).bit_length()
    first = min(classes)
    basis = span_basis([a ^ classes[first][0] for a in classes[first]])
    print(f"\nSpan of the differences of absolute line addresses in line {first}'s set: rank "
          f"{len(basis)}, {2 ** len(basis)} members over address bits 0..{nbits - 1}, of which the "
          f"scanned range holds {len(classes[first])}.")
    for x, cl in classes.items():
        inside = sum(1 for a in cl if reduce(a ^ cl[0], basis) == 0)
        print(f"- base {x}: {inside} of {len(cl)} lines in its first line XOR that span")
    rows = nullspace_rows(basis, nbits)
    print(f"\nSet-index functions over line-address bits 0..{nbits - 1} ({len(rows)}; each the XOR "
          "of the listed bits; any basis of the same space gives the same sets):")
    for h in rows:
        print("- " + " ^ ".join(str(b) for b in range(nbits) if h >> b & 1) + f"  (mask {h:#x})")
    print("\nFirst members of each class (relative line numbers): ")
    for x, cl in classes.items():
        print(f"- {x}: {[a - base for a in cl[:16]]}")


def ways_per_set(out_path, carveout, masks, kmax=8):
    """The ways of every set of the set function `masks` (line-address bit masks, one per index
    bit, measured by `measure`): for the first line x of each set in a window of 2^20 lines aligned
    to 2^20 (so the address bits above do not change), the fewest lines of its set that evict it,
    and as a control the same number of lines from other sets."""
    window = 1 << 20
    cache = GpuCache(3 * window, carveout)
    cal = calibrate(cache)
    base = cache.base // LINE
    w0 = -(-base // window) * window - base
    index = lambda a: sum((bin(a & m).count("1") & 1) << i for i, m in enumerate(masks))
    members = {}
    for a in range(w0, w0 + window):
        s = index(base + a)
        if len(members.setdefault(s, [])) <= kmax + 1:
            members[s].append(a)
    sets = sorted(members)
    tests = []
    for s in sets:
        x, same = members[s][0], members[s][1:kmax + 1]
        other = [members[t][1] for t in sets if t != s][:kmax]
        tests += [(x, same[:k], -1) for k in range(1, kmax + 1)] + [(x, other, -1)]
    res = evicted(cache, tests, 2)
    rows = []
    for i, s in enumerate(sets):
        r = res[i * (kmax + 1):(i + 1) * (kmax + 1)]
        ways = next((k for k in range(1, kmax + 1) if r[k - 1]), None)
        monotone = all(r[k - 1] for k in range(ways, kmax + 1)) if ways else True
        rows.append({"set": s, "line": members[s][0], "ways": ways, "monotone": monotone,
                     "control_evicted": r[kmax]})
    json.dump({"carveout": carveout, "calibration": cal, "buffer_address": cache.base,
               "masks": masks, "sets": rows}, open(out_path, "w"))
    hist = {}
    for r in rows:
        hist[r["ways"]] = hist.get(r["ways"], 0) + 1
    print(f"carve-out {carveout}: {len(rows)} sets, ways {hist}, not monotone "
          f"{sum(not r['monotone'] for r in rows)}, control evicted "
          f"{sum(r['control_evicted'] for r in rows)}")


def selftest():
    """The search on a simulated 4-way cache with an XOR set function; it must find the ways and
    the class exactly."""
    masks = [0b1000010001, 0b0100100010, 0b0011000100, 0b1000101000, 0b0110010000]

    def h(a):
        return sum((bin(a & m).count("1") & 1) << i for i, m in enumerate(masks))

    cache = SimCache(32, 4, h)
    res = search(cache, 4096, [0, 5], 2, 300, 1024)
    for b in res["bases"]:
        want = [a for a in range(1024) if h(a) == h(b["line"])]
        assert b["ways"] == 4, b["ways"]
        assert [a for a in b["congruent"] if a < 1024] == want, (b["line"], b["congruent"][:10], want[:10])
    print("selftest: 4 ways and both classes found")


def main():
    args = sys.argv[1:]
    opt = lambda name, default: type(default)(args[args.index(name) + 1]) if name in args else default
    if len(args) >= 2 and args[0] == "measure":
        bases = [int(b) for b in opt("--bases", "0,1,17,4356").split(",")]
        measure(args[1], opt("--carveout", -1), opt("--lines", 1 << 21), bases,
                opt("--scan", 1 << 20), opt("--start", 4096))
    elif len(args) == 2 and args[0] == "summary":
        summary(args[1])
    elif len(args) >= 3 and args[0] == "ways":
        masks = [int(m, 0) for m in args[2].split(",")]
        ways_per_set(args[1], opt("--carveout", -1), masks)
    elif len(args) == 2 and args[0] == "launch-once":
        # One small launch, for Nsight Compute to read the carve-out granted.
        cache = GpuCache(4096, int(args[1]))
        cache.cycles([(0, [1, 2, 3], -1)], 1)
    elif args == ["selftest"]:
        selftest()
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
