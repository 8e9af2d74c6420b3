#!/usr/bin/env python3
"""The SASS the driver ran for each CUDA twin (issue 8): NVRTC to PTX, then the driver's JIT.

`stencilscope counters` compiles each twin with NVRTC to PTX for `compute_XY` and loads that PTX
with `cuModuleLoadData`, so the code ncu profiled is the driver's JIT of it, not `nvcc -cubin`'s
(which schedules the loads otherwise) nor `cuLinkComplete`'s (another JIT path: twice the
registers). This script repeats those steps through ctypes (libnvrtc, libcuda) with the driver's
JIT cache in a fresh folder (`CUDA_CACHE_PATH`), takes the cubin the JIT left there (the ELF
image inside the cache entry) and disassembles it with `cuobjdump`, for every DIR/NAME.cu of
`bench/compiled-order.py emit`: DIR/NAME.sass and DIR/NAME.res; then `bench/compiled-order.py
orders DIR`. Each kernel's registers by `cuFuncGetAttribute` must equal the cubin's, else it
stops.

usage: bench/twin-sass.py DIR [NVRTC-OPTION ...]
  NVRTC-OPTION  options besides `--gpu-architecture=compute_XY`: none for the twins of the
                sweeps committed before the twin took `run --backend cuda`'s float options, those
                (`--ftz=true --prec-div=false --prec-sqrt=false`) for later ones (the twin info's
                `nvrtc_options`)
Needs a GPU, libnvrtc and libcuda, and cuobjdump (CUDA toolkit). Writes DIR/jit.txt (driver,
NVRTC version, options).
"""
import ctypes
import glob
import json
import os
import re
import subprocess
import sys
import tempfile


def lib(names):
    for n in names:
        try:
            return ctypes.CDLL(n)
        except OSError:
            pass
    sys.exit(f"none of {names} could be loaded")


def check(what, r):
    if r != 0:
        raise RuntimeError(f"{what} failed: {r}")


ENTRY = re.compile(rb"__global__\s+void\s+(?:__launch_bounds__\([^)]*\)\s+)?(\w+)\s*\(")


def unique_entry(d, names, name):
    """The twin's source with an entry name of its own (as `counters` gives each configuration
    one), so that the cubins in the cache tell the configurations apart; and that name."""
    src = open(os.path.join(d, name + ".cu"), "rb").read()
    m = ENTRY.search(src)
    entry = b"tw%d_%s" % (names.index(name), m.group(1))
    return src[:m.start(1)] + entry + src[m.end(1):], entry


def load_all(d, options, names):
    """Phase one (a process of its own, so that the JIT cache is written out when it exits):
    compiles and loads every twin as `counters` does; returns {entry: registers}."""
    cuda = lib(["libcuda.so.1", "libcuda.so"])
    nvrtc = lib(["libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"] +
                sorted(glob.glob("/usr/local/cuda*/lib64/libnvrtc.so*"), reverse=True))
    check("cuInit", cuda.cuInit(0))
    dev, ctx = ctypes.c_int(), ctypes.c_void_p()
    check("cuDeviceGet", cuda.cuDeviceGet(ctypes.byref(dev), 0))
    check("cuDevicePrimaryCtxRetain", cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev))
    check("cuCtxSetCurrent", cuda.cuCtxSetCurrent(ctx))
    major, minor = ctypes.c_int(), ctypes.c_int()
    check("cuDeviceGetAttribute", cuda.cuDeviceGetAttribute(ctypes.byref(major), 75, dev))
    check("cuDeviceGetAttribute", cuda.cuDeviceGetAttribute(ctypes.byref(minor), 76, dev))
    options = [f"--gpu-architecture=compute_{major.value}{minor.value}"] + options
    drv, nv = ctypes.c_int(), (ctypes.c_int(), ctypes.c_int())
    cuda.cuDriverGetVersion(ctypes.byref(drv))
    nvrtc.nvrtcVersion(ctypes.byref(nv[0]), ctypes.byref(nv[1]))
    with open(os.path.join(d, "jit.txt"), "w") as f:
        f.write(f"driver API {drv.value}, NVRTC {nv[0].value}.{nv[1].value}, "
                f"options {' '.join(options)}, PTX JIT by cuModuleLoadData\n")
    copts = (ctypes.c_char_p * len(options))(*[o.encode() for o in options])
    regs = {}
    for name in names:
        src, entry = unique_entry(d, names, name)
        prog = ctypes.c_void_p()
        check("nvrtcCreateProgram", nvrtc.nvrtcCreateProgram(
            ctypes.byref(prog), src, name.encode(), 0, None, None))
        if nvrtc.nvrtcCompileProgram(prog, len(options), copts) != 0:
            n = ctypes.c_size_t()
            nvrtc.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
            log = ctypes.create_string_buffer(n.value)
            nvrtc.nvrtcGetProgramLog(prog, log)
            sys.exit(f"NVRTC failed for {name}:\n{log.value.decode()}")
        n = ctypes.c_size_t()
        check("nvrtcGetPTXSize", nvrtc.nvrtcGetPTXSize(prog, ctypes.byref(n)))
        ptx = ctypes.create_string_buffer(n.value)
        check("nvrtcGetPTX", nvrtc.nvrtcGetPTX(prog, ptx))
        nvrtc.nvrtcDestroyProgram(ctypes.byref(prog))
        mod, fn, r = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_int()
        check("cuModuleLoadData", cuda.cuModuleLoadData(ctypes.byref(mod), ptx))
        check("cuModuleGetFunction", cuda.cuModuleGetFunction(ctypes.byref(fn), mod, entry))
        check("cuFuncGetAttribute", cuda.cuFuncGetAttribute(ctypes.byref(r), 4, fn))
        cuda.cuModuleUnload(mod)
        regs[name] = r.value
    return regs


def elf_images(blob):
    """The ELF images inside a JIT cache file, each to the end of its furthest table or section."""
    at = blob.find(b"\x7fELF")
    while at >= 0:
        u = lambda o, n: int.from_bytes(blob[at + o:at + o + n], "little")
        shoff, shentsize, shnum = u(0x28, 8), u(0x3A, 2), u(0x3C, 2)
        phoff, phentsize, phnum = u(0x20, 8), u(0x36, 2), u(0x38, 2)
        end = max(shoff + shentsize * shnum, phoff + phentsize * phnum)
        for k in range(shnum):
            h = shoff + k * shentsize
            if u(h + 4, 4) != 8:  # SHT_NOBITS takes no room in the file
                end = max(end, u(h + 0x18, 8) + u(h + 0x20, 8))
        yield blob[at:at + end]
        at = blob.find(b"\x7fELF", at + max(end, 4))


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    d, extra = sys.argv[1], sys.argv[2:]
    names = sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(d, "*.cu")))
    cache = tempfile.mkdtemp()
    if os.environ.get("TWIN_SASS_PHASE") == "load":
        print(json.dumps(load_all(d, extra, names)))
        return
    env = dict(os.environ, TWIN_SASS_PHASE="load", CUDA_CACHE_PATH=cache,
               CUDA_CACHE_MAXSIZE=str(4 << 30), CUDA_CACHE_DISABLE="0")
    out = subprocess.run([sys.executable, __file__] + sys.argv[1:], env=env, check=True,
                         capture_output=True, text=True).stdout
    regs = json.loads(out.strip().splitlines()[-1])
    entries = {unique_entry(d, names, n)[1].decode(): n for n in names}
    tmp, found = tempfile.mkdtemp(), {}
    for root, _, files in os.walk(cache):
        for f in files:
            for k, img in enumerate(elf_images(open(os.path.join(root, f), "rb").read())):
                path = os.path.join(tmp, f"{f}-{k}.cubin")
                open(path, "wb").write(img)
                sass = subprocess.run(["cuobjdump", "-sass", path], capture_output=True,
                                      text=True).stdout
                for fn in re.findall(r"Function : (\w+)", sass):
                    if fn in entries:
                        found[entries[fn]] = (path, sass)
    missing = [n for n in names if n not in found]
    if missing:
        sys.exit(f"{len(missing)} twins not in the JIT cache {cache}, e.g. {missing[0]}")
    for name, (path, sass) in found.items():
        res = subprocess.run(["cuobjdump", "-res-usage", path], check=True, capture_output=True,
                             text=True).stdout
        r = int(re.search(r"REG:(\d+)", res).group(1))
        if r != regs[name]:
            sys.exit(f"{name}: the cached cubin has {r} registers, the loaded kernel {regs[name]}")
        open(os.path.join(d, f"{name}.sass"), "w").write(sass)
        open(os.path.join(d, f"{name}.res"), "w").write(res)
    print(f"{len(names)} twins in {d}: {open(os.path.join(d, 'jit.txt')).read().strip()}")


if __name__ == "__main__":
    main()
