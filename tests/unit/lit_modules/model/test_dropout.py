"""Keyed dropout's two paths give the same bits: the tensor path (any device, inside vmap) and the
one-pass native path of a single model on the CPU (lit_modules/model/dropout_native.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from ablate.lit_modules.model import dropout, dropout_native
from ablate.lit_modules.model.dropout import KeyedDropout, keep_mask, site_hash, site_key, threshold

SHAPES = [(64, 37, 128), (3, 7, 16), (64, 4, 37, 37), (5,), (2, 3, 4, 5), (1, 1, 1), (0, 5), (3, 65537)]
RATES = [0.1, 0.25, 0.5, 1 / 3, 1e-9, 0.999]
KEYS = [(0, 0, 0), (3, 17, 5), (2**33 + 5, 123456, 9), (2**32 - 1, 1, 2)]

needs_native = pytest.mark.skipif(
    not dropout_native.available(), reason="no C++ compiler for the native path"
)


def test_the_python_site_hash_is_the_tensor_one() -> None:
    for seed, step, site in KEYS:
        assert site_hash(seed, step, site) == int(site_key(torch.tensor([seed, step]), site))


def test_the_integer_threshold_is_the_float_compare() -> None:
    m = torch.arange(1 << 24, dtype=torch.int64)
    u = m.to(torch.float32) * (1.0 / (1 << 24))
    for p in [*RATES, 0.3, 0.7, 2**-24, 1 - 2**-24, float(np.float32(0.1)) + 1e-12]:
        assert torch.equal(u >= p, m >= threshold(p)), p
    assert threshold(0.5) == 1 << 23 and threshold(1e-9) == math.ceil(float(np.float32(1e-9)) * 2**24)


@needs_native
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_the_native_mask_is_the_tensor_mask(shape: tuple[int, ...]) -> None:
    for p in RATES:
        for seed, step, site in KEYS:
            ref = keep_mask(torch.tensor([seed, step]), site, torch.Size(shape), p, torch.device("cpu"))
            fast = dropout_native.keep_mask(site_hash(seed, step, site), torch.Size(shape), threshold(p))
            assert fast.dtype == torch.float32 and torch.equal(ref.float(), fast), (
                shape,
                p,
                seed,
                step,
                site,
            )


@needs_native
def test_a_tuple_key_and_a_tensor_key_drop_the_same_elements(monkeypatch: pytest.MonkeyPatch) -> None:
    drop = KeyedDropout(0.3).train()
    drop.site = 4
    x = torch.randn(8, 11, 32)
    fast = drop(x, (7, 123))
    assert torch.equal(fast, drop(x, torch.tensor([7, 123])))
    monkeypatch.setattr(dropout.dropout_native, "available", lambda: False)  # no compiler: the same
    assert torch.equal(fast, drop(x, (7, 123)))
