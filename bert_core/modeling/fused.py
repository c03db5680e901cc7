"""The fused kernels (`fused_attention.c`): attention, and the LayerNorm after it. Built on first use, checked,
and used where it is safe.

Why built here rather than shipped: it is a few hundred lines of C that the system compiler turns into a
shared library in about two seconds, once per machine (the result is cached by a hash of the source, the flags
and the compiler). Nothing else in BERTScope needs a compiler, so everything degrades to the library path
(`torch.baddbmm` / `softmax` / `bmm` and `F.layer_norm`, same results within ~1e-6) when any condition below
fails, and `status()` says which one.

Conditions: Linux on x86-64 with AVX-512F (16-lane build) or AVX2 + FMA (8-lane build, most laptops); a C
compiler (`$CC`, `cc` or `gcc`) with OpenMP; torch's intra-op threads on OpenMP, and no new OpenMP runtime
brought in by loading the kernel (it then runs on torch's own threads instead of competing with them for the
cores); a self-test against torch on random data; and `BERTSCOPE_FUSED_ATTENTION` not set to 0 (it switches
off both kernels). Used only on the packed (fast) CPU path, attention only without a head mask; exact mode never
calls either.

Shapes are the kernels': q, k, v (S, H) per sequence, probabilities (N, S, S), context (S, H); LayerNorm
x and out (M, H).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import torch
from torch import Tensor

_SOURCE = Path(__file__).with_name("fused_attention.c")
# -ffp-contract=off: the compiler must not fuse scale * score + mask into one FMA (the reference rounds twice)
_FLAGS = ("-O3", "-std=gnu11", "-ffp-contract=off", "-fopenmp", "-fPIC", "-shared")
_BUILD_TIMEOUT_S = 60
# instruction set -> (CPU flags it needs from /proc/cpuinfo, compiler flags, lanes)
_ISAS = {
    "avx512": (("avx512f", "fma"), ("-mavx512f", "-mfma", "-DBERTSCOPE_AVX512"), 16),
    "avx2": (("avx2", "fma"), ("-mavx2", "-mfma", "-DBERTSCOPE_AVX2"), 8),
}
_ISA_NAMES = {"avx512": "AVX-512", "avx2": "AVX2"}
_ABI = 4
_HEAD_SIZES = frozenset({16, 32, 48, 64})
_OPENMP_LIBRARIES = ("libgomp", "libiomp", "libomp")


class Kernels(NamedTuple):
    """The loaded library's entry points (ctypes functions on raw pointers; `attention` and `layer_norm` below
    check the tensors before calling them)."""

    attention: Callable[..., int]
    layer_norm: Callable[..., int]


_lock = threading.Lock()
# (kernels or None, status line, instruction-set name or "") once loaded
_loaded: tuple[Kernels | None, str, str] | None = None


def enabled_by_environment() -> bool:
    return os.environ.get("BERTSCOPE_FUSED_ATTENTION", "1").strip().lower() not in {"0", "false", "no", "off"}


def cache_dir() -> Path:
    """Where built kernels are kept: $BERTSCOPE_CACHE_DIR, else $XDG_CACHE_HOME/bertscope, else ~/.cache/bertscope
    (a per-user folder in the temporary directory when there is no home, as for containers run as any uid)."""
    if os.environ.get("BERTSCOPE_CACHE_DIR"):
        return Path(os.environ["BERTSCOPE_CACHE_DIR"])
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]) / "bertscope"
    try:
        return Path.home() / ".cache" / "bertscope"
    except RuntimeError:
        return Path(tempfile.gettempdir()) / f"bertscope-{os.getuid()}"


def find_compiler() -> str | None:
    """$CC, cc or gcc, whichever is found first on PATH."""
    return next((c for c in (os.environ.get("CC"), "cc", "gcc") if c and shutil.which(c)), None)


def supports(head_size: int) -> bool:
    """True for the head sizes the kernel's register tiles cover (bert-base/large: 64; the demo model: 48)."""
    return head_size in _HEAD_SIZES


def kernel() -> Kernels | None:
    """The loaded kernels, or None where they cannot be used (see `status()`). Builds them on the first call."""
    global _loaded
    if _loaded is None:
        with _lock:
            if _loaded is None:
                _loaded = _load()
    return _loaded[0]


def status() -> str:
    """'in use (AVX-512)' / 'in use (AVX2)', or why the library path is used instead."""
    kernel()
    assert _loaded is not None
    return _loaded[1]


def isa_in_use() -> str:
    """ "AVX-512" or "AVX2" where the kernel is in use, "" where it is not."""
    kernel()
    assert _loaded is not None
    return _loaded[2]


def attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None,
    probs: Tensor,
    context: Tensor,
    num_heads: int,
    scale: float,
    build: Kernels | None = None,
) -> bool:
    """One sequence: probs (N, S, S) = softmax(scale * q k^T + mask) per head, context (S, H) = probs @ v.

    q, k, v, context: (S, H) fp32, contiguous rows (column stride 1); mask: (S,) additive or None; probs
    contiguous. `build`: loaded kernels to use instead of `kernel()` (the tests run every build the CPU can).
    Returns False when the kernel is unavailable or the layout does not fit (nothing written), or, rarely,
    when a thread could not allocate its scratch (some rows written: the caller recomputes them all)."""
    kernels = build or kernel()
    if kernels is None:
        return False
    s, h = q.shape
    tensors = [q, k, v, probs, context] + ([] if mask is None else [mask])
    if (
        h % num_heads
        or not supports(h // num_heads)
        or any(t.device.type != "cpu" or t.dtype != torch.float32 for t in tensors)
        or any(t.shape != (s, h) or t.stride(1) != 1 for t in (k, v, context))
        or q.stride(1) != 1
        or len({q.stride(0), k.stride(0), v.stride(0)}) != 1
        or not probs.is_contiguous()
        or probs.shape != (num_heads, s, s)
        or (mask is not None and (mask.shape != (s,) or not mask.is_contiguous()))
    ):
        return False
    rc = kernels.attention(
        q.data_ptr(),
        k.data_ptr(),
        v.data_ptr(),
        None if mask is None else mask.data_ptr(),
        probs.data_ptr(),
        context.data_ptr(),
        s,
        q.stride(0),
        context.stride(0),
        num_heads,
        h // num_heads,
        scale,
        torch.get_num_threads(),
    )
    # rc 2: a thread could not allocate its scratch; the library path then recomputes every row it wrote.
    return rc == 0


def layer_norm(
    x: Tensor,
    weight: Tensor,
    bias: Tensor,
    eps: float,
    out: Tensor,
    residual: Tensor | None = None,
    build: Kernels | None = None,
) -> bool:
    """out (M, H) = LayerNorm(x + residual) over H (residual (M, H) or None) with weight and bias (H,). out may
    be x or residual itself (in place) but must not otherwise overlap them. Rows may be strided, columns must be
    contiguous. Returns False, writing nothing, when the kernels are unavailable or the layout does not fit."""
    kernels = build or kernel()
    if kernels is None:
        return False
    rows = [x, out] + ([] if residual is None else [residual])
    if (
        x.dim() != 2
        or x.numel() == 0
        or any(t.shape != x.shape or t.stride(1) != 1 for t in rows)
        or weight.shape != (x.shape[1],)
        or bias.shape != (x.shape[1],)
        or any(t.device.type != "cpu" or t.dtype != torch.float32 for t in (*rows, weight, bias))
        or not weight.is_contiguous()
        or not bias.is_contiguous()
    ):
        return False
    rc = kernels.layer_norm(
        x.data_ptr(),
        x.stride(0),
        None if residual is None else residual.data_ptr(),
        0 if residual is None else residual.stride(0),
        weight.data_ptr(),
        bias.data_ptr(),
        out.data_ptr(),
        out.stride(0),
        x.shape[0],
        x.shape[1],
        eps,
        torch.get_num_threads(),
    )
    return rc == 0


def available_isas() -> list[str]:
    """The instruction sets this CPU offers the kernel, widest first ("avx512", "avx2")."""
    flags = _cpu_flags()
    return [isa for isa, (needs, _, _) in _ISAS.items() if flags.issuperset(needs)]


def best_isa() -> str | None:
    return next(iter(available_isas()), None)


def _load(isa: str | None = None) -> tuple[Kernels | None, str, str]:
    """(kernels, "in use (...)", ISA name) or (None, why not, ""); `isa` forces one build (the tests use it)."""
    try:
        kernels, why, name = _try_load(isa)
    except Exception as exc:  # noqa: BLE001 - an optional speed-up must never stop a model from loading
        return None, f"could not be set up: {type(exc).__name__}: {exc}", ""
    return kernels, why, name


def _try_load(isa: str | None) -> tuple[Kernels | None, str, str]:
    if not enabled_by_environment():
        return None, "switched off (BERTSCOPE_FUSED_ATTENTION=0)", ""
    if platform.system() != "Linux" or platform.machine() not in {"x86_64", "AMD64"}:
        return None, f"needs Linux on x86-64 (this is {platform.system()} on {platform.machine()})", ""
    available = available_isas()
    candidates = [isa] if isa else available
    if not candidates:
        return None, "this CPU has neither AVX-512F nor AVX2 with FMA", ""
    if candidates[0] not in available:
        return None, f"this CPU lacks {_ISA_NAMES[candidates[0]]}", ""
    if "ATen parallel backend: OpenMP" not in torch.__config__.parallel_info():
        return None, "torch's threads do not run on OpenMP here", ""
    compiler = find_compiler()
    if compiler is None:
        return None, "no C compiler found ($CC, cc or gcc)", ""
    reasons = []
    for candidate in candidates:  # widest first: an older compiler may manage AVX2 but not AVX-512
        try:
            library = _build(compiler, candidate)
        except (OSError, subprocess.SubprocessError) as exc:
            reasons.append(f"{_ISA_NAMES[candidate]}: {exc}")
            continue
        kernels, why = _load_built(library, candidate)
        return kernels, why, _ISA_NAMES[candidate] if kernels is not None else ""
    return None, "could not be built: " + "; ".join(reasons), ""


def _load_built(library: Path, isa: str) -> tuple[Kernels | None, str]:
    before = _openmp_runtimes()
    try:
        lib = ctypes.CDLL(str(library))
    except OSError as exc:
        library.unlink(missing_ok=True)  # never keep a library that cannot even be loaded
        return None, f"could not be loaded: {exc}"
    added = _openmp_runtimes() - before
    if added:
        # A second OpenMP runtime would bring its own threads, which spin for the cores torch's threads need.
        # The library itself is fine (another process may be able to use it), so it stays cached.
        return None, "it would bring a second OpenMP runtime into this process: " + ", ".join(sorted(added))
    if lib.bertscope_attention_abi() != _ABI or lib.bertscope_attention_lanes() != _ISAS[isa][2]:
        problem = "is not the expected version"
    else:
        kernels = Kernels(lib.bertscope_attention, lib.bertscope_layer_norm)
        kernels.attention.argtypes = (
            [ctypes.c_void_p] * 6 + [ctypes.c_long] * 5 + [ctypes.c_float, ctypes.c_int]
        )
        # x, ldx, residual, ldr, gamma, beta, out, ldo, rows, h, eps, threads
        kernels.layer_norm.argtypes = (
            [ctypes.c_void_p, ctypes.c_long] * 2
            + [ctypes.c_void_p] * 3
            + [ctypes.c_long] * 3
            + [ctypes.c_float, ctypes.c_int]
        )
        for fn in kernels:
            fn.restype = ctypes.c_int
        problem = _self_test(kernels)
    if problem:
        library.unlink(missing_ok=True)  # never leave a library that fails its checks in the cache
        return None, f"built kernel {library.name} {problem}"
    _forget_old_builds(library)
    return kernels, f"in use ({_ISA_NAMES[isa]})"


_OLD_BUILD_AGE_S = 30 * 24 * 3600


def _forget_old_builds(current: Path) -> None:
    """Delete builds of other sources or compilers not touched for 30 days. Only old ones: another install
    sharing the cache may be using a different build right now, and deleting it would make that process build
    again or fall back to the library path. Loading a build refreshes its time."""
    now = time.time()
    try:
        os.utime(current)
        for other in current.parent.glob("fused_attention-*.so"):
            if other != current and now - other.stat().st_mtime > _OLD_BUILD_AGE_S:
                other.unlink(missing_ok=True)
    except OSError:
        pass  # a cache we cannot tidy is still a working cache


def _cpu_flags() -> frozenset[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return frozenset()
    line = next((line for line in text.splitlines() if line.startswith("flags")), "")
    return frozenset(line.partition(":")[2].split())


def _openmp_runtimes() -> set[str]:
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return set()
    paths = {line.split()[-1] for line in maps.splitlines() if len(line.split()) >= 6}
    return {p for p in paths if Path(p).name.startswith(_OPENMP_LIBRARIES)}


def _build(compiler: str, isa: str) -> Path:
    flags = (*_FLAGS, *_ISAS[isa][1])
    source = _SOURCE.read_bytes()
    version = subprocess.run(
        [compiler, "--version"], capture_output=True, text=True, timeout=30, check=True
    ).stdout.splitlines()[:1]
    key = hashlib.sha256(b"\0".join([source, " ".join(flags).encode(), *(v.encode() for v in version)]))
    directory = cache_dir()
    _private_directory(directory)
    target = directory / f"fused_attention-{isa}-{key.hexdigest()[:16]}.so"
    if target.exists():
        return target
    # Built under a temporary name and renamed into place: another process building at the same moment can
    # never load a half-written library.
    fd, temporary = tempfile.mkstemp(suffix=".so", dir=directory)
    os.close(fd)
    try:
        _compile([compiler, *flags, "-o", temporary, str(_SOURCE)])
        with open(temporary, "rb") as built:
            if built.read(4) != b"\x7fELF":
                raise subprocess.SubprocessError(f"{compiler} exited 0 but wrote no shared library")
        os.replace(temporary, target)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
    return target


def _private_directory(directory: Path) -> None:
    """Create the cache folder for this user only, and refuse one that others could write: its libraries are
    loaded into the process."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = directory.stat()
    if info.st_uid != os.getuid() or info.st_mode & 0o022:
        raise OSError(f"{directory} is not a folder only this user can write")


def _compile(command: list[str]) -> None:
    """Run the compiler in its own process group, so that a timeout also stops the processes it started."""
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    ) as process:
        try:
            _, err = process.communicate(timeout=_BUILD_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            raise
    if process.returncode != 0:
        raise subprocess.SubprocessError(err.strip()[-500:] or f"{command[0]} failed")


def _self_test(kernels: Kernels) -> str:
    """Compare with torch's arithmetic on random data: attention at odd lengths, every head size, with and
    without a mask; LayerNorm at widths with and without a partial vector, in place and strided."""
    fn = kernels.attention
    generator = torch.Generator().manual_seed(0)
    for s, heads, d in ((1, 1, 16), (13, 2, 32), (29, 3, 48), (45, 2, 64)):
        h = heads * d
        q, k, v = (torch.randn(s, h, generator=generator) for _ in range(3))
        mask = torch.zeros(s)
        mask[s // 2 + 1 :] = torch.finfo(torch.float32).min
        for m in (None, mask):
            probs = torch.empty(heads, s, s)
            context = torch.empty(s, h)
            rc = fn(q.data_ptr(), k.data_ptr(), v.data_ptr(), None if m is None else m.data_ptr(),
                    probs.data_ptr(), context.data_ptr(), s, h, h, heads, d, d**-0.5, 1)  # fmt: skip
            if rc != 0:
                return f"returned {rc} in its self-test"
            qh, kh, vh = (x.view(s, heads, d).transpose(0, 1) for x in (q, k, v))  # (S, H) -> (N, S, D)
            scores = qh @ kh.transpose(1, 2) * d**-0.5  # (N, S, S)
            expected = torch.softmax(scores if m is None else scores + m, dim=-1)
            expected_context = (expected @ vh).transpose(0, 1).reshape(s, h)  # (N, S, D) -> (S, H)
            if not torch.allclose(probs, expected, rtol=0, atol=1e-5) or not torch.allclose(
                context, expected_context, rtol=0, atol=1e-5
            ):
                return f"differs from torch at S={s}, D={d}"
            if m is not None and bool((probs[..., s // 2 + 1 :] != 0).any()):
                return "masked keys got weight"
    for rows, h in ((1, 16), (7, 37), (5, 768)):
        x = torch.randn(rows, h + 3, generator=generator)[:, :h] * 4 + 2  # rows h + 3 apart
        residual = torch.randn(rows, h, generator=generator)
        weight, bias = torch.randn(h, generator=generator), torch.randn(h, generator=generator)
        for r in (None, residual):
            expected = torch.nn.functional.layer_norm(x if r is None else x + r, (h,), weight, bias, 1e-12)
            out, inplace = torch.empty(rows, h), x.clone()
            for src, dst in ((x, out), (inplace, inplace)):
                rc = kernels.layer_norm(src.data_ptr(), src.stride(0), None if r is None else r.data_ptr(), h,
                                        weight.data_ptr(), bias.data_ptr(), dst.data_ptr(), dst.stride(0), rows,
                                        h, 1e-12, 2)  # fmt: skip
                if rc != 0:
                    return f"returned {rc} from its LayerNorm self-test"
                if not torch.allclose(dst, expected, rtol=0, atol=1e-5):
                    return f"LayerNorm differs from torch at width {h}"
    return ""
