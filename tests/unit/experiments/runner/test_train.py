"""``ablate train`` and ``run_trial``: outputs, determinism, divergence, schedule, every variant, text, learning."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest
import torch
import yaml
from torch import nn

from ablate.experiments.runner.cells import run_trial
from ablate.experiments.schema.config import TrainConfig
from ablate.experiments.schema.machine import numerics_key
from ablate.experiments.specs.loading import load_config
from ablate.lit_modules.model.config import ModelConfig, OptimConfig
from ablate.lit_modules.systems.classifier import LitClassifier, warmup_cosine


@pytest.fixture
def tiny_cfg(tiny_config: Path) -> TrainConfig:
    return load_config(tiny_config)


def test_run_trial_is_deterministic_and_seed_matters(tiny_cfg: TrainConfig) -> None:
    first, again = run_trial(tiny_cfg), run_trial(tiny_cfg)
    assert first.metrics == again.metrics  # bit-identical floats, every metric
    other = run_trial(tiny_cfg.override(["seed=1"]))
    assert other.metrics["val/loss"] != first.metrics["val/loss"]


def test_a_bf16_mixed_cell_records_its_precision_and_an_fp32_one_does_not(tiny_cfg: TrainConfig) -> None:
    """trainer.precision=bf16-mixed on the CPU (Lightning's CPU autocast to bf16) is in the cell's
    numerics record and key; the default (auto: fp32 on the CPU) leaves both as they were."""
    cfg = tiny_cfg.override(["trainer.max_steps=4"])
    fp32, bf16 = run_trial(cfg), run_trial(cfg.override(["trainer.precision=bf16-mixed"]))
    assert "precision" not in fp32.numerics and not numerics_key(fp32.numerics).endswith("bf16-mixed")
    assert bf16.numerics["precision"] == "bf16-mixed"
    assert numerics_key(bf16.numerics) == f"{numerics_key(fp32.numerics)} | bf16-mixed"
    assert bf16.to_dict()["numerics"]["precision"] == "bf16-mixed"  # metrics.json, results.csv


def test_nan_weights_diverge_without_crashing(tiny_cfg: TrainConfig, tmp_path: Path) -> None:
    """Adam's eps underflows to 0 in float32: the embedding's padding row (gradient always
    exactly 0) becomes 0/0 = NaN at the first step, and padded batches carry it into the loss."""
    cfg = tiny_cfg.override(["optim.eps=1e-300", "data.min_len=4", "trainer.max_steps=20"])
    result = run_trial(cfg, tmp_path)
    assert result.diverged and result.steps < 20
    saved = json.loads((tmp_path / "metrics.json").read_text())
    assert saved["diverged"] is True and saved["steps"] == result.steps


def test_nan_loss_at_step_k_stops_the_run(tiny_cfg: TrainConfig, monkeypatch: pytest.MonkeyPatch) -> None:
    losses = LitClassifier.train_losses

    def nan_from_step_3(self: LitClassifier, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        loss = losses(self, logits, labels)
        return loss * math.nan if self.global_step >= 3 else loss

    monkeypatch.setattr(LitClassifier, "train_losses", nan_from_step_3)
    result = run_trial(tiny_cfg.override(["trainer.max_steps=10"]))
    assert result.diverged and result.steps == 3


@pytest.mark.parametrize(
    ("step", "expected"),
    [(0, 0.1), (4, 0.5), (9, 1.0), (10, 1.0), (60, 0.1 + 0.9 * 0.5), (110, 0.1), (500, 0.1)],
)
def test_warmup_cosine_values(step: int, expected: float) -> None:
    # warmup 10 of 110 steps, decay to 10% of the peak
    assert warmup_cosine(step, 10, 110, 0.1) == pytest.approx(expected)


def test_warmup_cosine_without_warmup() -> None:
    assert warmup_cosine(0, 0, 100, 0.0) == 1.0
    assert warmup_cosine(25, 0, 100, 0.0) == pytest.approx(0.5 * (1 + math.cos(math.pi / 4)))
    assert warmup_cosine(50, 0, 100, 0.0) == pytest.approx(0.5)
    assert warmup_cosine(100, 0, 100, 0.0) == pytest.approx(0.0)


def test_optimizer_decays_only_linear_weights_and_follows_schedule() -> None:
    model_cfg = ModelConfig(d_model=16, n_layers=2, n_heads=2, d_ff=32, pe="learned", pool="cls", max_len=16)
    optim_cfg = OptimConfig(lr=1e-3, weight_decay=0.1, warmup_ratio=0.2, min_lr_ratio=0.5)
    lit = LitClassifier(model_cfg, optim_cfg, vocab_size=11, n_classes=3, max_steps=10, seed=0)
    conf = lit.configure_optimizers()
    opt, sched = conf["optimizer"], conf["lr_scheduler"]["scheduler"]
    assert conf["lr_scheduler"]["interval"] == "step"
    decay_group, plain_group = opt.param_groups
    assert decay_group["weight_decay"] == 0.1 and plain_group["weight_decay"] == 0.0
    decayed = {id(p) for p in decay_group["params"]}
    plain = {id(p) for p in plain_group["params"]}
    names = dict(lit.model.named_parameters())
    assert decayed.isdisjoint(plain) and decayed | plain == {id(p) for p in names.values()}
    linear_weights = {
        f"{m_name}.weight" for m_name, m in lit.model.named_modules() if isinstance(m, nn.Linear)
    }
    assert linear_weights and {n for n, p in names.items() if id(p) in decayed} == linear_weights
    not_decayed = {n for n, p in names.items() if id(p) in plain}
    assert "embed.weight" in not_decayed and "cls" in not_decayed
    assert any(n.startswith("pe.") for n in not_decayed)  # the learned position table
    assert any(n.endswith("bias") for n in not_decayed)
    layer_norms = [m for m in lit.model.modules() if isinstance(m, nn.LayerNorm)]
    assert layer_norms and all(id(m.weight) in plain for m in layer_norms)
    # warmup 2 of 10 steps: 0.5, 1.0, then cosine down to min_lr_ratio 0.5
    seen = []
    for _ in range(11):
        seen.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    expected = [warmup_cosine(s, 2, 10, 0.5) * 1e-3 for s in range(11)]
    assert seen == pytest.approx(expected)
    assert seen[:3] == pytest.approx([0.5e-3, 1e-3, 1e-3]) and seen[10] == pytest.approx(0.5e-3)


# The full product pe x norm x pool x n_heads (40 runs, ~0.2 s each).
VARIANTS = [
    (pe, norm, pool, heads)
    for pe in ("none", "sinusoidal", "learned", "rope", "alibi")
    for norm in ("pre", "post")
    for pool in ("cls", "mean")
    for heads in (1, 2)
]


@pytest.mark.parametrize(
    ("pe", "norm", "pool", "heads"), VARIANTS, ids=["-".join(map(str, v)) for v in VARIANTS]
)
def test_every_variant_trains(pe: str, norm: str, pool: str, heads: int) -> None:
    # Batch 3 and lengths 5..7: odd sizes that catch shape and padding-mask bugs.
    model = {"d_model": 8, "n_layers": 1, "d_ff": 16, "max_len": 8, "dropout": 0.1}
    data = {"task": "order", "min_len": 5, "max_len": 7, "n_symbols": 3, "n_train": 12, "n_val": 6}
    base = TrainConfig.from_dict({"model": model, "data": {**data, "n_test": 6, "batch_size": 3}})
    cfg = base.override(
        {
            "model.pe": pe,
            "model.norm": norm,
            "model.pool": pool,
            "model.n_heads": heads,
            "trainer.max_steps": 2,
        }
    )
    result = run_trial(cfg)
    assert result.steps == 2 and not result.diverged
    assert {"val/loss", "val/acc", "test/loss", "test/acc"} <= set(result.metrics)
    assert all(math.isfinite(v) for v in result.metrics.values()), result.metrics


def test_run_trial_on_local_csv(tmp_path: Path, tiny_cfg: TrainConfig) -> None:
    rows = [("a fine, warm film", 1), ("dull and slow", 0), ("warm and fine", 1), ("slow, dull film", 0)] * 15
    csv = tmp_path / "reviews.csv"
    csv.write_text("label,sentence\n" + "".join(f'{y},"{t}"\n' for t, y in rows))
    cfg = tiny_cfg.override({"data.task": "text", "data.source": str(csv), "data.val_fraction": 0.1})
    result = run_trial(cfg, tmp_path / "out")
    assert result.steps == 4 and all(math.isfinite(v) for v in result.metrics.values())
    vocab = json.loads((tmp_path / "out" / "tokenizer.json").read_text())["model"]["vocab"]
    assert {"fine", "warm", "dull", ","} <= set(vocab)  # the quoted commas stayed inside the text
    assert result.extras["datamodule"].n_classes == 2


def test_progress_bar_counts_steps_not_epochs(
    tiny_cfg: TrainConfig, capfd: pytest.CaptureFixture[str]
) -> None:
    """Step-based training crosses epochs (96 examples / 16 = 6 batches, 13 steps): one bar of
    max_steps optimizer steps, never Lightning's "Epoch k/-2"."""
    cfg = tiny_cfg.override({"trainer.max_steps": 13})
    run_trial(cfg, progress=True)
    captured = capfd.readouterr()  # Lightning's tqdm bars write to stdout
    err = (captured.out + captured.err).replace("\r", "\n")
    train_lines = [line for line in err.splitlines() if line.startswith("train:")]
    assert train_lines and "13/13" in train_lines[-1]
    assert "Epoch" not in err


def test_version_print_config_and_the_output_folder_line(
    tmp_path: Path, tiny_config: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from ablate import cli

    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--version"])
    assert exit_info.value.code == 0 and capsys.readouterr().out.startswith("ablate 0.")
    monkeypatch.chdir(tmp_path)
    assert cli.main(["train", str(tiny_config), "model.pe=none", "seed=4", "--print-config"]) == 0
    printed = yaml.safe_load(capsys.readouterr().out)
    assert printed == load_config(tiny_config, ["model.pe=none", "seed=4"]).to_dict()
    assert sorted(os.listdir(tmp_path)) == ["tiny.yaml"]  # printed, trained nothing
    assert cli.main(["train", str(tiny_config), "--out", "out", "--no-progress"]) == 0
    last = capsys.readouterr().out.rstrip().splitlines()[-1]
    assert last == str((tmp_path / "out").resolve())  # the absolute output folder, on its own line


def test_train_saves_the_final_weights_once(
    tmp_path: Path, tiny_config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`ablate train` writes DIR/final.ckpt at max_steps (sweeps never checkpoint); its weights
    reproduce the run's test accuracy. --no-checkpoint writes none."""
    from ablate import cli

    monkeypatch.chdir(tmp_path)
    assert cli.main(["train", str(tiny_config), "--out", "out", "--no-progress"]) == 0
    assert sorted(p.name for p in (tmp_path / "out").glob("*.ckpt")) == ["final.ckpt"]
    ckpt = torch.load(tmp_path / "out" / "final.ckpt", map_location="cpu", weights_only=False)
    assert ckpt["global_step"] == load_config(tiny_config).trainer.max_steps
    cfg = load_config(tiny_config)
    trained = run_trial(cfg)  # the same cell again: bit-identical on CPU
    weights = {k.removeprefix("model."): v for k, v in ckpt["state_dict"].items() if k.startswith("model.")}
    for name, value in trained.extras["model"].state_dict().items():
        torch.testing.assert_close(weights[name], value, rtol=0, atol=0)
    assert cli.main(["train", str(tiny_config), "--out", "out2", "--no-progress", "--no-checkpoint"]) == 0
    assert not list((tmp_path / "out2").glob("*.ckpt"))


def test_n_params_counts_each_variants_trainable_parameters(tiny_cfg: TrainConfig, tmp_path: Path) -> None:
    """A GQA variant (one key-value head of 8 instead of two) has fewer parameters than mha: the K
    and V projections lose 8 outputs each (weights from d_model 16, and biases). Every member of
    a stack counts the same as the run alone, and metrics.json records it."""
    from ablate.experiments.runner.cells import run_cells

    mha = run_trial(tiny_cfg, tmp_path / "mha")
    gqa = run_trial(tiny_cfg.override(["model.n_kv_heads=1"]), tmp_path / "gqa")
    assert mha.n_params == sum(p.numel() for p in mha.extras["model"].parameters())
    assert mha.n_params - gqa.n_params == 2 * 8 * (16 + 1)
    assert json.loads((tmp_path / "gqa" / "metrics.json").read_text())["n_params"] == gqa.n_params
    stacked = run_cells(tiny_cfg.override(["model.n_kv_heads=1", "trainer.seed_parallel=2"]), [0, 1])
    assert [r.n_params for r in stacked] == [gqa.n_params] * 2
