#!/usr/bin/env python3
"""What the L2 moves to and from DRAM for each sector the L1s request or write (issue 8).

The visitor charges DRAM per 32-byte sector: a read miss reads one sector, a written sector is
written back once. The D3Q19 counters say otherwise in places: DRAM reads above all the L2 reads
(SoA 16x64x1 fold 4x1x1: 143 B/LUP read from DRAM for 95.6 B/LUP read from L2), and AoS stores
that come back as extra DRAM reads and writes (8x8x16: 117 B/LUP written for 76). Each probe here
isolates one candidate, over buffers well beyond the L2, with every other sector access removed:

- `gather S`: groups of 8 lanes read one whole sector every S bytes. DRAM reads per sector read
  from L2 above 1 mean the L2 fetches more than the sector it misses (64 or 128 bytes), run under
  each setting of `cudaLimitMaxL2FetchGranularity` (the CUDA hint for that size).
- `scatter W/S`: W lanes of each group of 8 write one word each of a sector every S bytes and
  nothing completes it: DRAM reads here are the L2 filling partly written sectors.
- `records B`: the D3Q19 AoS store pattern alone. Each thread of a 3D block B over a 256^3 domain
  writes its 19-word record (76 bytes, two or three sectors shared with the neighbouring records)
  as 19 one-word stores, as the generated AoS kernel does.
- `records-read B`: the same records read (19 one-word loads per thread), nothing written.
- `soa-store B`: one word into each of 19 arrays per thread, whole sectors where B is 8 wide.
- `paced W/T/S` (the set `partial`): the records again, written by a fixed number of warps that
  loop over them (W warps per SM in blocks of T threads, grid-stride), spinning S cycles after
  every store. It separates the two laws that could evict a partly written sector before its
  record completes: the data written meanwhile (grows with W, not with S) or the time (grows
  with S, not with W).
- `pieces K/MODE` (the set `partial`): every sector written in K pieces of 8/K words, by K
  blocks next to each other in launch order (MODE `blocks`: different SMs at about the same
  time) or by K warps of one block of 256 threads (`warps`: one SM), each thread storing one word.
- `pieces K/MODE/L` (the set `partial`) with L > 0: each thread first reads L words streamed from
  another buffer (L2 read pressure between the pieces, as a stencil's loads are).
- `reread MB/MAPPING` (the set `capacity`): a buffer of MB MiB read twice by every SM, each block
  a contiguous chunk, with no flush in between; only the second pass is profiled. Its DRAM reads
  over the buffer are the L2 misses of a cyclic scan of that size: where they rise is the
  capacity a sweep sees. MAPPING `same`: each block rereads its own chunk (on the same SM, as a
  rule); `shifted`: the chunk that a block half the grid away read (another SM, often in the other
  half of the L2); `twice`: every chunk read by two blocks a wave apart in both passes (two SMs,
  as the sectors a stencil's neighbouring blocks share: a copy near each, if the L2 keeps one).
- `reread MB/twice/W` (the set `wcapacity`): as `reread MB/twice`, and every block also writes
  W bytes per byte it reads (full sectors, interleaved with its reads) to an output buffer, a fresh
  region in each pass, as a stencil streams its output: whether L2 keeps reused data as long when
  part of the traffic between two reads is written data.
- `pieces 4/blocks/L/D` (the set `stagger`): the i-th of a sector's four blocks stores i × D
  cycles after its reads, so that a sector stays partly written for up to 3 D.
- `runs K/MODE/T/F/L` (the set `runs`): stencil-like runs of partial stores. Every thread of blocks
  of T threads stores F pieces, one per fold point, each a vector of 8/K words of a sector that
  K pieces complete, with L coalesced loads before each store: of the thread's own line again
  (`l1`: time between the stores) or through an L2-resident 8 MiB buffer (`l2`: a stencil's L2
  reads between its stores). MODE `blocks`: a sector's K pieces come from K blocks
  next to each other in launch order at the same fold point (narrow tiles: x-neighbours); `fold`:
  from one thread at K consecutive fold points (tiles folded along x). T from 32 to 1024 at full
  occupancy sets the blocks per SM at (nearly) the same warps per SM.
- `runs K/MODE/256/4/8 ×S, APART|TOGETHER` (the set `runarrays`): `runs` with S stores per fold
  point instead of one (8 loads through L2 before each fold point's stores), each into its own
  array: the S arrays 64 MiB apart (`apart`, as D3Q19 SoA's 19 arrays) or a thread's S
  sectors next to each other (`together`), so that the same count of partly written sectors lies
  in S groups far apart or in one. Whether L2 writes back a kernel's partly written sectors
  earlier where they lie in many arrays (star3d_r4 writes one output array, D3Q19 SoA 19; at the
  same count of partly written sectors the SoA tiles lose far more).
- `runs K/MODE/256/4/8 ×S, VIA` (the set `runmisses`): `runarrays` with the arrays apart and the
  8 loads before each fold point's stores through L2 (`l2`, an 8 MiB source L2 holds) or from
  DRAM (`dram`: every warp reads lines of its own from a 1 GiB source, none read before in the
  last GiB), as D3Q19 SoA's loads miss: whether a stream of misses through L2 makes it write
  partly written sectors back earlier at the same count.
- `runs 2/MODE/256/4/L ×1, DRAM` (the set `partialdist`): `runmisses` with one store per fold
  point and L = 0 to 128 loads from DRAM before each: how much L2 traffic a partly written sector
  survives between its two pieces (one fold point apart, `fold`; neighbouring blocks at the same
  fold point, `blocks`), against the share of clean sectors a reread keeps (set `capacity`).
- `runs 2/MODE/256/4/8 ×4, spin S` (the set `runspin`): `runarrays` with 4 stores per fold point
  (arrays apart, loads via L2), each thread spinning S cycles after each fold point's stores: as
  many sectors partly written at a time, arriving fewer per second. Whether L2's early
  write-backs follow the count or the rate of partial stores (the `paced` set lost less with a
  spin after every store).
- `scatter 1/32` over 128 KiB to 128 MiB of sectors, and `lag L` (the set `threshold`): whether
  the L2 fills partly written sectors because there are too many of them (an NVIDIA patent,
  US 9,110,809, "Reducing memory traffic in DRAM ECC mode", fills partial writes once their
  number passes a threshold), not only when it evicts them. `scatter` leaves every sector partly
  written; below the L2's capacity only such a limit can fill them during the kernel. `lag L`:
  block b writes the first halves of 64 sectors and the second halves of those block b - L wrote,
  so that about 64 L sectors are partly written at a time, over 128 MiB.
- `pscatter G/S/T/W` (the set `pstride`): as `scatter 1/32`, each sector's first W words only
  (1, or 2 as one 8-byte store), the sectors dealt to G groups S bytes apart (consecutive sectors
  in consecutive groups), T bytes apart within a group (32: contiguous): a stencil's output
  planes, into which the warps of tiles one or two wide write. Whether L2's limit of partly
  written sectors is a count over the whole L2 or falls where such sectors crowd into fewer sets
  or slices, or into fewer lines.
- `halves L` (the set `partner`): the L2 fetches 64 bytes for a read miss of one sector (the
  fetch granularity); does it keep the partner sector until its own request comes? Block b reads
  the first sectors of 32 chunks of 64 bytes and the second sectors of the chunks block b - L
  read (L = 0: the same thread, a second load right after the first), so about L × 2 KiB of
  other chunks are fetched between a chunk's two halves; `fetch_limit` 32 is the control where
  L2 fetches one sector.
- `paced-halves W/D/S` (the set `partner`): W warps per SM loop over groups of 4 chunks, reading
  their first sectors, then (D = 1: once the first load has returned, and S cycles later) the
  second ones: the partner's lifetime in time, at several rates of DRAM traffic.
- `promote A/S/K/BY` (the set `promote`): whether an L2 hit renews a sector's place (LRU) or
  L2 ages sectors from when they came in. A buffer of A MiB is read; then K times S MiB of fresh
  data and the buffer again (a touch, BY the `same` blocks or by blocks half the grid away,
  `shifted`); then S MiB more of fresh data and the buffer a last time (profiled). An LRU L2
  keeps the buffer wherever A + S fits, whatever K; one that ages sectors from their fill loses
  it where A + (K + 1) S does not, as without touches (K = 0, the control).
- `sibling A/S/TOUCH` (the set `sibling`): whether a read of one sector of a line renews the
  line's other sectors. The first sectors of the 128-byte lines of A MiB are read; then S MiB of
  fresh data; then a touch (TOUCH `none`; `same`: the first sectors again, the `promote` case;
  `sibling`: the third sectors, another 64-byte fetch of the same lines); S MiB more of fresh
  data; the first sectors a last time (profiled). An L2 that keeps lines in LRU order keeps the
  first sectors wherever A + S fits whether the touch read them or their line's third sectors;
  one that ages each sector by its own reads loses them after a `sibling` touch as without one.
- `pprio A/FIRST/S` (the set `pprio`): whether L2 keeps the other half of a 64-byte fetch (a
  sector no load asked for) as long as a sector a load asked for. The first sectors of the
  64-byte chunks of A MiB are read (FIRST `half`: the fetch brings the second ones along) or
  both sectors (`whole`: the control), then S MiB of fresh data, then the second sectors
  (profiled): their misses over the sectors read.
- `segments MB/STRIDE` (the set `segments`): as `reread MB/same`, with the buffer cut into 19
  segments STRIDE bytes apart (`packed`: next to each other; 80,494,592: the D3Q19 SoA arrays of
  a 256^3 domain with 8 ghost layers; 67,108,864: a power of two), each block reading its part of
  every segment: whether L2 keeps as much of data spread over far-apart arrays (its sets).
  `segments MB/STRIDE/w` (the same set): every float4 read is also written, to the same place of
  19 other segments (a fresh set of them in each pass), as D3Q19 SoA reads 19 arrays and writes
  19.
- `lines MB/K/FETCH` (the set `lines`): whether L2 keeps data by the sectors read or by the
  128-byte lines they lie in. K of the 4 sectors of every line of a buffer spanning MB MiB of
  lines are read twice (the second pass profiled), with L2's fetch limit FETCH (default or 32
  bytes): where L2 holds lines, the K = 1 buffer (a quarter of the data) is lost at the same MiB
  of lines as the whole one.
- `window L/W` (the set `window`): L2 under a stream of misses. Block b reads its own chunk of
  16 KiB (fresh data, a miss in every sector) and then the chunk block b - L read, so about L
  chunks of fresh data pass between a chunk's two reads (L x 16 KiB), and with W = 1 writes a
  fresh 16 KiB chunk of an output buffer as well (2^29 bytes after the chunk it reads; W = 2:
  256 bytes further, so that the two need not share L2 sets): where the second reads miss tells how long L2
  keeps a sector it has just fetched while the kernel streams, the regime of the folded AoS tiles
  whose short reuses L2 loses (the `reread` sets measure a cyclic rescan without new misses).
- `window3 L` (the set `window3`): as `window L/0`, with the chunk read a second time 16 chunks
  after its first read (a hit, by `window`) and a third time L chunks after it: whether one early
  hit lets L2 keep a sector as long as a `reread` buffer.
- `copy B` (the set `partial`): the records read from one buffer and written to another, as the
  AoS kernel does (19 loads, then 19 stores): how near its bursts of stores come to the paced ones.
- `copy B/S` (the set `copyspin`): as `copy B`, each thread waiting S cycles between its last
  load's value and its first store, as a stencil computes between its loads and stores: whether
  the share of partly written records L2 writes back early falls with a block's store duty (the
  D3Q19 AoS blocks lose less than the copy at the same warps per block).
- `copy B/0` (the set `afterloads`): `copy_spin` without a wait at the blocks of `partial`'s
  `copy`: its stores go out only once all its loads are back (the wait's test reads the first
  and last loaded word), as in a kernel whose every store needs every load, where `copy` stores
  each word as its load returns.
- `copy B/0/K` (the set `occupancy`): `copy_spin` without a wait at blocks of 4 to 32 warps,
  each block holding enough dynamic shared memory that only K blocks fit on an SM: whether the
  share of partly written records L2 writes back early is set by the warps per block alone (as
  the sets `partial` and `afterloads` measured it, at full occupancy), or falls with fewer
  blocks per SM (D3Q19 AoS tiles at 40 registers, 48 warps per SM, lose a fifth of it).
- `copy B/0 gap G` (the set `storegap`): `copy_gap`, the record copy whose stores wait for all
  its loads with a chain of G dependent FMAs before each store after the first: whether the
  share of partly written records L2 writes back early grows with how far apart a thread's
  stores are issued. The D3Q19 AoS twins compiled without the float options spread their 19
  stores over about 80 instructions, among the collision's FMAs (32 registers); with them
  (40 registers) they issue the 19 back to back, and lose a quarter of the share. G runs as a
  loop (a branch between stores); `copy_chainG` (G = 1, 2, 4) unrolls the chain.
- `copy B/0 fold K, interleaved|apart` (the set `foldstore`): `copy_foldK_i|a`, each thread
  copying the K records of its fold points (a block's extent apart along z, as the emitters fold),
  every store needing the sum of all K x 19 loaded words (so the loads go first, as in an LBM
  collision) and the stores interleaved (word q of every record, then word q + 1) or apart (each
  record's 19 stores together). The compiled D3Q19 AoS twins that
  interleave fold points' stores lose 0.6-1.1 of their record sectors, more than the copy of
  `afterloads` at any warps per block: whether a thread's records open at once are why.
- `copy B/S skewed` (the set `warpskew`): `copy_skew`, the record copy whose stores wait for
  its loads, warp w of a block's W waiting S·w/W cycles before its stores, beside `copy_spin`'s
  wait of S for every warp: whether the share grows with the warps per block because a block's
  warps, starting together, store together.
- `l2rate MODE/K` (the set `l2rate`): how many sectors an SM's L1 misses can read from L2 per
  cycle. Blocks of 256 threads, K per SM, read a buffer of 8 MiB that L2 holds 24 times, every
  load through L2 only (`ld.global.cg`); MODE `line`: a warp instruction reads one 128-byte line
  (4 sectors), `sector`: 32 lines, one sector each (a tile one thread wide). Its L2 sectors over
  its duration and the SMs' clock (`sm__cycles_elapsed.avg.per_second`) give the rate the timed
  simulator's `--timing …,RATE` takes.
- `copy B` and `copy B/0` (the set `recordshape`): both copies at 32-warp blocks of ten shapes,
  from 8×8×16 to 256×4×1: whether rows of records that fill whole lines lose less than short
  rows whose lines other warps and blocks share.

Every launch is checked (stores: the buffer's content; reads: the sum) before its counters count.
Nsight Compute (`--clock-control none`, caches flushed before each launch) reads the L2's
sectors from the L1s and the DRAM bytes.

usage (GPU, CuPy, ncu): bench/l2-traffic.py measure OUT.json
                           [traffic|partial|capacity|wcapacity|stagger|runs|runarrays|runmisses|partialdist|runspin|threshold|pstride|partner|promote|
                            sibling|pprio|segments|lines|window|window3|copyspin|afterloads|storegap|warpskew|
                            recordshape|occupancy|l2rate]
                         bench/l2-traffic.py summary OUT.json
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import number, occupancy_smem, profile_plan, provenance  # noqa: E402

Q = 19
SOURCE = r"""
#define Q 19
extern "C" __global__ void gather(const float* __restrict__ a, long long n, int stride, float* __restrict__ out)
{
    const long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (t / 8 >= n) return;
    const float v = a[(t / 8) * stride + t % 8];
    if (v != 1.0f) atomicAdd(out, 1.0f);
}
extern "C" __global__ void scatter(float* __restrict__ a, long long n, int stride, int words)
{
    const long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (t / 8 >= n || t % 8 >= words) return;
    a[(t / 8) * stride + t % 8] = 2.0f;
}
extern "C" __global__ void scatter_groups(float* __restrict__ a, long long n, long long stride, int groups, int step, int words)
{
    // The first `words` words (1 or 2) of sector i, the sectors dealt to `groups` groups
    // `stride` words apart (a warp's 32 sectors in as many groups where there are 32 or more),
    // `step` words apart within a group.
    const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i >= n) return;
    float* p = a + (i % groups) * stride + (i / groups) * step;
    if (words == 2) {
        *(float2*)p = make_float2(2.0f, 2.0f);
    } else {
        *p = 2.0f;
    }
}
__device__ long long record_of(int n)
{
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = blockIdx.y * blockDim.y + threadIdx.y;
    const int z = blockIdx.z * blockDim.z + threadIdx.z;
    return x + (long long)n * (y + (long long)n * z);
}
extern "C" __global__ void records(float* __restrict__ a, int n)
{
    float* p = a + record_of(n) * Q;
#pragma unroll
    for (int q = 0; q < Q; ++q) p[q] = (float)(q + 1);
}
extern "C" __global__ void records_read(const float* __restrict__ a, int n, float* __restrict__ out)
{
    const float* p = a + record_of(n) * Q;
    float s = 0.0f;
#pragma unroll
    for (int q = 0; q < Q; ++q) s += p[q];
    if (s != (float)(Q * (Q + 1) / 2)) atomicAdd(out, 1.0f);
}
extern "C" __global__ void paced(float* __restrict__ a, long long cells, int spin)
{
    const long long step = (long long)gridDim.x * blockDim.x;
    for (long long r = blockIdx.x * (long long)blockDim.x + threadIdx.x; r < cells; r += step) {
        float* p = a + r * Q;
#pragma unroll
        for (int q = 0; q < Q; ++q) {
            p[q] = (float)(q + 1);
            if (spin > 0) {
                const long long t0 = clock64();
                while (clock64() - t0 < spin) {}
            }
        }
    }
}
extern "C" __global__ void pieces(float* __restrict__ a, int k, int by_warps,
                                  const float* __restrict__ src, long long src_n, int loads,
                                  int stagger)
{
    float sum = 0.0f;
    const long long gid = blockIdx.x * 256LL + threadIdx.x, all = gridDim.x * 256LL;
    for (int j = 0; j < loads; ++j) sum += src[(gid + j * all) % src_n];
    // The i-th of a sector's k blocks stores i * stagger cycles after its loads.
    if (stagger > 0) {
        const long long t0 = clock64(), wait = (long long)(blockIdx.x % k) * stagger;
        while (clock64() - t0 < wait) {}
    }
    // 256 threads store 256 words: 32 sectors, each in k pieces of w words.
    const int w = 8 / k, t = threadIdx.x, lane = t % 32, v = t / 32;
    long long sector;
    int word;
    if (by_warps) {
        sector = blockIdx.x * 32LL + (v / k) * (32 / w) + lane / w;
        word = (v % k) * w + lane % w;
    } else {
        sector = (blockIdx.x / k) * 256LL / w + t / w;
        word = (blockIdx.x % k) * w + t % w;
    }
    a[sector * 8 + word] = sum == (float)loads ? 3.0f : 0.0f;
}
extern "C" __global__ void lag(float* __restrict__ a, long long groups, long long lag)
{
    // Block b writes the first halves of group b's 64 sectors and the second halves of group
    // b - lag's: about lag * 64 sectors are partly written at any time.
    const long long b = blockIdx.x, t = threadIdx.x;
    if (b < groups) a[(b * 64 + t / 4) * 8 + t % 4] = 3.0f;
    if (b >= lag) a[((b - lag) * 64 + t / 4) * 8 + 4 + t % 4] = 3.0f;
}
// The sector a thread of `runs` writes its piece of at fold point `f`, and which piece: a
// sector's `k` pieces come from one thread's consecutive fold points (`by_fold`) or from `k`
// blocks next to each other in launch order at the same fold point.
__device__ long long run_sector(int k, int by_fold, int folds, int f, int* piece)
{
    const long long t = threadIdx.x, T = blockDim.x, b = blockIdx.x;
    if (by_fold) {
        *piece = f % k;
        return (b * (folds / k) + f / k) * T + t;
    }
    *piece = (int)(b % k);
    return ((b / k) * folds + f) * T + t;
}
extern "C" __global__ void runs(float* __restrict__ a, int k, int by_fold, int folds,
                                const float* __restrict__ src, long long src_n, int loads,
                                long long load_step)
{
    const long long t = threadIdx.x, T = blockDim.x, b = blockIdx.x;
    const long long all = (long long)gridDim.x * T, gid = b * T + t;
    const int w = 8 / k;
    float sum = 0.0f;
    for (int f = 0; f < folds; ++f) {
        // load_step 0: each thread reads the words of its own line again (L1 hits); else a
        // megabyte and a line further each load, through the source (L1 misses, L2 hits).
        for (int j = 0; j < loads; ++j)
            sum += src[(gid + (load_step ? (long long)(f * loads + j) * load_step
                                         : (long long)(f * loads + j) % 32)) % src_n];
        int piece;
        const long long sector = run_sector(k, by_fold, folds, f, &piece);
        float* p = a + sector * 8 + piece * w;
        const float v = sum == (float)((f + 1) * loads) ? 3.0f : 0.0f;
        if (w == 4) *(float4*)p = make_float4(v, v, v, v);
        else if (w == 2) *(float2*)p = make_float2(v, v);
        else *p = v;
    }
}
// `runs` with `stores` stores per fold point, each into its own array: the arrays `per` sectors
// apart (`apart`), or a thread's sectors of one fold point next to each other.
extern "C" __global__ void runs_arrays(float* __restrict__ a, int k, int by_fold, int folds,
                                       const float* __restrict__ src, long long src_n, int loads,
                                       long long load_step, int stores, int apart, long long per,
                                       int spin)
{
    const long long t = threadIdx.x, T = blockDim.x, b = blockIdx.x;
    const long long gid = b * T + t;
    const int w = 8 / k;
    float sum = 0.0f;
    for (int f = 0; f < folds; ++f) {
        // load_step < 0: each warp reads lines of its own, none read before (DRAM misses).
        for (int j = 0; j < loads; ++j) {
            const long long c = f * loads + j;
            sum += src[(load_step < 0 ? ((gid >> 5) * folds * loads + c) * 32 + (gid & 31)
                                      : gid + c * load_step) % src_n];
        }
        int piece;
        const long long sector = run_sector(k, by_fold, folds, f, &piece);
        const float v = sum == (float)((f + 1) * loads) ? 3.0f : 0.0f;
        for (int q = 0; q < stores; ++q) {
            const long long at = apart ? q * per + sector : sector * stores + q;
            float* p = a + at * 8 + piece * w;
            if (w == 4) *(float4*)p = make_float4(v, v, v, v);
            else if (w == 2) *(float2*)p = make_float2(v, v);
            else *p = v;
        }
        // `spin` cycles after the fold point's stores: fewer partial stores per second, as
        // many sectors partly written at a time.
        if (spin > 0) {
            const long long t0 = clock64();
            while (clock64() - t0 < spin) {}
        }
    }
}
__device__ void scan(const float4* __restrict__ a, long long per, int shift, int chunks, float* out)
{
    const long long b = (blockIdx.x + shift) % chunks;
    float s = 0.0f;
    int n = 0;
    for (long long i = threadIdx.x; i < per; i += blockDim.x, ++n) {
        const float4 v = a[b * per + i];
        s += v.x + v.y + v.z + v.w;
    }
    if (s != 4.0f * n) atomicAdd(out, 1.0f);
}
extern "C" __global__ void warm(const float4* __restrict__ a, long long per, int chunks, float* out)
{
    scan(a, per, 0, chunks, out);
}
extern "C" __global__ void reread(const float4* __restrict__ a, long long per, int shift, int chunks,
                                  float* out)
{
    scan(a, per, shift, chunks, out);
}
extern "C" __global__ void touch(const float4* __restrict__ a, long long per, int shift, int chunks,
                                 float* out)
{
    scan(a, per, shift, chunks, out);
}
// reread with writes: block b reads its chunk (as scan) and writes `wper` float4 of ones to its
// part of `o` from `base` on, one write after each of its first reads.
__device__ void scan_w(const float4* __restrict__ a, long long per, int chunks, float4* o,
                       long long wper, long long base, float* out)
{
    const long long b = blockIdx.x % chunks;
    float s = 0.0f;
    int n = 0;
    for (long long i = threadIdx.x; i < per; i += blockDim.x, ++n) {
        const float4 v = a[b * per + i];
        s += v.x + v.y + v.z + v.w;
        if (i < wper) o[base + blockIdx.x * wper + i] = make_float4(1.0f, 1.0f, 1.0f, 1.0f);
    }
    if (s != 4.0f * n) atomicAdd(out, 1.0f);
}
extern "C" __global__ void warm_w(const float4* __restrict__ a, long long per, int chunks,
                                  float4* o, long long wper, long long base, float* out)
{
    scan_w(a, per, chunks, o, wper, base, out);
}
extern "C" __global__ void reread_w(const float4* __restrict__ a, long long per, int chunks,
                                    float4* o, long long wper, long long base, float* out)
{
    scan_w(a, per, chunks, o, wper, base, out);
}
// window: block b reads chunk b (fresh), then chunk b - lag (read by block b - lag); with `o`,
// it writes chunk b of `o` (ones) after its first read. `per` float4 per chunk.
extern "C" __global__ void window(const float4* __restrict__ a, long long per, long long lag,
                                  float4* o, float* out)
{
    const long long b = blockIdx.x;
    float s = 0.0f;
    for (long long i = threadIdx.x; i < per; i += blockDim.x) {
        const float4 v = a[b * per + i];
        s += v.x + v.y + v.z + v.w - 4.0f;
        if (o) {
            o[b * per + i] = make_float4(1.0f, 1.0f, 1.0f, 1.0f);
        }
    }
    if (b >= lag) {
        for (long long i = threadIdx.x; i < per; i += blockDim.x) {
            const float4 v = a[(b - lag) * per + i];
            s += v.x + v.y + v.z + v.w - 4.0f;
        }
    }
    if (s != 0.0f) {
        atomicAdd(out, s);
    }
}
// window with a hit between: block b reads chunk b, then chunk b - lag1 (a hit while the chunk
// is young), then chunk b - lag2.
extern "C" __global__ void window3(const float4* __restrict__ a, long long per, long long lag1,
                                   long long lag2, float* out)
{
    const long long b = blockIdx.x;
    float s = 0.0f;
    for (long long i = threadIdx.x; i < per; i += blockDim.x) {
        const float4 v = a[b * per + i];
        s += v.x + v.y + v.z + v.w - 4.0f;
    }
    if (b >= lag1) {
        for (long long i = threadIdx.x; i < per; i += blockDim.x) {
            const float4 v = a[(b - lag1) * per + i];
            s += v.x + v.y + v.z + v.w - 4.0f;
        }
    }
    if (b >= lag2) {
        for (long long i = threadIdx.x; i < per; i += blockDim.x) {
            const float4 v = a[(b - lag2) * per + i];
            s += v.x + v.y + v.z + v.w - 4.0f;
        }
    }
    if (s != 0.0f) {
        atomicAdd(out, s);
    }
}
extern "C" __global__ void halves(const float* __restrict__ a, long long groups, long long lag,
                                  float* __restrict__ out)
{
    // Block b reads the first sectors of group b's 32 chunks (64 B each) and the second sectors
    // of group b - lag's.
    const long long b = blockIdx.x, t = threadIdx.x;
    float s = 0.0f, want = 0.0f;
    if (b < groups) { s += a[(b * 32 + t / 8) * 16 + t % 8]; want += 1.0f; }
    if (b >= lag) { s += a[((b - lag) * 32 + t / 8) * 16 + 8 + t % 8]; want += 1.0f; }
    if (s != want) atomicAdd(out, 1.0f);
}
// segments: NSEG segments of a buffer, `stride` float4 apart; block b reads its `per` float4 of
// every segment, segment by segment (as a SoA kernel's block reads its rows of every array), and
// where `o` is given writes a float4 of ones after each read to the same place of the segment in
// `o` (as a SoA kernel writes its arrays).
__device__ void seg_scan(const float4* __restrict__ a, long long stride, int nseg, long long per,
                         float4* __restrict__ o, float* out)
{
    const long long b = blockIdx.x;
    float s = 0.0f;
    int n = 0;
    for (int q = 0; q < nseg; ++q)
        for (long long i = threadIdx.x; i < per; i += blockDim.x, ++n) {
            const float4 v = a[q * stride + b * per + i];
            s += v.x + v.y + v.z + v.w;
            if (o) o[q * stride + b * per + i] = make_float4(1.0f, 1.0f, 1.0f, 1.0f);
        }
    if (s != 4.0f * n) atomicAdd(out, 1.0f);
}
extern "C" __global__ void seg_warm(const float4* __restrict__ a, long long stride, int nseg,
                                    long long per, float* out)
{
    seg_scan(a, stride, nseg, per, nullptr, out);
}
extern "C" __global__ void seg_reread(const float4* __restrict__ a, long long stride, int nseg,
                                      long long per, float* out)
{
    seg_scan(a, stride, nseg, per, nullptr, out);
}
extern "C" __global__ void segw_warm(const float4* __restrict__ a, long long stride, int nseg,
                                     long long per, float4* __restrict__ o, float* out)
{
    seg_scan(a, stride, nseg, per, o, out);
}
extern "C" __global__ void segw_reread(const float4* __restrict__ a, long long stride, int nseg,
                                       long long per, float4* __restrict__ o, float* out)
{
    seg_scan(a, stride, nseg, per, o, out);
}
// lines: K sectors of every 128-byte line read, one word per lane (8 lanes per sector).
__device__ void line_scan(const float* __restrict__ a, long long lines, int k, float* out)
{
    const long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    const long long line = t / (8 * k);
    if (line >= lines) return;
    const int w = (int)(t % (8 * k));
    if (a[line * 32 + (w / 8) * 8 + w % 8] != 1.0f) atomicAdd(out, 1.0f);
}
extern "C" __global__ void lines_warm(const float* __restrict__ a, long long lines, int k, float* out)
{
    line_scan(a, lines, k, out);
}
extern "C" __global__ void lines_reread(const float* __restrict__ a, long long lines, int k,
                                        float* out)
{
    line_scan(a, lines, k, out);
}
// sibling: sector `sector` of every line, one word per lane.
__device__ void line_sector(const float* __restrict__ a, long long lines, int sector, float* out)
{
    const long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (t / 8 >= lines) return;
    if (a[(t / 8) * 32 + sector * 8 + t % 8] != 1.0f) atomicAdd(out, 1.0f);
}
extern "C" __global__ void sib_first(const float* __restrict__ a, long long lines, int sector,
                                     float* out)
{
    line_sector(a, lines, sector, out);
}
extern "C" __global__ void sib_touch(const float* __restrict__ a, long long lines, int sector,
                                     float* out)
{
    line_sector(a, lines, sector, out);
}
extern "C" __global__ void sib_last(const float* __restrict__ a, long long lines, int sector,
                                    float* out)
{
    line_sector(a, lines, sector, out);
}
// pprio: sectors of 64-byte chunks, one per lane: `which` 0 the first sectors, 1 the second
// ones, 2 both (the whole chunk).
__device__ void chunk_sectors(const float* __restrict__ a, long long chunks, int which,
                              float* __restrict__ out)
{
    const long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (t / 8 >= chunks) return;
    const long long c = t / 8;
    float s = 0.0f, want = 0.0f;
    if (which != 1) { s += a[c * 16 + t % 8]; want += 1.0f; }
    if (which != 0) { s += a[c * 16 + 8 + t % 8]; want += 1.0f; }
    if (s != want) atomicAdd(out, 1.0f);
}
extern "C" __global__ void first_halves(const float* __restrict__ a, long long chunks, int which,
                                        float* __restrict__ out)
{
    chunk_sectors(a, chunks, which, out);
}
extern "C" __global__ void second_halves(const float* __restrict__ a, long long chunks,
                                         float* __restrict__ out)
{
    chunk_sectors(a, chunks, 1, out);
}
extern "C" __global__ void paced_halves(const float* __restrict__ a, long long quads, int dep,
                                        int spin, float* __restrict__ out)
{
    // Each warp loops over groups of 4 chunks: their first sectors, then their second ones.
    const long long warps = (long long)gridDim.x * blockDim.x / 32;
    const int lane = threadIdx.x % 32;
    float s = 0.0f;
    long long n = 0;
    for (long long g = (blockIdx.x * (long long)blockDim.x + threadIdx.x) / 32; g < quads;
         g += warps, ++n) {
        const long long chunk = g * 4 + lane / 8;
        const float v1 = a[chunk * 16 + lane % 8];
        long long i2 = chunk * 16 + 8 + lane % 8;
        if (dep) {
            // The second load waits for the first (its address depends on the value), then spins.
            i2 += v1 != 1.0f;
            if (v1 == 1.0f && spin > 0) {
                const long long t0 = clock64();
                while (clock64() - t0 < spin) {}
            }
        }
        s += v1 + a[i2];
    }
    if (s != 2.0f * n) atomicAdd(out, 1.0f);
}
extern "C" __global__ void copy(const float* __restrict__ a, float* __restrict__ b, int n)
{
    const long long r = record_of(n) * Q;
    float v[Q];
#pragma unroll
    for (int q = 0; q < Q; ++q) v[q] = a[r + q];
#pragma unroll
    for (int q = 0; q < Q; ++q) b[r + q] = v[q] + 1.0f;
}
extern "C" __global__ void copy_spin(const float* __restrict__ a, float* __restrict__ b, int n,
                                     int spin)
{
    // `copy` with a wait, in a kernel of its own so that `copy` compiles as its committed runs.
    const long long r = record_of(n) * Q;
    float v[Q];
#pragma unroll
    for (int q = 0; q < Q; ++q) v[q] = a[r + q];
    // The wait starts once the loaded values are there (it depends on them).
    if (v[0] != -1.0f && v[Q - 1] != -1.0f) {
        const long long t0 = clock64();
        while (clock64() - t0 < spin) {}
    }
#pragma unroll
    for (int q = 0; q < Q; ++q) b[r + q] = v[q] + 1.0f;
}
extern "C" __global__ void copy_gap(const float* __restrict__ a, float* __restrict__ b, int n,
                                    int gap, float one, float zero)
{
    // `copy_spin` at no wait, with `gap` dependent FMAs before each store after the first: each
    // store's value depends on the chain (`one` and `zero` are 1 and 0, unknown to the
    // compiler), so the stores go out that many instructions apart.
    const long long r = record_of(n) * Q;
    float v[Q];
#pragma unroll
    for (int q = 0; q < Q; ++q) v[q] = a[r + q];
    float c = v[0];
#pragma unroll
    for (int q = 0; q < Q; ++q) {
        if (q > 0)
            for (int i = 0; i < gap; ++i) c = fmaf(c, one, zero);
        b[r + q] = fmaf(c, zero, v[q] + 1.0f);
    }
}
extern "C" __global__ void copy_skew(const float* __restrict__ a, float* __restrict__ b, int n,
                                     int spin)
{
    // `copy_spin` with the wait staggered across the block's warps: warp w of W waits
    // spin * w / W cycles, so that the block's warps no longer store together.
    const long long r = record_of(n) * Q;
    const int threads = blockDim.x * blockDim.y * blockDim.z;
    const int w = (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) / 32;
    const int warps = (threads + 31) / 32;
    float v[Q];
#pragma unroll
    for (int q = 0; q < Q; ++q) v[q] = a[r + q];
    if (v[0] != -1.0f && v[Q - 1] != -1.0f) {
        const long long t0 = clock64(), wait = (long long)spin * w / warps;
        while (clock64() - t0 < wait) {}
    }
#pragma unroll
    for (int q = 0; q < Q; ++q) b[r + q] = v[q] + 1.0f;
}
// `copy_gap` with a chain of G FMAs unrolled at compile time (no loop, no branch between stores).
template <int G>
__device__ void copy_chain(const float* __restrict__ a, float* __restrict__ b, int n, float one,
                           float zero)
{
    const long long r = record_of(n) * Q;
    float v[Q];
#pragma unroll
    for (int q = 0; q < Q; ++q) v[q] = a[r + q];
    float c = v[0];
#pragma unroll
    for (int q = 0; q < Q; ++q) {
        if (q > 0) {
#pragma unroll
            for (int i = 0; i < G; ++i) c = fmaf(c, one, zero);
        }
        b[r + q] = fmaf(c, zero, v[q] + 1.0f);
    }
}
extern "C" __global__ void copy_chain1(const float* __restrict__ a, float* __restrict__ b, int n,
                                       float one, float zero) { copy_chain<1>(a, b, n, one, zero); }
extern "C" __global__ void copy_chain2(const float* __restrict__ a, float* __restrict__ b, int n,
                                       float one, float zero) { copy_chain<2>(a, b, n, one, zero); }
extern "C" __global__ void copy_chain4(const float* __restrict__ a, float* __restrict__ b, int n,
                                       float one, float zero) { copy_chain<4>(a, b, n, one, zero); }
// The record copy of K fold points per thread, the fold points blockDim.z apart along z (as the
// emitters fold): every store needs the sum of every loaded word (as an LBM collision needs the
// density), so all loads go first; the stores interleaved across the records (INTER) or each
// record's together.
template <int K, int INTER>
__device__ void copy_fold(const float* __restrict__ a, float* __restrict__ b, int n)
{
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = blockIdx.y * blockDim.y + threadIdx.y;
    const int z0 = blockIdx.z * blockDim.z * K + threadIdx.z;
    long long r[K];
    float v[K][Q];
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < K; ++k) {
        r[k] = (x + (long long)n * (y + (long long)n * (z0 + k * (int)blockDim.z))) * Q;
#pragma unroll
        for (int q = 0; q < Q; ++q) {
            v[k][q] = a[r[k] + q];
            s += v[k][q];
        }
    }
    // 1 for the records `launch` fills (their words sum to K * Q * (Q + 1) / 2), and not known
    // to the compiler.
    const float one = s > 0.0f ? 1.0f : 2.0f;
    if (INTER) {
#pragma unroll
        for (int q = 0; q < Q; ++q)
#pragma unroll
            for (int k = 0; k < K; ++k) b[r[k] + q] = v[k][q] + one;
    } else {
#pragma unroll
        for (int k = 0; k < K; ++k)
#pragma unroll
            for (int q = 0; q < Q; ++q) b[r[k] + q] = v[k][q] + one;
    }
}
extern "C" __global__ void copy_fold2_i(const float* __restrict__ a, float* __restrict__ b, int n)
{ copy_fold<2, 1>(a, b, n); }
extern "C" __global__ void copy_fold2_a(const float* __restrict__ a, float* __restrict__ b, int n)
{ copy_fold<2, 0>(a, b, n); }
extern "C" __global__ void copy_fold4_i(const float* __restrict__ a, float* __restrict__ b, int n)
{ copy_fold<4, 1>(a, b, n); }
extern "C" __global__ void copy_fold4_a(const float* __restrict__ a, float* __restrict__ b, int n)
{ copy_fold<4, 0>(a, b, n); }
// l2rate: `passes` reads of `lines` lines through L2 only, a line per warp instruction
// (`sector` 0) or a sector of each of 32 lines (1); every word is 1.
extern "C" __global__ void l2rate(const float* __restrict__ a, long long lines, int sector,
                                  int passes, float* out)
{
    const long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    const long long n = (long long)gridDim.x * blockDim.x;
    // Words read per pass: every word of every line, or the first word of each of a line's
    // four sectors, consecutive threads in consecutive lines.
    const long long words = sector ? lines * 32 / 8 : lines * 32;
    float bad = 0.0f;
    for (int p = 0; p < passes; ++p)
        for (long long i = t; i < words; i += n) {
            const long long w = sector ? ((i % lines) * 32 + (i / lines) * 8) : i;
            bad += __ldcg(a + w) != 1.0f;
        }
    if (bad != 0.0f) atomicAdd(out, bad);
}
extern "C" __global__ void soa_store(float* __restrict__ a, int n)
{
    const long long r = record_of(n);
    const long long cells = (long long)n * n * n;
#pragma unroll
    for (int q = 0; q < Q; ++q) a[q * cells + r] = (float)(q + 1);
}
"""
METRICS = [
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "lts__t_sectors_srcunit_tex_op_read.sum",
    "lts__t_sectors_srcunit_tex_op_write.sum",
    "lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum",
    "lts__t_sectors_srcunit_tex_op_write_lookup_miss.sum",
    "gpu__time_duration.sum",
]
# The probe sets `measure` runs.
SETS = ("traffic", "partial", "capacity", "wcapacity", "stagger", "runs", "runarrays", "runmisses",
        "partialdist", "runspin", "threshold", "pstride", "partner", "promote", "sibling", "pprio",
        "segments", "lines", "window", "window3", "copyspin", "afterloads", "recordshape",
        "occupancy", "l2rate", "storegap", "warpskew", "foldstore")
WINDOW_CHUNKS = 1 << 15  # window: 32 Ki chunks of 16 KiB, 512 MiB read fresh
WINDOW_PER = 1024  # window: float4 per chunk
WINDOW_LAGS = (16, 128, 512, 1024, 1536, 2048, 2560, 3072, 4096)
WINDOW_HIT_LAG = 16  # window3: the read between, a hit (window: none lost at 16)
SECTORS = 1 << 22  # sectors read or written by gather and scatter: 128 MiB
EDGE = 256  # records, records-read and soa-store: a 256^3 domain
LIMIT_L2_FETCH = 0x05  # cudaLimitMaxL2FetchGranularity
PACED_CELLS = 1 << 22  # paced: 4 Mi records, 319 MB
BLOCKS = [(8, 8, 16), (4, 16, 16), (16, 8, 8), (16, 64, 1), (32, 4, 2), (64, 2, 1), (128, 1, 1),
          (256, 1, 1), (256, 4, 1), (32, 1, 1)]


RUNS_SOURCE_WORDS = 1 << 21  # runs: an 8 MiB source, read from L2 after its first pass
RUNS_L2_STEP = (1 << 18) + 32  # runs: words between a thread's loads through L2 (1 MiB + a line)


RUNARRAYS_SECTORS = SECTORS // 2  # runarrays: sectors per array (64 MiB; 19 fill the records)
RUNS_DRAM_STEP = -1  # runmisses, partialdist: each warp reads lines none read before (from DRAM)


def runarrays_blocks(pt):
    """The blocks of a `runarrays` launch: every store count writes arrays of RUNARRAYS_SECTORS
    sectors, so that the grids are alike (about 4 waves of 4-fold-point blocks of 256 threads on
    an H200) and only the stores per fold point differ."""
    return RUNARRAYS_SECTORS * pt["pieces"] // (pt["threads"] * pt["folds"])


def runarrays_point(mode, folds, loads, via, stores, apart=True, spin=None):
    """A `runarrays` launch: two pieces per sector, blocks of 256 threads (`spin` recorded only
    where given, as the sets without it wrote their points)."""
    pt = {"probe": "runarrays", "pieces": 2, "mode": mode, "threads": 256, "folds": folds,
          "loads": loads, "via": via, "stores": stores, "apart": apart}
    if spin is not None:
        pt["spin"] = spin
    return pt


PARTNER_CHUNKS = 1 << 21  # halves, paced-halves: 128 MiB of 64-byte chunks
READ_BLOCKS_PER_SM = 8  # reread: blocks of 256 threads, all resident
SOA_ARRAY_BYTES = 272 ** 3 * 4  # segments: a D3Q19 SoA array of 256^3 with 8 ghost layers
SEGMENTS = 19  # segments: D3Q19's arrays
PROMOTE_MB = 8  # promote: the buffer read again and again
L2RATE_PASSES = 24  # l2rate: passes over the buffer (the first one fills L2)


def reread_shape(mb, sms):
    """reread's chunks (one per block of a full wave) and float4s per chunk for MB MiB."""
    chunks = sms * READ_BLOCKS_PER_SM
    return chunks, mb * (1 << 20) // 16 // chunks


def plan(which):
    """One dict per launch, in launch order."""
    pts = []
    if which == "stagger":
        # A sector's pieces from blocks on different SMs, further and further apart in time,
        # without and with reads streaming through L2 meanwhile.
        for loads in (0, 16):
            for stagger in (0, 2000, 8000, 32000):
                pts.append({"probe": "pieces", "pieces": 4, "mode": "blocks", "loads": loads,
                            "stagger": stagger})
            pts.append({"probe": "pieces", "pieces": 1, "mode": "blocks", "loads": loads,
                        "stagger": 8000})
        return pts
    if which == "partner":
        for lag in (0, 1, 4, 16, 64, 256, 1024, 4096, 16384):
            pts.append({"probe": "halves", "lag": lag, "fetch_limit": None})
        for lag in (0, 4096):
            pts.append({"probe": "halves", "lag": lag, "fetch_limit": 32})
        for w in (4, 16, 64):
            pts.append({"probe": "paced-halves", "warps_per_sm": w, "dep": 0, "spin": 0})
            for spin in (0, 1000, 4000, 16000):
                pts.append({"probe": "paced-halves", "warps_per_sm": w, "dep": 1, "spin": spin})
        return pts
    if which == "threshold":
        # Partly written sectors never completed, fewer and more than the L2 holds; and sectors
        # completed `lag` blocks later, so that about lag * 64 are partly written at a time.
        for n in (1 << 12, 1 << 14, 1 << 16, 1 << 17, 1 << 18, 1 << 19, 1 << 20, 1 << 21, 1 << 22):
            pts.append({"probe": "scatter", "stride": 32, "words": 1, "sectors": n})
        pts.append({"probe": "scatter", "stride": 32, "words": 8, "sectors": 1 << 18})
        for lag in (1, 4, 16, 64, 256, 1024, 4096, 16384):
            pts.append({"probe": "lag", "lag": lag})
        return pts
    if which == "pstride":
        # Partly written sectors never completed, as `scatter` in the set `threshold`, but dealt
        # to groups far apart (a stencil's output planes: 264^2 f64 elements; a warp of tiles one
        # or two wide writes into 8 to 32 planes at once): does the L2's limit of partly written
        # sectors fall where they crowd into fewer sets?
        plane = 264 * 264 * 8
        for groups, stride in ((1, 32), (32, plane), (256, plane)):
            for n in (1 << 13, 1 << 15, 1 << 16, 1 << 17, 1 << 18, 1 << 19):
                pts.append({"probe": "pscatter", "groups": groups, "stride": stride, "sectors": n})
        for stride in (plane + 32, 1 << 19):
            for n in (1 << 15, 1 << 17):
                pts.append({"probe": "pscatter", "groups": 256, "stride": stride, "sectors": n})
        # Fewer groups; 8-byte pieces (a f64 stencil's); and one group with the sectors further
        # apart than 32 B (one partly written sector per line, per 4 lines, per page).
        for groups in (2, 4, 8):
            pts.append({"probe": "pscatter", "groups": groups, "stride": 8 * plane,
                        "sectors": 1 << 17})
        for n in (1 << 16, 1 << 17):
            pts.append({"probe": "pscatter", "groups": 256, "stride": plane, "sectors": n,
                        "words": 2})
        for step in (128, 512, 4096):
            for n in (1 << 15, 1 << 16, 1 << 17):
                pts.append({"probe": "pscatter", "groups": 1, "stride": 0, "step": step,
                            "sectors": n})
        return pts
    if which == "copyspin":
        for b in ((8, 8, 16), (8, 8, 8), (8, 8, 4), (32, 4, 1)):
            for spin in (0, 1000, 4000, 16000):
                pts.append({"probe": "copy", "block": list(b), "spin": spin})
        return pts
    if which == "recordshape":
        # 32-warp blocks of different shapes, as copied (stores as loads return) and with the
        # stores after all loads: whether rows of records that fill whole lines (32 records are
        # 19 lines) lose less than short rows whose lines other warps and blocks share.
        for b in ((8, 8, 16), (16, 8, 8), (4, 16, 16), (16, 16, 4), (32, 32, 1), (64, 16, 1),
                  (256, 4, 1), (32, 8, 4), (16, 64, 1), (8, 128, 1)):
            pts.append({"probe": "copy", "block": list(b)})
            pts.append({"probe": "copy", "block": list(b), "spin": 0})
        return pts
    if which == "occupancy":
        # The record copy with its stores after all loads, at fewer blocks per SM than fit.
        for b, bps in (((128, 1, 1), (16, 12, 8, 4)), ((8, 8, 4), (8, 6, 4, 2)),
                       ((8, 8, 8), (4, 3, 2, 1)), ((8, 8, 16), (2, 1))):
            for k in bps:
                pts.append({"probe": "copy", "block": list(b), "spin": 0, "bps": k})
        return pts
    if which == "warpskew":
        # The record copy with its stores after all loads, waiting before its stores: every warp
        # alike (`copy_spin`) or staggered across the block's warps (`copy_skew`).
        for b in ((32, 4, 1), (8, 8, 4), (8, 8, 8), (8, 8, 16)):
            for spin in (0, 1000, 4000, 16000):
                pts.append({"probe": "copy", "block": list(b), "spin": spin})
                if spin:
                    pts.append({"probe": "copy", "block": list(b), "spin": spin, "skew": 1})
        return pts
    if which == "foldstore":
        # The record copy of K fold points per thread, stores interleaved or apart; K = 1 is
        # the set `afterloads`' copy.
        for b in ((32, 4, 1), (8, 8, 4), (8, 8, 8), (8, 8, 16)):
            pts.append({"probe": "copy", "block": list(b), "spin": 0})
            # Four records' 76 words live at once need more than the 64 registers a thread of
            # a 1024-thread block may have.
            for k in (2, 4) if b[2] < 16 else (2,):
                for inter in (1, 0):
                    pts.append({"probe": "copy", "block": list(b), "fold": k, "inter": inter})
        return pts
    if which == "storegap":
        # The record copy with its stores after all loads, a chain of FMAs before each store.
        for b in ((128, 1, 1), (8, 8, 4), (8, 8, 8), (8, 8, 16)):
            for gap in (0, 2, 4, 8, 16):
                pts.append({"probe": "copy", "block": list(b), "spin": 0, "gap": gap})
            for chain in (1, 2, 4):
                pts.append({"probe": "copy", "block": list(b), "spin": 0, "chain": chain})
        return pts
    if which == "l2rate":
        for mode in ("line", "sector"):
            for bps in (2, 4, 8):
                pts.append({"probe": "l2rate", "mode": mode, "bps": bps, "mb": PROMOTE_MB,
                            "passes": L2RATE_PASSES})
        return pts
    if which == "afterloads":
        # The record copy whose stores wait for all its loads (`copy_spin` at no wait), at the
        # blocks of the set `partial`'s copy: the share of a kernel whose every store needs
        # every load (an LBM collision), where `copy` stores each word as its load returns.
        for b in ((8, 8, 16), (8, 8, 8), (8, 8, 4), (32, 4, 1), (128, 1, 1), (32, 1, 1)):
            pts.append({"probe": "copy", "block": list(b), "spin": 0})
        return pts
    if which == "runs":
        for k in (2, 4):
            for threads in (32, 64, 256, 1024):
                for loads, via in ((0, "l1"), (32, "l1"), (8, "l2"), (32, "l2")):
                    for mode, folds in (("blocks", 1), ("blocks", 4), ("blocks", 16),
                                        ("fold", 4), ("fold", 16)):
                        pts.append({"probe": "runs", "pieces": k, "mode": mode,
                                    "threads": threads, "folds": folds, "loads": loads,
                                    "via": via})
        return pts
    if which == "runarrays":
        # Per store count, the launch `runs` compares with (one fold point, no loads), then the
        # two sources of a sector's pieces, 4 fold points, 8 loads via L2 before each.
        for stores, apart in ((1, True), (4, True), (4, False), (19, True), (19, False)):
            for mode, folds, loads in (("blocks", 1, 0), ("blocks", 4, 8), ("fold", 4, 8)):
                pts.append(runarrays_point(mode, folds, loads, "l2", stores, apart))
        return pts
    if which == "partialdist":
        pts.append(runarrays_point("blocks", 1, 0, "l2", 1))
        for loads in (0, 4, 8, 16, 32, 64, 128):
            for mode in ("blocks", "fold"):
                pts.append(runarrays_point(mode, 4, loads, "dram", 1))
        return pts
    if which == "runspin":
        # Per spin, the two sources of a sector's pieces (4 stores per fold point, arrays apart,
        # 8 loads via L2 before each), and the control.
        pts.append(runarrays_point("blocks", 1, 0, "l2", 4))
        for spin in (0, 1000, 4000, 16000):
            for mode in ("blocks", "fold"):
                pts.append(runarrays_point(mode, 4, 8, "l2", 4, spin=spin))
        return pts
    if which == "runmisses":
        # Per store count, the control, then the two sources of a sector's pieces with their
        # loads through L2 and from DRAM.
        for stores in (1, 4, 19):
            pts.append(runarrays_point("blocks", 1, 0, "l2", stores))
            for via in ("l2", "dram"):
                for mode in ("blocks", "fold"):
                    pts.append(runarrays_point(mode, 4, 8, via, stores))
        return pts
    if which == "wcapacity":
        for w in (0.5, 1.0):
            for mb in (4, 8, 12, 16, 20, 24, 28, 32, 40):
                pts.append({"probe": "reread", "mb": mb, "mapping": "twice", "writes": w})
        for mb in (16, 24, 32, 40):
            pts.append({"probe": "reread", "mb": mb, "mapping": "twice", "writes": 0.0})
        return pts
    if which == "window":
        for w in (0, 1, 2):
            for lag in WINDOW_LAGS:
                pts.append({"probe": "window", "lag": lag, "writes": w})
        return pts
    if which == "window3":
        for lag in WINDOW_LAGS[2:]:
            pts.append({"probe": "window3", "lag1": WINDOW_HIT_LAG, "lag": lag})
        return pts
    if which == "lines":
        for k, limit in ((4, None), (2, None), (1, None), (1, 32)):
            for mb in (16, 24, 32, 40, 44, 48, 56, 64):
                pts.append({"probe": "lines", "mb": mb, "sectors": k, "fetch_limit": limit})
        return pts
    if which == "segments":
        for stride in (0, SOA_ARRAY_BYTES, 1 << 26):
            for mb in (16, 24, 32, 36, 40, 44, 48, 56):
                pts.append({"probe": "segments", "mb": mb, "stride": stride})
        for stride in (0, SOA_ARRAY_BYTES):
            for mb in (8, 10, 12, 14, 16, 20, 24):
                pts.append({"probe": "segments", "mb": mb, "stride": stride, "writes": True})
        return pts
    if which == "pprio":
        for stream in (0, 8, 16, 24, 28, 32, 40):
            for first in ("half", "whole"):
                pts.append({"probe": "pprio", "mb": PROMOTE_MB, "first": first, "stream": stream})
        return pts
    if which == "sibling":
        for stream in (4, 8, 12, 16, 20, 24):
            for touch in ("none", "same", "sibling"):
                pts.append({"probe": "sibling", "mb": PROMOTE_MB, "stream": stream,
                            "touch": touch})
        return pts
    if which == "promote":
        for stream in (8, 12, 16, 20, 24, 28, 32):
            for touches, by in ((0, "same"), (1, "same"), (1, "shifted"), (2, "same"),
                                (4, "same")):
                pts.append({"probe": "promote", "mb": PROMOTE_MB, "stream": stream,
                            "touches": touches, "by": by})
        return pts
    if which == "capacity":
        for mapping in ("same", "shifted", "twice"):
            for mb in (8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 56, 64, 96):
                pts.append({"probe": "reread", "mb": mb, "mapping": mapping})
        return pts
    if which == "partial":
        # Data written meanwhile: warps per SM from 1 to 64, in blocks of one warp and in one block.
        for w in (1, 2, 4, 8, 16, 32, 64):
            pts.append({"probe": "paced", "warps_per_sm": w, "threads": 32, "spin": 0})
        for w in (4, 16, 32):
            pts.append({"probe": "paced", "warps_per_sm": w, "threads": 32 * w, "spin": 0})
        # Time: the same warps, slowed down.
        for w in (2, 16):
            for spin in (500, 2000, 8000):
                pts.append({"probe": "paced", "warps_per_sm": w, "threads": 32, "spin": spin})
        for b in ((8, 8, 16), (8, 8, 8), (8, 8, 4), (32, 4, 1), (128, 1, 1), (32, 1, 1)):
            pts.append({"probe": "copy", "block": list(b)})
        for k in (1, 2, 4, 8):
            for mode in ("blocks", "warps"):
                pts.append({"probe": "pieces", "pieces": k, "mode": mode, "loads": 0})
        for k in (1, 4):
            for loads in (4, 16):
                pts.append({"probe": "pieces", "pieces": k, "mode": "blocks", "loads": loads})
        return pts
    for limit in (None, 32, 128):
        for stride in (32, 64, 128, 256):
            pts.append({"probe": "gather", "stride": stride, "fetch_limit": limit})
    for words, stride in ((1, 32), (4, 32), (8, 32), (8, 64), (4, 64)):
        pts.append({"probe": "scatter", "stride": stride, "words": words})
    for b in BLOCKS:
        pts.append({"probe": "records", "block": list(b)})
    for b in ((8, 8, 16), (128, 1, 1), (16, 64, 1), (256, 4, 1)):
        pts.append({"probe": "records-read", "block": list(b)})
    for b in ((8, 8, 16), (16, 64, 1), (128, 1, 1)):
        pts.append({"probe": "soa-store", "block": list(b)})
    return pts


def launch(plan_path):
    import cupy as cp

    rt = cp.cuda.runtime
    mod = cp.RawModule(code=SOURCE)
    p = json.load(open(plan_path))["points"]
    big = cp.ones(SECTORS * 256 // 4 + 64, dtype=cp.float32)
    cells = EDGE ** 3
    rec = cp.zeros(cells * Q, dtype=cp.float32)
    out = cp.zeros(1, dtype=cp.float32)
    default_limit = rt.deviceGetLimit(LIMIT_L2_FETCH)
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    seg = None
    for pt in p:
        kind = pt["probe"]
        if os.environ.get("L2_TRAFFIC_TRACE"):
            print(pt, flush=True)
        if kind == "gather":
            rt.deviceSetLimit(LIMIT_L2_FETCH, pt["fetch_limit"] or default_limit)
            mod.get_function("gather")((SECTORS * 8 // 256,), (256,),
                                       (big, cp.int64(SECTORS), cp.int32(pt["stride"] // 4), out))
            rt.deviceSynchronize()
            rt.deviceSetLimit(LIMIT_L2_FETCH, default_limit)
            if float(out[0]) != 0.0:
                sys.exit(f"gather {pt}: read something other than the ones written")
        elif kind == "scatter":
            n = pt.get("sectors", SECTORS)
            big.fill(1.0)
            mod.get_function("scatter")((n * 8 // 256,), (256,),
                                        (big, cp.int64(n), cp.int32(pt["stride"] // 4),
                                         cp.int32(pt["words"])))
            rt.deviceSynchronize()
            view = big[:n * pt["stride"] // 4].reshape(n, pt["stride"] // 4)
            if not (bool(cp.all(view[:, :pt["words"]] == 2.0))
                    and bool(cp.all(view[:, pt["words"]:] == 1.0))):
                sys.exit(f"scatter {pt}: wrong words written")
            big.fill(1.0)
        elif kind == "pscatter":
            n, g, sw = pt["sectors"], pt["groups"], pt["stride"] // 4
            step, words = pt.get("step", 32) // 4, pt.get("words", 1)
            big.fill(1.0)
            mod.get_function("scatter_groups")((-(-n // 256),), (256,),
                                               (big, cp.int64(n), cp.int64(sw), cp.int32(g),
                                                cp.int32(step), cp.int32(words)))
            rt.deviceSynchronize()
            i = cp.arange(n, dtype=cp.int64)
            idx = (i % g) * sw + (i // g) * step
            ok = all(bool(cp.all(big[idx + w] == 2.0)) for w in range(words))
            if not (ok and int(cp.count_nonzero(big == 2.0)) == n * words):
                sys.exit(f"pscatter {pt}: wrong words written")
            big.fill(1.0)
        elif kind in ("halves", "paced-halves"):
            buf = big[:PARTNER_CHUNKS * 16]
            buf.fill(1.0)
            out.fill(0.0)
            rt.deviceSetLimit(LIMIT_L2_FETCH, pt.get("fetch_limit") or default_limit)
            if kind == "halves":
                groups = PARTNER_CHUNKS // 32
                mod.get_function("halves")((groups + pt["lag"],), (256,),
                                           (buf, cp.int64(groups), cp.int64(pt["lag"]), out))
            else:
                mod.get_function("paced_halves")((sms * pt["warps_per_sm"] // 4,), (128,),
                                                 (buf, cp.int64(PARTNER_CHUNKS // 4),
                                                  cp.int32(pt["dep"]), cp.int32(pt["spin"]), out))
            rt.deviceSynchronize()
            rt.deviceSetLimit(LIMIT_L2_FETCH, default_limit)
            if float(out[0]) != 0.0:
                sys.exit(f"{kind} {pt}: read something other than the ones written")
        elif kind == "window":
            buf = big[:WINDOW_CHUNKS * WINDOW_PER * 4]
            # W = 1: the output 2^29 bytes after the input; W = 2: 256 bytes further (the two
            # need not share L2 sets).
            skip = 64 if pt["writes"] == 2 else 0
            o = big[WINDOW_CHUNKS * WINDOW_PER * 4 + skip:][:WINDOW_CHUNKS * WINDOW_PER * 4]
            o.fill(0.0)
            out.fill(0.0)
            mod.get_function("window")((WINDOW_CHUNKS,), (256,),
                                       (buf, cp.int64(WINDOW_PER), cp.int64(pt["lag"]),
                                        o if pt["writes"] else cp.uint64(0), out))
            rt.deviceSynchronize()
            if float(out[0]) != 0.0:
                sys.exit(f"window {pt}: read something other than the ones written")
            if pt["writes"] and not bool(cp.all(o == 1.0)):
                sys.exit(f"window {pt}: wrong words written")
            big.fill(1.0)
        elif kind == "window3":
            buf = big[:WINDOW_CHUNKS * WINDOW_PER * 4]
            out.fill(0.0)
            mod.get_function("window3")((WINDOW_CHUNKS,), (256,),
                                        (buf, cp.int64(WINDOW_PER), cp.int64(pt["lag1"]),
                                         cp.int64(pt["lag"]), out))
            rt.deviceSynchronize()
            if float(out[0]) != 0.0:
                sys.exit(f"window3 {pt}: read something other than the ones written")
        elif kind == "reread" and "writes" in pt:
            chunks, per = reread_shape(pt["mb"], sms)
            buf = big[:per * chunks * 4]
            grid = 2 * chunks
            wper = int(per * pt["writes"])
            o = cp.zeros(max(1, 2 * grid * wper * 4), dtype=cp.float32)
            out.fill(0.0)
            args = (buf, cp.int64(per), cp.int32(chunks), o, cp.int64(wper))
            mod.get_function("warm_w")((grid,), (256,), args + (cp.int64(0), out))
            mod.get_function("reread_w")((grid,), (256,), args + (cp.int64(grid * wper), out))
            rt.deviceSynchronize()
            if float(out[0]) != 0.0:
                sys.exit(f"reread {pt}: read something other than the ones written")
            if wper and not bool(cp.all(o == 1.0)):
                sys.exit(f"reread {pt}: wrong words written")
            del o
        elif kind == "lines":
            nlines = pt["mb"] * (1 << 20) // 128
            buf = big[:nlines * 32]
            rt.deviceSetLimit(LIMIT_L2_FETCH, pt["fetch_limit"] or default_limit)
            out.fill(0.0)
            grid = (nlines * 8 * pt["sectors"] + 255) // 256
            for name in ("lines_warm", "lines_reread"):
                mod.get_function(name)((grid,), (256,), (buf, cp.int64(nlines),
                                                         cp.int32(pt["sectors"]), out))
            rt.deviceSynchronize()
            rt.deviceSetLimit(LIMIT_L2_FETCH, default_limit)
            if float(out[0]) != 0.0:
                sys.exit(f"lines {pt}: read something other than the ones written")
        elif kind == "segments":
            chunks, per = reread_shape(pt["mb"], sms)
            per = max(1, per // SEGMENTS)
            # In float4: packed segments lie per * chunks apart.
            stride = pt["stride"] // 16 if pt["stride"] else per * chunks
            if seg is None:
                # The read segments, then two sets of written ones.
                seg = cp.ones(3 * SEGMENTS * SOA_ARRAY_BYTES // 4 + 64, dtype=cp.float32)
            out.fill(0.0)
            if pt.get("writes"):
                span = SEGMENTS * stride
                for k, name in ((1, "segw_warm"), (2, "segw_reread")):
                    o = seg[k * span * 4:]
                    mod.get_function(name)((chunks,), (256,), (seg, cp.int64(stride),
                                                                cp.int32(SEGMENTS),
                                                                cp.int64(per), o, out))
                rt.deviceSynchronize()
                written = seg[span * 4:3 * span * 4].reshape(2, SEGMENTS, stride * 4)
                if not bool(cp.all(written[:, :, :chunks * per * 4] == 1.0)):
                    sys.exit(f"segments {pt}: wrong words written")
            else:
                args = (seg, cp.int64(stride), cp.int32(SEGMENTS), cp.int64(per), out)
                mod.get_function("seg_warm")((chunks,), (256,), args)
                mod.get_function("seg_reread")((chunks,), (256,), args)
            rt.deviceSynchronize()
            if float(out[0]) != 0.0:
                sys.exit(f"segments {pt}: read something other than the ones written")
        elif kind == "pprio":
            chunks = pt["mb"] * (1 << 20) // 64
            buf = big[:chunks * 16]
            out.fill(0.0)
            grid = (chunks * 8 + 255) // 256
            mod.get_function("first_halves")((grid,), (256,),
                                             (buf, cp.int64(chunks),
                                              cp.int32(0 if pt["first"] == "half" else 2), out))
            if pt["stream"]:
                schunks, sper = reread_shape(pt["stream"], sms)
                fresh = big[chunks * 16:][:sper * schunks * 4]
                mod.get_function("warm")((schunks,), (256,), (fresh, cp.int64(sper),
                                                              cp.int32(schunks), out))
            mod.get_function("second_halves")((grid,), (256,), (buf, cp.int64(chunks), out))
            rt.deviceSynchronize()
            if float(out[0]) != 0.0:
                sys.exit(f"pprio {pt}: read something other than the ones written")
        elif kind == "l2rate":
            nlines = pt["mb"] * (1 << 20) // 128
            out.fill(0.0)
            mod.get_function("l2rate")((sms * pt["bps"],), (256,),
                                       (big[:nlines * 32], cp.int64(nlines),
                                        cp.int32(pt["mode"] == "sector"),
                                        cp.int32(pt["passes"]), out))
            rt.deviceSynchronize()
            if float(out[0]) != 0.0:
                sys.exit(f"l2rate {pt}: read something other than the ones written")
        elif kind == "sibling":
            # The lines first, then two fresh regions of `stream` MiB after them in `big`.
            nlines = pt["mb"] * (1 << 20) // 128
            buf = big[:nlines * 32]
            schunks, sper = reread_shape(pt["stream"], sms)
            grid = (nlines * 8 + 255) // 256
            out.fill(0.0)
            args = (buf, cp.int64(nlines))
            mod.get_function("sib_first")((grid,), (256,), args + (cp.int32(0), out))
            for i in range(2):
                fresh = big[nlines * 32 + i * sper * schunks * 4:][:sper * schunks * 4]
                mod.get_function("warm")((schunks,), (256,), (fresh, cp.int64(sper),
                                                              cp.int32(schunks), out))
                if i == 0 and pt["touch"] != "none":
                    sector = 0 if pt["touch"] == "same" else 2
                    mod.get_function("sib_touch")((grid,), (256,), args + (cp.int32(sector), out))
            mod.get_function("sib_last")((grid,), (256,), args + (cp.int32(0), out))
            rt.deviceSynchronize()
            if float(out[0]) != 0.0:
                sys.exit(f"sibling {pt}: read something other than the ones written")
        elif kind == "promote":
            # The buffer first, then fresh regions of `stream` MiB after it in `big`.
            chunks, per = reread_shape(pt["mb"], sms)
            buf = big[:per * chunks * 4]
            schunks, sper = reread_shape(pt["stream"], sms)
            out.fill(0.0)
            warm = mod.get_function("warm")
            warm((chunks,), (256,), (buf, cp.int64(per), cp.int32(chunks), out))
            shift = chunks // 2 if pt["by"] == "shifted" else 0
            for i in range(pt["touches"] + 1):
                fresh = big[per * chunks * 4 + i * sper * schunks * 4:][:sper * schunks * 4]
                warm((schunks,), (256,), (fresh, cp.int64(sper), cp.int32(schunks), out))
                if i < pt["touches"]:
                    mod.get_function("touch")((chunks,), (256,), (buf, cp.int64(per),
                                                                  cp.int32(shift),
                                                                  cp.int32(chunks), out))
            mod.get_function("reread")((chunks,), (256,), (buf, cp.int64(per), cp.int32(0),
                                                           cp.int32(chunks), out))
            rt.deviceSynchronize()
            if float(out[0]) != 0.0:
                sys.exit(f"promote {pt}: read something other than the ones written")
        elif kind == "reread":
            chunks, per = reread_shape(pt["mb"], sms)
            buf = big[:per * chunks * 4]
            # `twice`: two blocks a grid's worth of chunks apart read each chunk, in both passes.
            grid = 2 * chunks if pt["mapping"] == "twice" else chunks
            out.fill(0.0)
            mod.get_function("warm")((grid,), (256,), (buf, cp.int64(per), cp.int32(chunks), out))
            shift = chunks // 2 if pt["mapping"] == "shifted" else 0
            mod.get_function("reread")((grid,), (256,), (buf, cp.int64(per), cp.int32(shift),
                                                         cp.int32(chunks), out))
            rt.deviceSynchronize()
            if float(out[0]) != 0.0:
                sys.exit(f"reread {pt}: read something other than the ones written")
        elif kind == "runarrays":
            # `runs` with S stores per fold point into S arrays of `per` sectors (every word of
            # the S arrays must end up 3).
            per, blocks = RUNARRAYS_SECTORS, runarrays_blocks(pt)
            dst = rec[:pt["stores"] * per * 8]
            dst.fill(0.0)
            # Loads via L2: an 8 MiB source; from DRAM: all of `big`, each load far past the last.
            source, step = ((big, RUNS_DRAM_STEP) if pt["via"] == "dram"
                            else (big[:RUNS_SOURCE_WORDS], RUNS_L2_STEP))
            source.fill(1.0)
            mod.get_function("runs_arrays")((blocks,), (pt["threads"],),
                                            (dst, cp.int32(pt["pieces"]),
                                             cp.int32(pt["mode"] == "fold"), cp.int32(pt["folds"]),
                                             source, cp.int64(source.size),
                                             cp.int32(pt["loads"]), cp.int64(step),
                                             cp.int32(pt["stores"]), cp.int32(pt["apart"]),
                                             cp.int64(per), cp.int32(pt.get("spin", 0))))
            rt.deviceSynchronize()
            if not bool(cp.all(dst == 3.0)):
                sys.exit(f"{kind} {pt}: wrong words written")
        elif kind in ("pieces", "lag", "runs"):
            # Sectors written in pieces into the records' buffer (every word must end up 3).
            dst = rec[:SECTORS * 8]
            dst.fill(0.0)
            if kind == "pieces":
                # Read (all ones) from the big buffer.
                big.fill(1.0)
                mod.get_function("pieces")((SECTORS * 8 // 256,), (256,),
                                           (dst, cp.int32(pt["pieces"]),
                                            cp.int32(pt["mode"] == "warps"), big,
                                            cp.int64(big.size), cp.int32(pt["loads"]),
                                            cp.int32(pt.get("stagger", 0))))
            elif kind == "lag":
                groups = SECTORS // 64
                mod.get_function("lag")((groups + pt["lag"],), (256,),
                                        (dst, cp.int64(groups), cp.int64(pt["lag"])))
            else:
                resident = big[:RUNS_SOURCE_WORDS]
                resident.fill(1.0)
                blocks = SECTORS * pt["pieces"] // (pt["threads"] * pt["folds"])
                mod.get_function("runs")((blocks,), (pt["threads"],),
                                         (dst, cp.int32(pt["pieces"]),
                                          cp.int32(pt["mode"] == "fold"), cp.int32(pt["folds"]),
                                          resident, cp.int64(RUNS_SOURCE_WORDS),
                                          cp.int32(pt["loads"]),
                                          cp.int64(RUNS_L2_STEP if pt["via"] == "l2" else 0)))
            rt.deviceSynchronize()
            if not bool(cp.all(dst == 3.0)):
                sys.exit(f"{kind} {pt}: wrong words written")
        elif kind == "paced":
            part = rec[:PACED_CELLS * Q]
            part.fill(0.0)
            blocks = sms * pt["warps_per_sm"] * 32 // pt["threads"]
            mod.get_function("paced")((blocks,), (pt["threads"],),
                                      (part, cp.int64(PACED_CELLS), cp.int32(pt["spin"])))
            rt.deviceSynchronize()
            want = cp.arange(1, Q + 1, dtype=cp.float32)
            if not bool(cp.all(part.reshape(PACED_CELLS, Q) == want)):
                sys.exit(f"paced {pt}: wrong records written")
        else:
            b = pt["block"]
            grid = tuple(EDGE // v for v in b)
            if "fold" in pt:
                grid = (grid[0], grid[1], grid[2] // pt["fold"])
            if kind == "records":
                rec.fill(0.0)
                mod.get_function("records")(grid, tuple(b), (rec, cp.int32(EDGE)))
                rt.deviceSynchronize()
                want = cp.arange(1, Q + 1, dtype=cp.float32)
                if not bool(cp.all(rec.reshape(cells, Q) == want)):
                    sys.exit(f"records {b}: wrong records written")
            elif kind == "copy":
                src = cp.empty((cells, Q), dtype=cp.float32)
                src[:] = cp.arange(1, Q + 1, dtype=cp.float32)
                rec.fill(0.0)
                if "fold" in pt:
                    name = f"copy_fold{pt['fold']}_{'i' if pt['inter'] else 'a'}"
                    mod.get_function(name)(grid, tuple(b), (src, rec, cp.int32(EDGE)))
                elif pt.get("skew"):
                    mod.get_function("copy_skew")(
                        grid, tuple(b), (src, rec, cp.int32(EDGE), cp.int32(pt["spin"])))
                elif "chain" in pt:
                    mod.get_function(f"copy_chain{pt['chain']}")(
                        grid, tuple(b), (src, rec, cp.int32(EDGE), cp.float32(1.0), cp.float32(0.0)))
                elif "gap" in pt:
                    mod.get_function("copy_gap")(
                        grid, tuple(b),
                        (src, rec, cp.int32(EDGE), cp.int32(pt["gap"]), cp.float32(1.0),
                         cp.float32(0.0)))
                elif "spin" in pt:
                    f = mod.get_function("copy_spin")
                    smem = occupancy_smem(pt.get("bps"))
                    f.max_dynamic_shared_size_bytes = smem
                    f(grid, tuple(b), (src, rec, cp.int32(EDGE), cp.int32(pt["spin"])),
                      shared_mem=smem)
                else:
                    mod.get_function("copy")(grid, tuple(b), (src, rec, cp.int32(EDGE)))
                rt.deviceSynchronize()
                want = cp.arange(2, Q + 2, dtype=cp.float32)
                if not bool(cp.all(rec.reshape(cells, Q) == want)):
                    sys.exit(f"copy {b}: wrong records written")
                del src
            elif kind == "records-read":
                rec.reshape(cells, Q)[:] = cp.arange(1, Q + 1, dtype=cp.float32)
                out.fill(0.0)
                mod.get_function("records_read")(grid, tuple(b), (rec, cp.int32(EDGE), out))
                rt.deviceSynchronize()
                if float(out[0]) != 0.0:
                    sys.exit(f"records-read {b}: {float(out[0])} records summed wrong")
            else:
                rec.fill(0.0)
                mod.get_function("soa_store")(grid, tuple(b), (rec, cp.int32(EDGE)))
                rt.deviceSynchronize()
                want = cp.arange(1, Q + 1, dtype=cp.float32)[:, None]
                if not bool(cp.all(rec.reshape(Q, cells) == want)):
                    sys.exit(f"soa-store {b}: wrong arrays written")
    print(json.dumps({"default_fetch_limit": default_limit}))


def measure(out_path, which):
    import cupy as cp

    points = plan(which)
    # The capacity set profiles the second pass only and must not flush before it; ncu replays
    # the whole process for each pass of metrics, so that every pass finds the L2 as the first
    # left it (kernel replay restores memory in between).
    cache, replay, names = (
        ("none", "application", ["reread"]) if which in ("capacity", "promote") else
        ("none", "application", ["second_halves"]) if which == "pprio" else
        ("none", "application", ["seg_reread", "segw_reread"]) if which == "segments" else
        ("none", "application", ["lines_reread"]) if which == "lines" else
        ("none", "application", ["sib_last"]) if which == "sibling" else
        ("none", "application", ["reread_w"]) if which == "wcapacity" else
        ("all", "kernel",
         ["gather", "scatter", "scatter_groups", "records", "records_read", "soa_store", "paced", "copy", "copy_spin", "copy_gap", "copy_chain1",
          "copy_chain2", "copy_chain4", "copy_skew", "copy_fold2_i", "copy_fold2_a",
          "copy_fold4_i", "copy_fold4_a", "pieces",
          "runs", "runs_arrays", "lag", "halves", "paced_halves", "window", "window3", "l2rate"]))
    # The set `occupancy` also reads the warps an SM kept resident.
    metrics = METRICS + (["sm__warps_active.avg.per_cycle_active"] if which == "occupancy"
                         else ["sm__cycles_elapsed.avg.per_second"] if which == "l2rate"
                         else [])
    rows, out = profile_plan(__file__, points, names, metrics, cache, replay)
    default_limit = json.loads(out.strip().splitlines()[-1])["default_fetch_limit"]
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    results = []
    for pt, row in zip(points, rows):
        m = {k: number(row[k]) for k in metrics}
        if pt["probe"] in ("halves", "paced-halves"):
            pt["units"], pt["unit_bytes"] = PARTNER_CHUNKS, 64
        elif pt["probe"] in ("gather", "scatter", "pscatter", "pieces", "runs", "lag"):
            pt["units"], pt["unit_bytes"] = pt.get("sectors", SECTORS), 32
        elif pt["probe"] == "runarrays":
            # Per sector written.
            pt["units"], pt["unit_bytes"] = pt["stores"] * RUNARRAYS_SECTORS, 32
        elif pt["probe"] == "paced":
            pt["units"], pt["unit_bytes"] = PACED_CELLS, 4 * Q
        elif pt["probe"] == "window3":
            # Per byte read a third time.
            pt["units"], pt["unit_bytes"] = (WINDOW_CHUNKS - pt["lag"]) * WINDOW_PER * 16, 1
        elif pt["probe"] == "window":
            # Per byte read a second time.
            pt["units"], pt["unit_bytes"] = (WINDOW_CHUNKS - pt["lag"]) * WINDOW_PER * 16, 1
        elif pt["probe"] == "l2rate":
            # Per sector read.
            lines = pt["mb"] * (1 << 20) // 128
            pt["units"] = lines * 4 * pt["passes"]
            pt["unit_bytes"] = 32
        elif pt["probe"] == "sibling":
            # Per sector the last kernel reads.
            pt["units"], pt["unit_bytes"] = pt["mb"] * (1 << 20) // 128, 32
        elif pt["probe"] == "lines":
            # Per sector read.
            pt["units"], pt["unit_bytes"] = pt["mb"] * (1 << 20) // 128 * pt["sectors"], 32
        elif pt["probe"] == "segments":
            chunks, per = reread_shape(pt["mb"], sms)
            pt["units"], pt["unit_bytes"] = max(1, per // SEGMENTS) * SEGMENTS * chunks * 16, 1
        elif pt["probe"] == "pprio":
            # Per sector the final kernel reads (the second ones).
            pt["units"], pt["unit_bytes"] = pt["mb"] * (1 << 20) // 64, 32
        elif pt["probe"] in ("reread", "promote"):
            chunks, per = reread_shape(pt["mb"], sms)
            pt["units"], pt["unit_bytes"] = per * chunks * 16, 1
        else:
            pt["units"], pt["unit_bytes"] = EDGE ** 3, 4 * Q
        results.append({**pt, "counters": m})
    json.dump({**provenance(cp), "set": which, "sms": sms, "default_fetch_limit": default_limit,
               "results": results},
              open(out_path, "w"), indent=1)


def summary(path):
    d = json.load(open(path))
    print(f"# L2 to DRAM traffic probes on the {d['device']} (issue 8)\n")
    print(f"Measured {d['date'][:10]}, driver {d['driver']}, default "
          f"`cudaLimitMaxL2FetchGranularity` {d['default_fetch_limit']} B. Per unit (a sector for "
          "gather, scatter, pieces and runs, a sector the last kernel reads for sibling, a 64-byte chunk for halves and paced-halves, a byte of the buffer for reread, a 76-byte record for the "
          "others), in bytes; `L2 rd`/`L2 wr` are the "
          "sectors from the L1s times 32.\n")
    print("| probe | setting | L2 rd | L2 rd miss | L2 wr | L2 wr miss | DRAM rd | DRAM wr | time |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in d["results"]:
        c, u = r["counters"], r["units"]
        if r["probe"] == "gather":
            lim = r["fetch_limit"] if r["fetch_limit"] else f"default ({d['default_fetch_limit']})"
            setting = f"stride {r['stride']} B, fetch limit {lim}"
        elif r["probe"] == "scatter":
            setting = f"{r['words']} words every {r['stride']} B"
            if "sectors" in r:
                setting += f", {r['sectors'] * 32 / 2**20:g} MiB of sectors"
        elif r["probe"] == "pscatter":
            setting = (f"{r.get('words', 1)} word(s) of each of {r['sectors'] * 32 / 2**20:g} MiB "
                       f"of sectors, in {r['groups']} group(s) {r['stride']:,} B apart, "
                       f"{r.get('step', 32)} B apart within")
        elif r["probe"] == "lag":
            setting = (f"halves {r['lag']} blocks apart (about {r['lag'] * 64 * 32 / 2**20:g} MiB of "
                       "sectors partly written at a time)")
        elif r["probe"] == "halves":
            lim = r["fetch_limit"] if r["fetch_limit"] else f"default ({d['default_fetch_limit']})"
            setting = (f"second halves {r['lag']} blocks later (about {r['lag'] * 2:g} KiB of "
                       f"chunks between), fetch limit {lim}")
        elif r["probe"] == "paced-halves":
            setting = (f"{r['warps_per_sm']} warps/SM, " +
                       (f"second half after the first returned + {r['spin']} cycles"
                        if r["dep"] else "both halves at once"))
        elif r["probe"] == "reread":
            setting = f"{r['mb']} MiB, {r['mapping']} blocks"
            if "writes" in r:
                setting += f", {r['writes']:g} B written per B read"
        elif r["probe"] == "window":
            fresh = WINDOW_CHUNKS * WINDOW_PER * 16
            setting = (f"second read {r['lag']} chunks later ({r['lag'] * WINDOW_PER * 16 / 2**20:g}"
                       f" MiB of fresh reads between"
                       f"{['', ', as much written', ', as much written 256 B off'][r['writes']]}); "
                       f"DRAM rd beyond the fresh data per byte read again: "
                       f"{(c[METRICS[0]] - fresh) / u:.3f}")
        elif r["probe"] == "window3":
            fresh = WINDOW_CHUNKS * WINDOW_PER * 16
            setting = (f"read again {r['lag1']} chunks later (a hit), then {r['lag']} chunks after "
                       f"the first read ({r['lag'] * WINDOW_PER * 16 / 2**20:g} MiB of fresh reads "
                       f"between); DRAM rd beyond the fresh data per byte read the third time: "
                       f"{(c[METRICS[0]] - fresh) / u:.3f}")
        elif r["probe"] == "lines":
            lim = r["fetch_limit"] if r["fetch_limit"] else f"default ({d['default_fetch_limit']})"
            setting = (f"{r['sectors']} of 4 sectors of each line, {r['mb']} MiB of lines "
                       f"({r['mb'] * r['sectors'] / 4:g} MiB read), fetch limit {lim}")
        elif r["probe"] == "segments":
            setting = (f"{r['mb']} MiB in {SEGMENTS} segments "
                       + (f"{r['stride']:,} B apart" if r["stride"] else "packed")
                       + (", each float4 also written to 19 other segments" if r.get("writes")
                          else ""))
        elif r["probe"] == "pprio":
            setting = (f"{r['mb']} MiB of chunks, {r['first']} read; {r['stream']} MiB fresh; "
                       "second sectors")
        elif r["probe"] == "l2rate":
            clock = c.get("sm__cycles_elapsed.avg.per_second", float("nan"))
            rate = c[METRICS[2]] / (c[METRICS[6]] * 1e-9 * clock * d["sms"])
            reads = ("one line" if r["mode"] == "line" else "one sector of each of 32 lines")
            setting = (f"{r['passes']} passes over {r['mb']} MiB, a warp instruction reading {reads}, "
                       f"{r['bps']} blocks of 256 per SM: {rate:.3f} L2 sectors per SM per cycle "
                       f"at {clock / 1e9:.3f} GHz ({32 * c[METRICS[2]] / c[METRICS[6]]:.0f} GB/s)")
        elif r["probe"] == "sibling":
            setting = (f"first sectors of {r['mb']} MiB of lines; {r['stream']} MiB fresh; touch "
                       f"{r['touch']}; {r['stream']} MiB fresh; first sectors again")
        elif r["probe"] == "promote":
            setting = (f"{r['mb']} MiB; {r['touches']} × ({r['stream']} MiB fresh, touch by "
                       f"{r['by']} blocks); {r['stream']} MiB fresh; reread")
        elif r["probe"] == "pieces":
            setting = (f"{r['pieces']} pieces per sector, by {r['mode']}, {r.get('loads', 0)} loads "
                       f"first, stagger {r.get('stagger', 0)} cycles")
        elif r["probe"] == "runarrays":
            setting = (f"{r['stores']} stores per fold point, "
                       + ("arrays apart" if r["apart"] else "a thread's sectors together")
                       + f"; {r['pieces']} pieces per sector by {r['mode']}, blocks of "
                       f"{r['threads']}, {r['folds']} fold points, "
                       + (f"{r['loads']} loads each via {r['via'].upper()}" if r["loads"]
                          else "no loads")
                       + (f", spin {r['spin']} cycles after each fold point" if r.get("spin")
                          else ""))
        elif r["probe"] == "runs":
            bps = min(32, 2048 // r["threads"])
            setting = (f"{r['pieces']} pieces per sector by {r['mode']}, blocks of {r['threads']} "
                       f"({bps} per SM, {bps * r['threads'] // 32} warps), {r['folds']} fold "
                       f"points, " + (f"{r['loads']} loads each via {r['via'].upper()}"
                                      if r["loads"] else "no loads"))
        elif r["probe"] == "paced":
            # Microseconds a warp takes for its record, and the records in flight meanwhile.
            rounds = r["units"] / d["sms"] / (32 * r["warps_per_sm"])
            setting = (f"{r['warps_per_sm']} warps/SM, blocks of {r['threads']}, spin {r['spin']}"
                       f" ({c[METRICS[6]] / 1e3 / rounds:.2f} µs per record)")
        else:
            setting = "block " + "×".join(map(str, r["block"]))
            if "spin" in r:
                setting += f", {r['spin']} cycles between loads and stores"
                if r.get("skew"):
                    setting += " (warp w of W waits w/W of them)"
            if "gap" in r:
                setting += f", {r['gap']} FMAs before each store"
            if "chain" in r:
                setting += f", {r['chain']} FMAs before each store, unrolled"
            if "fold" in r:
                setting += (f", {r['fold']} fold points per thread, stores "
                            + ("interleaved" if r["inter"] else "apart"))
            if "bps" in r:
                warps = c.get("sm__warps_active.avg.per_cycle_active", float("nan"))
                setting += f", {r['bps']} blocks per SM ({warps:.1f} warps active)"

        def per(k):
            return c[k] / u

        print(f"| {r['probe']} | {setting} | {32 * per(METRICS[2]):.1f} | {32 * per(METRICS[4]):.1f} | "
              f"{32 * per(METRICS[3]):.1f} | {32 * per(METRICS[5]):.1f} | {per(METRICS[0]):.1f} | "
              f"{per(METRICS[1]):.1f} | {c[METRICS[6]]:.4g} |")


def main():
    args = sys.argv[1:]
    if len(args) == 2 and args[0] == "launch":
        launch(args[1])
    elif len(args) in (2, 3) and args[0] == "measure":
        which = args[2] if len(args) == 3 else "traffic"
        if which not in SETS:
            sys.exit(f"the probe set is {', '.join(SETS[:-1])} or {SETS[-1]}, not {which}")
        measure(args[1], which)
    elif len(args) == 2 and args[0] == "summary":
        summary(args[1])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
