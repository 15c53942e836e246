"""experiments/schema/machine.py: the numerics record and its key, the pinned-ISA environment, the ISA
checks against the CPU's flags, and (in fresh interpreters) that each pin takes effect here."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

from ablate.errors import ConfigError
from ablate.experiments.schema import machine
from ablate.experiments.schema.machine import (
    CPU_ISAS,
    ISA_ENV_VARS,
    capability_matches,
    check_isa,
    isa_env,
    mixed_numerics,
    numerics_key,
    numerics_record,
    parse_config,
    require_pinned,
)

RECORD_KEYS = {
    "cpu_vendor",
    "cpu_model",
    "cpu_signature",
    "machine",
    "cpu_capability",
    "onednn",
    "blas",
    "blas_version",
    "mkldnn_available",
    "mkl_cnr",
    "torch",
    "cuda",
    "cudnn",
    "gpu",
    "isa_env",
    "threads",
    "matmul_precision",
}


def test_record_has_every_field_and_is_json() -> None:
    record = numerics_record()
    assert set(record) == RECORD_KEYS
    assert json.loads(json.dumps(record, allow_nan=False)) == record
    assert record["torch"] == torch.__version__
    assert record["cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert record["threads"] == torch.get_num_threads()
    assert record["mkldnn_available"] is torch.backends.mkldnn.is_available()
    assert set(record["isa_env"]) <= set(ISA_ENV_VARS)
    if not torch.cuda.is_available():
        assert record["cuda"] is record["gpu"] is record["cudnn"] is None


def test_key_is_stable_and_tracks_what_changes_floats(monkeypatch: pytest.MonkeyPatch) -> None:
    first, again = numerics_record(), numerics_record()
    assert numerics_key(first) == numerics_key(again)
    key = numerics_key(first)
    assert first["cpu_capability"] in key and f"torch {torch.__version__}" in key
    # Each field that changes floats changes the key; a record missing fields still has one.
    for field, value in [("cpu_model", "Other CPU"), ("cpu_capability", "SVE256"), ("threads", 7)]:
        assert numerics_key({**first, field: value}) != key
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "avx2")
    pinned = numerics_record()
    assert pinned["isa_env"]["ATEN_CPU_CAPABILITY"] == "avx2"
    assert "ATEN_CPU_CAPABILITY=avx2" in numerics_key(pinned) and numerics_key(pinned) != key
    assert numerics_key({}) == "unknown CPU | capability ? | torch ? | threads ?"


# A committed cell's record (results/cross-machine/intel-xeon-6-167-native/): its key must not change.
COMMITTED = {
    "cpu_vendor": "GenuineIntel",
    "cpu_model": "Intel(R) Xeon(R) Processor",
    "cpu_signature": "6/167/8",
    "machine": "x86_64",
    "cpu_capability": "AVX512",
    "onednn": "3.12.0",
    "blas": "mkl",
    "blas_version": "2024.2",
    "mkldnn_available": True,
    "mkl_cnr": "OFF",
    "torch": "2.13.0+cpu",
    "cuda": None,
    "cudnn": None,
    "gpu": None,
    "isa_env": {},
    "threads": 1,
    "matmul_precision": "highest",
}
COMMITTED_KEY = (
    "GenuineIntel Intel(R) Xeon(R) Processor [6/167/8] | AVX512 | oneDNN 3.12.0 | mkl 2024.2 | "
    "torch 2.13.0+cpu | 1 thread"
)


def test_a_precision_other_than_fp32_joins_the_key_and_fp32_keeps_it() -> None:
    key = numerics_key(numerics_record())
    for fp32 in (None, "32-true", "64-true"):  # full fp32: no field, the key of before
        record = numerics_record(fp32)
        assert "precision" not in record and set(record) == RECORD_KEYS
        assert numerics_key(record) == key
    bf16 = numerics_record("bf16-mixed")
    assert bf16["precision"] == "bf16-mixed" and json.loads(json.dumps(bf16)) == bf16
    assert numerics_key(bf16) == f"{key} | bf16-mixed"
    assert numerics_key(COMMITTED) == COMMITTED_KEY  # a record without the field: unchanged
    assert numerics_key({**COMMITTED, "precision": "32-true"}) == COMMITTED_KEY
    assert numerics_key({**COMMITTED, "precision": "bf16-mixed"}) == f"{COMMITTED_KEY} | bf16-mixed"
    assert mixed_numerics([COMMITTED, {**COMMITTED, "precision": "bf16-mixed"}, COMMITTED]) == [
        (COMMITTED_KEY, 2),
        (f"{COMMITTED_KEY} | bf16-mixed", 1),
    ]


def test_mixed_numerics_counts_distinct_keys() -> None:
    a = numerics_record()
    b = {**a, "cpu_model": "Intel(R) Xeon(R) Platinum 8480+", "cpu_capability": "AVX2"}
    got = mixed_numerics([a, b, a, None, a, numerics_key(b)])
    assert got == [(numerics_key(a), 3), (numerics_key(b), 2), ("not recorded", 1)]
    assert mixed_numerics([]) == []


def test_parse_config_reads_onednn_and_blas() -> None:
    text = (
        "  - Intel(R) oneAPI Math Kernel Library Version 2024.2-Product Build 20240605\n"
        "  - Intel(R) MKL-DNN v3.12.0 (Git Hash 80afa71)\n"
        "  - Build settings: BLAS_INFO=mkl, BUILD_TYPE=Release, LAPACK_INFO=mkl\n"
    )
    assert parse_config(text) == {"onednn": "3.12.0", "blas": "mkl", "blas_version": "2024.2"}
    assert parse_config("BLAS_INFO=open, OpenBLAS 0.3.27") == {
        "onednn": None,
        "blas": "open",
        "blas_version": "0.3.27",
    }
    assert parse_config("") == {"onednn": None, "blas": None, "blas_version": None}


def test_isa_env_mapping() -> None:
    assert CPU_ISAS == ("native", "default", "avx2", "avx512")
    assert isa_env("native") == {}
    assert isa_env("default") == {
        "ATEN_CPU_CAPABILITY": "default",
        "ONEDNN_MAX_CPU_ISA": "SSE41",
        "MKL_CBWR": "COMPATIBLE",
    }
    assert isa_env("avx2") == {
        "ATEN_CPU_CAPABILITY": "avx2",
        "ONEDNN_MAX_CPU_ISA": "AVX2",
        "MKL_CBWR": "AVX2",
    }
    assert isa_env("avx512") == {
        "ATEN_CPU_CAPABILITY": "avx512",
        "ONEDNN_MAX_CPU_ISA": "AVX512_CORE",
        "MKL_CBWR": "AVX512",
    }
    with pytest.raises(ConfigError, match=r"cpu_isa='sse4': choose one of native, default, avx2, avx512"):
        isa_env("sse4")


def test_check_isa_refuses_what_the_cpu_lacks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(machine, "cpu_flags", lambda: frozenset({"sse2", "avx", "avx2", "fma", "avx512f"}))
    check_isa("native")
    check_isa("default")
    check_isa("avx2")
    with pytest.raises(ConfigError) as err:
        check_isa("avx512")
    message = str(err.value)
    assert "needs the CPU flags avx512f, avx512bw, avx512vl, avx512dq" in message
    assert "lacks avx512bw, avx512vl, avx512dq" in message
    assert message.endswith("Choose one it has: native, default, avx2")
    monkeypatch.setattr(machine, "cpu_flags", lambda: frozenset({"avx2"}))  # no fma: no ATen AVX2
    with pytest.raises(ConfigError, match=r"lacks fma\. Choose one it has: native, default$"):
        check_isa("avx2")
    monkeypatch.setattr(machine, "cpu_flags", frozenset)  # no /proc/cpuinfo (macOS, Arm without flags)
    with pytest.raises(ConfigError, match=r"lacks avx2, fma"):
        check_isa("avx2")
    with pytest.raises(ConfigError, match=r"choose one of native, default, avx2, avx512"):
        check_isa("AVX2")


def test_this_process_runs_native() -> None:
    """The suite runs unpinned (unless someone exported the variables): native matches, and a pin
    whose variables are not set is refused with the command line that would set them."""
    assert capability_matches("native")
    require_pinned("native")
    if any(os.environ.get(k) for k in ISA_ENV_VARS):
        pytest.skip("the ISA variables are set in this environment")
    if "default" in machine.available_isas() and torch.backends.cpu.get_cpu_capability() != "DEFAULT":
        assert not capability_matches("default")
        with pytest.raises(ConfigError, match=r"start it with `ATEN_CPU_CAPABILITY=default ONEDNN_MAX"):
            require_pinned("default")


PROBE = (
    "import json, sys, torch; from ablate.experiments.schema import machine as m; "
    "print(json.dumps([torch.backends.cpu.get_cpu_capability(), m.capability_matches(sys.argv[1]), "
    "m.numerics_record()['isa_env']]))"
)


def test_each_pin_takes_effect_in_a_fresh_process() -> None:
    """ATen reports the pinned level for every level this CPU has (a fresh interpreter per level,
    the environment set before torch loads); all started at once (each imports torch)."""
    levels = [isa for isa in machine.available_isas() if isa != "native"]
    procs = {
        isa: subprocess.Popen(
            [sys.executable, "-c", PROBE, isa],
            env={**{k: v for k, v in os.environ.items() if k not in ISA_ENV_VARS}, **isa_env(isa)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for isa in levels
    }
    for isa, proc in procs.items():
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        capability, matches, env = json.loads(out.strip().splitlines()[-1])
        assert capability == machine.CAPABILITY[isa] and matches, (isa, capability)
        assert env == isa_env(isa)


def test_trainer_cpu_isa_is_a_choice_the_cpu_must_have(monkeypatch: pytest.MonkeyPatch) -> None:
    from ablate.experiments.schema.config import TrainConfig

    with pytest.raises(ConfigError, match="trainer.cpu_isa='sse9'.*native.*avx512"):
        TrainConfig().override({"trainer.cpu_isa": "sse9"})
    monkeypatch.setattr(machine, "cpu_flags", lambda: frozenset({"avx2", "fma"}))
    cfg = TrainConfig().override({"trainer.cpu_isa": "avx512"})  # valid config, absent on this CPU
    with pytest.raises(ConfigError, match="avx512"):
        cfg.trainer.check_machine()
    TrainConfig().override({"trainer.cpu_isa": "avx2"}).trainer.check_machine()


def test_a_pin_is_study_wide_and_keeps_old_identities() -> None:
    from ablate.experiments.schema.config import TrainConfig, without_later_defaults
    from ablate.experiments.specs.spec_file import spec_from_dict
    from tests.helpers.configs import TINY_BASE

    assert "cpu_isa" not in without_later_defaults(TrainConfig().to_dict())["trainer"]
    with pytest.raises(ConfigError, match="trainer.cpu_isa"):
        spec_from_dict(
            {"name": "p", "base": TINY_BASE, "variants": {"b": {}, "x": {"trainer.cpu_isa": "avx2"}}}
        )


def test_workers_start_with_the_pin() -> None:
    from ablate.sweeps.drivers.loop import _worker_env

    env = _worker_env(0, None, machine.isa_env("avx2"))
    assert env["ATEN_CPU_CAPABILITY"] == "avx2" and env["MKL_CBWR"] == "AVX2"
    assert "ATEN_CPU_CAPABILITY" not in _worker_env(0, None, machine.isa_env("native")) or os.environ.get(
        "ATEN_CPU_CAPABILITY"
    )
