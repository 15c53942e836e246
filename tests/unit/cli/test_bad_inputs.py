"""A catalog of user errors: each exits with code 2, names the problem, and leaves no ``out`` folder.

Every case is a real ``ablate train ... --out out`` process in its own working folder. Starting the
interpreter costs ~8 CPU-seconds of imports (torch, lightning, datasets), so the catalog forks this
already-importing test process and runs the CLI's ``main`` in the child (same argv parsing, same exit
code, its own cwd, stdout and stderr); one case also goes through the console entry point proper.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.configs import TINY_YAML as TINY
from tests.helpers.forked import Case, assert_failed_cleanly, prepare, run_forked

GOOD_ROWS = "".join(f"{w} film number {i},{i % 2}\n" for i, w in enumerate(["good", "bad"] * 20))
TEXT = ["data.task=text", "data.source=data.csv"]


CASES: dict[str, Case] = {
    # --- config keys, types and values -------------------------------------------------------
    "unknown-key": Case(
        ["model.n_head=1"], ["unknown config key 'model.n_head'", "valid model keys", "n_heads"]
    ),
    "unknown-section": Case(
        ["optimizer.lr=1"], ["unknown config key 'optimizer.lr'", "'optim'", "'trainer'"]
    ),
    "unknown-section-in-yaml": Case(
        [], ["unknown config section", "optimiser", "'optim'"], {"tiny.yaml": TINY + "optimiser: {lr: 1}\n"}
    ),
    "unknown-key-in-yaml": Case(
        [],
        ["unknown key", "model.heads", "valid model keys", "n_heads"],
        {"tiny.yaml": TINY.replace("n_heads", "heads")},
    ),
    "section-not-mapping": Case(
        [],
        ["section 'trainer' must be a mapping"],
        {"tiny.yaml": TINY.replace("trainer: {max_steps: 4, log_every: 1}", "trainer: 4")},
    ),
    "int-given-string": Case(["model.d_model=big"], ["model.d_model='big'", "wrong type", "expected int"]),
    "int-given-bool": Case(["model.n_layers=true"], ["model.n_layers=True", "wrong type", "expected int"]),
    "seed-given-string": Case(["seed=abc"], ["seed='abc'", "expected int"]),
    "float-given-string": Case(["optim.lr=fast"], ["optim.lr='fast'", "wrong type", "expected float"]),
    "invalid-choice-pe": Case(
        ["model.pe=abs"], ["model.pe='abs'", "registered: alibi, learned, none, rope, sinusoidal"]
    ),
    # A name no test registers; the built-ins each named: run_forked inherits this process's
    # registry, where earlier tests (in the same xdist worker) may have registered norms of their
    # own, listed among them in order.
    "unknown-norm-layer": Case(
        ["model.norm_layer=nosuchnorm"],
        [
            "model.norm_layer='nosuchnorm' is not a registered norm component; registered: ",
            " layernorm,",
            " rmsnorm",
        ],
    ),
    "unknown-ffn": Case(["model.ffn=moe"], ["model.ffn='moe'", "registered: glu, mlp"]),
    "kv-heads-not-dividing": Case(
        ["model.n_kv_heads=3"], ["model.attention_options.n_kv_heads=3 must divide", "[1, 2]"]
    ),
    "plugin-not-found": Case(["plugins=[nowhere.py]"], ["plugin", "nowhere.py: file not found"]),
    "plugin-import-error": Case(
        ["plugins=[broken.py]"],
        ["plugin", "broken.py failed to import: ZeroDivisionError"],
        {"broken.py": "1 / 0\n"},
    ),
    "invalid-choice-norm": Case(
        ["model.norm=diagonal"], ["model.block='diagonal'", "parallel, post, pre, rezero, sandwich"]
    ),
    "heads-do-not-divide": Case(
        ["model.n_heads=3"],
        ["d_model=16 is not divisible by model.n_heads=3", "valid n_heads: [1, 2, 4, 8, 16]"],
    ),
    "rope-odd-head-dim": Case(
        ["model.pe=rope", "model.n_heads=16"], ["model.pe='rope'", "even head_dim", "16/16 = 1"]
    ),
    "max-steps-zero": Case(["trainer.max_steps=0"], ["trainer.max_steps=0 is out of range; valid: [1,"]),
    "lr-negative": Case(["optim.lr=-1"], ["optim.lr=-1.0 is out of range; valid: (0, 1]"]),
    "dropout-above-one": Case(["model.dropout=1.5"], ["model.dropout=1.5 is out of range; valid: [0, 1)"]),
    "batch-size-zero": Case(["data.batch_size=0"], ["data.batch_size=0 is out of range; valid: [1, 65536]"]),
    "warmup-ratio-one": Case(
        ["optim.warmup_ratio=1"], ["optim.warmup_ratio=1.0 is out of range; valid: [0, 1)"]
    ),
    "min-len-above-max-len": Case(["data.min_len=9"], ["data.min_len=9 is larger than data.max_len=7"]),
    "learned-pe-too-short": Case(
        ["model.pe=learned", "model.max_len=6"],
        ["model.pe='learned'", "model.max_len=6", "reach 8 tokens", "raise model.max_len"],
    ),
    "seed-parallel-zero": Case(["trainer.seed_parallel=0"], ["trainer.seed_parallel=0 is out of range"]),
    "seed-parallel-with-compile": Case(
        ["trainer.seed_parallel=2", "trainer.compile=true"],
        ["trainer.compile is not supported", "choose one"],
    ),
    "override-without-equals": Case(["model.n_heads"], ["'model.n_heads' is not of the form key=value"]),
    # --- config files ------------------------------------------------------------------------
    "missing-config-file": Case(["@nothere.yaml"], ["file not found", "nothere.yaml"]),
    "yaml-syntax-error": Case(
        [],
        ["cannot read YAML file", "tiny.yaml", "line 2"],
        {"tiny.yaml": "model:\n  d_model: [16\nseed: 0\n"},
    ),
    "yaml-is-a-list": Case([], ["tiny.yaml", "must be a YAML mapping"], {"tiny.yaml": "- model\n- data\n"}),
    "yaml-duplicate-key": Case([], ["tiny.yaml", "duplicate key 'seed'"], {"tiny.yaml": TINY + "seed: 1\n"}),
    # --- text data ---------------------------------------------------------------------------
    "text-without-source": Case(["data.task=text"], ["data.task='text' needs data.source"]),
    "data-file-missing": Case(
        ["data.task=text", "data.source=nothere.csv"],
        ["data.source: file or folder not found", "nothere.csv"],
    ),
    "folder-without-test": Case(
        ["data.task=text", "data.source=corpus"],
        ["corpus", "no test file", "test.csv"],
        {"corpus": None, "corpus/train.csv": "sentence,label\n" + GOOD_ROWS},
    ),
    "label-not-integer": Case(
        TEXT,
        ["data.csv line 4", "label 'positive'", "not an integer"],
        {"data.csv": "sentence,label\ngood,1\nbad,0\nfine,positive\n" + GOOD_ROWS},
    ),
    "label-negative": Case(
        TEXT,
        ["data.csv line 3", "label -1 is negative"],
        {"data.csv": "sentence,label\ngood,1\nbad,-1\n" + GOOD_ROWS},
    ),
    "text-empty": Case(
        TEXT,
        ["data.csv line 3", "empty text", "'sentence'"],
        {"data.csv": 'sentence,label\ngood,1\n"  ",0\n' + GOOD_ROWS},
    ),
    "label-column-missing": Case(
        [*TEXT, "data.label_column=y"],
        ["data.csv", "no label column 'y'", "['sentence', 'label']"],
        {"data.csv": "sentence,label\n" + GOOD_ROWS},
    ),
    "text-column-missing": Case(
        [*TEXT, "data.text_column=review"],
        ["data.csv", "no text column 'review'", "['sentence', 'label']"],
        {"data.csv": "sentence,label\n" + GOOD_ROWS},
    ),
    "csv-row-with-extra-fields": Case(
        TEXT,
        ["data.csv line 3", "3 field(s) where the header has 2"],
        {"data.csv": "sentence,label\ngood,1\nsure, fine,0\n" + GOOD_ROWS},
    ),
    "csv-unclosed-quote": Case(
        TEXT,
        ["data.csv line 3", "check the delimiter and quoting"],
        {"data.csv": 'sentence,label\ngood,1\n"bad,0\n' + GOOD_ROWS},
    ),
    "csv-header-only": Case(TEXT, ["data.csv", "has no rows"], {"data.csv": "sentence,label\n"}),
    "csv-empty-file": Case(TEXT, ["data.csv", "is empty"], {"data.csv": ""}),
    "label-only-in-test": Case(
        ["data.task=text", "data.source=corpus"],
        ["corpus/test.csv line 2", "label 7 in test does not occur in train"],
        {
            "corpus": None,
            "corpus/train.csv": "sentence,label\n" + GOOD_ROWS,
            "corpus/test.csv": "sentence,label\nodd,7\n",
        },
    ),
    # --- output folder -----------------------------------------------------------------------
    "out-exists-not-empty": Case(
        [], ["output folder out already exists and is not empty"], {"out": None, "out/keep.txt": "mine\n"}
    ),
}


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
def test_bad_input_exits_2(tmp_path: Path, case: Case) -> None:
    ran = run_forked(prepare(tmp_path, case), tmp_path)
    assert_failed_cleanly(tmp_path, ran, case)


def test_catalog_is_large_enough() -> None:
    assert len(CASES) >= 25
