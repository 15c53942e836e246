"""The keyed dropout mask in one pass of C++ (lit_modules/model/dropout.py computes the same bits with
tensor ops): the fast path of a single model on the CPU.

The tensor path hashes the coordinates one dimension at a time and runs the last hash and the
threshold as ~12 full-size int64 tensor ops; here the hashes of all but the last dimension are
computed once (B x L of them) and the last one fused with the threshold into the float32 mask,
in parallel over rows with ``at::parallel_for`` (so ``trainer.cpu_threads`` bounds it). The
arithmetic is the same 32-bit hash (a product kept modulo 2^32 is a 32-bit product), so the mask is bit-identical
(tests/unit/lit_modules/model/test_dropout.py compares both on every shape and rate the models use).

The extension is compiled on first use by ``torch.utils.cpp_extension.load_inline`` (about 20 s
once per machine, cached in ``TORCH_EXTENSIONS_DIR``, default ~/.cache/torch_extensions; a lock
keeps concurrent workers from building it twice). Where it cannot be built (no C++ compiler),
``available()`` is False and the tensor path runs: slower, the same masks.
"""

from __future__ import annotations

import functools
import os
import warnings
from typing import Any

import torch

SOURCE = r"""
#include <torch/extension.h>
#include <ATen/Parallel.h>
#include <cstdint>
#include <vector>

// (x * C) & 0xFFFFFFFF of the tensor path is a product modulo 2^32: unsigned 32-bit arithmetic,
// which vectorizes (the same bits as the 64-bit form).
static inline uint32_t mix(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7FEB352Du;
  x ^= x >> 15;
  x *= 0x68E31DA5u;
  x ^= x >> 16;
  x *= 0x2C1B3C6Du;
  return x ^ (x >> 16);
}

// The 0/1 float32 mask of `shape` whose element keeps iff (hash >> 8) >= threshold, the hash
// chained over the coordinates from the site hash (lit_modules/model/dropout.py: keep_mask).
torch::Tensor keep_mask(int64_t site_hash, std::vector<int64_t> shape, int64_t threshold) {
  auto out = torch::empty(shape, torch::dtype(torch::kFloat32));
  float* o = out.data_ptr<float>();
  const uint32_t t = static_cast<uint32_t>(threshold);  // <= 2^24
  if (shape.empty()) {
    o[0] = ((static_cast<uint32_t>(site_hash) >> 8) >= t) ? 1.0f : 0.0f;
    return out;
  }
  std::vector<uint32_t> prefix{static_cast<uint32_t>(site_hash)};
  for (size_t d = 0; d + 1 < shape.size(); ++d) {
    std::vector<uint32_t> next(prefix.size() * shape[d]);
    for (size_t i = 0; i < prefix.size(); ++i)
      for (int64_t c = 0; c < shape[d]; ++c) next[i * shape[d] + c] = mix(prefix[i] ^ static_cast<uint32_t>(c));
    prefix.swap(next);
  }
  const int64_t last = shape.back();
  const int64_t rows = static_cast<int64_t>(prefix.size());
  at::parallel_for(0, rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(last, 1)), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const uint32_t h = prefix[i];
      float* row = o + i * last;
      for (int64_t c = 0; c < last; ++c) row[c] = ((mix(h ^ static_cast<uint32_t>(c)) >> 8) >= t) ? 1.0f : 0.0f;
    }
  });
  return out;
}
"""


@functools.cache
def _module() -> Any | None:
    if os.environ.get("ABLATE_NO_NATIVE"):  # the tensor path only (tests compare the two)
        return None
    try:
        from torch.utils.cpp_extension import load_inline

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return load_inline(
                name="ablate_keyed_dropout_v2",
                cpp_sources=SOURCE,
                functions=["keep_mask"],
                extra_cflags=["-O3"],
                verbose=False,
            )
    except Exception:  # no compiler, no headers: the tensor path gives the same masks
        return None


def available() -> bool:
    return _module() is not None


def keep_mask(site_hash: int, shape: torch.Size, threshold: int) -> torch.Tensor:
    """The float32 0/1 mask (CPU) for a site hash and an integer threshold (dropout.threshold)."""
    return _module().keep_mask(site_hash, list(shape), threshold)
