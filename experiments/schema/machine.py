"""What decides a cell's floats besides its config: the machine's numerics, and a pinned CPU ISA.

A cell is bit-identical run after run on one CPU model, not across models: the kernels ATen,
oneDNN and MKL pick for the CPU change the float reduction order, and over thousands of steps a
chaotic cell moves a lot (one lookup cell: 0.930 with native AVX-512 kernels, 0.8045 with
``ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2``, 0.884 with ``ATEN_CPU_CAPABILITY=default``).

- ``numerics_record(precision)``: the CPU, kernel ISA, library versions, ISA environment,
  torch/CUDA and thread count a process computes with, and the cell's Lightning precision where it
  is not full fp32 (``bf16-mixed``: autocast to bf16, on the CPU too) (JSON-safe); ``numerics_key``
  its short stable form, and ``mixed_numerics`` counts the distinct settings among many cells' records.
- ``isa_env(cpu_isa)``: the environment that pins ATen, oneDNN and MKL to one ISA level
  (``CPU_ISAS``). It is read when torch loads and its first kernels run, so it must be in the
  environment of the process *before* torch is imported (a worker's, not the current one's);
  ``capability_matches`` says whether this process got the level, ``check_isa`` whether the CPU
  has it at all.

MKL honours its ``MKL_CBWR`` ISA branches (AVX2, AVX512) on Intel CPUs only; elsewhere it falls
back to AUTO (``mkl_cnr`` in the record says which branch runs); ``COMPATIBLE`` works everywhere.
"""

from __future__ import annotations

import collections
import ctypes
import functools
import os
import platform
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ablate.errors import ConfigError

CPUINFO = Path("/proc/cpuinfo")
# The environment variables that change which CPU kernels run (recorded when set).
ISA_ENV_VARS = (
    "ATEN_CPU_CAPABILITY",
    "ONEDNN_MAX_CPU_ISA",
    "DNNL_MAX_CPU_ISA",
    "MKL_CBWR",
    "MKL_ENABLE_INSTRUCTIONS",
)
CPU_ISAS = ("native", "default", "avx2", "avx512")
# cpu_isa -> (ATEN_CPU_CAPABILITY, ONEDNN_MAX_CPU_ISA, MKL_CBWR). oneDNN's names are its x64
# ISA names (dev_guide_cpu_dispatcher_control; SSE41 is its lowest level, AVX512_CORE is
# AVX-512 with BW, VL and DQ); MKL's are its CNR branches (COMPATIBLE: SSE2 code, any x86 CPU).
_PINS = {
    "default": ("default", "SSE41", "COMPATIBLE"),
    "avx2": ("avx2", "AVX2", "AVX2"),
    "avx512": ("avx512", "AVX512_CORE", "AVX512"),
}
# The CPU flags (/proc/cpuinfo) each level needs; ATen's own dispatch asks for the same.
ISA_FLAGS: dict[str, tuple[str, ...]] = {
    "native": (),
    "default": (),
    "avx2": ("avx2", "fma"),
    "avx512": ("avx512f", "avx512bw", "avx512vl", "avx512dq"),
}
# What torch.backends.cpu.get_cpu_capability() reports for a pinned level.
CAPABILITY = {"default": "DEFAULT", "avx2": "AVX2", "avx512": "AVX512"}
# mkl_cbwr.h: MKL's branch codes, as mkl_cbwr_get(MKL_CBWR_BRANCH) returns them.
MKL_BRANCHES = {
    1: "OFF",
    2: "AUTO",
    3: "COMPATIBLE",
    4: "SSE2",
    6: "SSSE3",
    7: "SSE4_1",
    8: "SSE4_2",
    9: "AVX",
    10: "AVX2",
    11: "AVX512_MIC",
    12: "AVX512",
    13: "AVX512_MIC_E1",
    14: "AVX512_E1",
}
NOT_RECORDED = "not recorded"
# Lightning precisions that compute in full fp32 (or wider): a record leaves them out, as before
# the field existed, so an fp32 cell's key is the same whether or not it recorded its precision.
FULL_PRECISIONS = ("32-true", "32", "64-true", "64")


# ---- the CPU ---------------------------------------------------------------------------


@functools.cache
def _cpuinfo() -> dict[str, str]:
    """The first processor's fields of /proc/cpuinfo (empty where there is none)."""
    try:
        text = CPUINFO.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return {}
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if fields:
                break  # the end of the first processor's block
            continue
        key, sep, value = line.partition(":")
        if sep:
            fields.setdefault(key.strip(), value.strip())
    return fields


@functools.cache
def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags (x86 ``flags``, Arm ``Features``); empty without /proc/cpuinfo."""
    info = _cpuinfo()
    return frozenset((info.get("flags") or info.get("Features") or "").split())


def _cpu() -> dict[str, str | None]:
    info = _cpuinfo()
    vendor = info.get("vendor_id") or info.get("CPU implementer")
    model = info.get("model name") or info.get("Hardware") or info.get("Processor")
    # family/model/stepping tell CPU generations apart where a VM hides the model name ("AMD EPYC").
    ids = [info.get(k) for k in ("cpu family", "model", "stepping")]
    if not all(ids):
        ids = [info.get(k) for k in ("CPU architecture", "CPU variant", "CPU part", "CPU revision")]
    return {
        "cpu_vendor": vendor or None,
        "cpu_model": model or platform.processor() or platform.machine() or None,
        "cpu_signature": "/".join(str(i) for i in ids) if all(ids) else None,
    }


# ---- the libraries ---------------------------------------------------------------------


def _config_text() -> str:
    import torch

    try:
        return torch.__config__.show()
    except Exception:  # a build without it: the versions are then unknown
        return ""


def parse_config(text: str) -> dict[str, str | None]:
    """oneDNN version and BLAS (name, version) from ``torch.__config__.show()``."""
    onednn = re.search(r"(?:MKL-DNN|oneDNN|DNNL)\s+v?(\d+(?:\.\d+)+)", text)
    blas = re.search(r"BLAS_INFO=([^,\s]+)", text)
    mkl = re.search(r"Math Kernel Library Version\s+([\w.]+)", text)
    openblas = re.search(r"OpenBLAS\s+v?(\d+(?:\.\d+)+)", text)
    version = mkl.group(1) if mkl else openblas.group(1) if openblas else None
    return {
        "onednn": onednn.group(1) if onednn else None,
        "blas": blas.group(1) if blas else None,
        "blas_version": version,
    }


def _mkl_cnr() -> str | None:
    """The MKL branch this process runs (``OFF``, ``AUTO``, ``COMPATIBLE``, ``AVX2``...): what
    ``MKL_CBWR`` became (a branch the CPU or vendor lacks falls back to AUTO). None without MKL or
    where torch does not export MKL's service symbols."""
    import torch

    lib_dir = Path(torch.__file__).parent / "lib"
    for name in ("libtorch_cpu.so", "libtorch_cpu.dylib", "torch_cpu.dll"):
        if (lib_dir / name).is_file():
            try:
                get = ctypes.CDLL(str(lib_dir / name)).mkl_serv_cbwr_get
            except (OSError, AttributeError):
                return None
            get.restype = ctypes.c_int
            code = int(get(ctypes.c_int(1)))  # MKL_CBWR_BRANCH
            return MKL_BRANCHES.get(code, f"code {code}")
    return None


@functools.cache
def _constant() -> dict[str, Any]:
    """The process-constant part of the record (computed once)."""
    import torch

    rec: dict[str, Any] = {**_cpu(), "machine": platform.machine() or None}
    try:
        rec["cpu_capability"] = torch.backends.cpu.get_cpu_capability()
    except Exception:
        rec["cpu_capability"] = None
    rec.update(parse_config(_config_text()))
    rec["mkldnn_available"] = bool(torch.backends.mkldnn.is_available())
    rec["mkl_cnr"] = _mkl_cnr() if rec["blas"] == "mkl" else None
    rec["torch"] = torch.__version__
    cuda = torch.cuda.is_available()
    rec["cuda"] = torch.version.cuda if cuda else None
    rec["cudnn"] = torch.backends.cudnn.version() if cuda else None
    rec["gpu"] = torch.cuda.get_device_name() if cuda else None
    return rec


def numerics_record(precision: str | None = None) -> dict[str, Any]:
    """What this process computes floats with: CPU vendor, model and family/model/stepping, ATen's
    CPU capability, oneDNN and BLAS versions, MKL's CNR branch, the ISA variables that are set,
    torch, CUDA, cuDNN and the GPU (where CUDA is available), the thread count and the float32
    matmul precision; and ``precision``, the cell's resolved Lightning precision
    (cells.resolve_precision), as ``"precision"`` where it is not full fp32 (``bf16-mixed``,
    ``16-mixed``, ``bf16-true``). JSON-safe; the constant part is computed once per process."""
    import torch

    rec = {
        **_constant(),
        "isa_env": {k: os.environ[k] for k in ISA_ENV_VARS if os.environ.get(k)},
        "threads": torch.get_num_threads(),
        "matmul_precision": torch.get_float32_matmul_precision(),
    }
    if precision is not None and str(precision) not in FULL_PRECISIONS:
        rec["precision"] = str(precision)
    return rec


def numerics_key(record: Mapping[str, Any]) -> str:
    """The fields of ``record`` that change float results, as one short stable string:
    ``AuthenticAMD AMD EPYC [25/17/1] | AVX512 | oneDNN 3.12.0 | mkl 2024.2 | torch 2.13.0+cpu |
    1 thread``, and ``| bf16-mixed`` (or another precision) last for a cell that did not compute in
    full fp32. Records of other versions (a field missing) give a key all the same."""
    r = record
    cpu = " ".join(str(x) for x in (r.get("cpu_vendor"), r.get("cpu_model")) if x) or "unknown CPU"
    if r.get("cpu_signature"):
        cpu += f" [{r['cpu_signature']}]"
    parts = [cpu, str(r.get("cpu_capability") or "capability ?")]
    if r.get("onednn"):
        parts.append(f"oneDNN {r['onednn']}")
    if r.get("blas"):
        parts.append(" ".join(str(x) for x in (r["blas"], r.get("blas_version")) if x))
    if r.get("mkl_cnr") not in (None, "OFF"):
        parts.append(f"MKL_CBWR branch {r['mkl_cnr']}")
    env = r.get("isa_env") or {}
    if env:
        parts.append(" ".join(f"{k}={env[k]}" for k in sorted(env)))
    parts.append(f"torch {r.get('torch') or '?'}")
    if r.get("cuda"):
        parts.append(f"cuda {r['cuda']} cudnn {r.get('cudnn')} {r.get('gpu') or ''}".rstrip())
    threads = r.get("threads")
    parts.append("threads ?" if threads is None else f"{threads} thread{'' if threads == 1 else 's'}")
    if r.get("matmul_precision") not in (None, "highest"):
        parts.append(f"matmul {r['matmul_precision']}")
    if r.get("precision") not in (None, *FULL_PRECISIONS):
        parts.append(str(r["precision"]))
    return " | ".join(parts)


def mixed_numerics(records: Iterable[Mapping[str, Any] | str | None]) -> list[tuple[str, int]]:
    """The distinct numerics keys among ``records`` (a record, a key already made, or None for a
    cell that recorded none: ``"not recorded"``) and how many cells have each; most cells first."""
    counts = collections.Counter(
        NOT_RECORDED if r is None else r if isinstance(r, str) else numerics_key(r) for r in records
    )
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))


# ---- a pinned ISA ----------------------------------------------------------------------


def _known(cpu_isa: str) -> None:
    if cpu_isa not in CPU_ISAS:
        raise ConfigError(f"cpu_isa={cpu_isa!r}: choose one of {', '.join(CPU_ISAS)}")


def isa_env(cpu_isa: str) -> dict[str, str]:
    """The environment that pins ATen, oneDNN and MKL to ``cpu_isa`` (``native``: none). Only a
    process that starts with it is pinned (see the module's docstring)."""
    _known(cpu_isa)
    if cpu_isa == "native":
        return {}
    aten, onednn, mkl = _PINS[cpu_isa]
    return {"ATEN_CPU_CAPABILITY": aten, "ONEDNN_MAX_CPU_ISA": onednn, "MKL_CBWR": mkl}


def available_isas() -> list[str]:
    """The levels of CPU_ISAS this CPU can run."""
    flags = cpu_flags()
    return [isa for isa in CPU_ISAS if set(ISA_FLAGS[isa]) <= flags]


def check_isa(cpu_isa: str) -> None:
    """A ConfigError unless ``cpu_isa`` is a known level this CPU has (by its /proc/cpuinfo flags)."""
    _known(cpu_isa)
    missing = [f for f in ISA_FLAGS[cpu_isa] if f not in cpu_flags()]
    if missing:
        model = _cpu()["cpu_model"] or "this CPU"
        raise ConfigError(
            f"cpu_isa={cpu_isa!r} needs the CPU flags {', '.join(ISA_FLAGS[cpu_isa])}; this CPU "
            f"({model}) lacks {', '.join(missing)}. Choose one it has: {', '.join(available_isas())}"
        )


def capability_matches(cpu_isa: str) -> bool:
    """Whether ATen in this process runs at ``cpu_isa`` (``native`` always does)."""
    _known(cpu_isa)
    if cpu_isa == "native":
        return True
    import torch

    return torch.backends.cpu.get_cpu_capability().upper() == CAPABILITY[cpu_isa]


def require_pinned(cpu_isa: str) -> None:
    """A ConfigError unless this process runs pinned to ``cpu_isa``: the CPU has it, the pinning
    variables are set as ``isa_env`` sets them, and ATen reports the level. The message says how
    to start the process instead (the variables act only before torch loads)."""
    check_isa(cpu_isa)
    want = isa_env(cpu_isa)
    wrong = {k: v for k, v in want.items() if os.environ.get(k) != v}
    if wrong or not capability_matches(cpu_isa):
        import torch

        env = " ".join(f"{k}={v}" for k, v in want.items())
        raise ConfigError(
            f"cpu_isa={cpu_isa!r}, but this process runs ATen at "
            f"{torch.backends.cpu.get_cpu_capability()}"
            + (f" and lacks {', '.join(f'{k}={v}' for k, v in wrong.items())}" if wrong else "")
            + f"; start it with `{env}` set (the variables act only before torch is imported)"
        )
