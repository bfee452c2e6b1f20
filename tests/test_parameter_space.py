"""Every notebook runs to the end for any value its parameters cell allows.

A learner may put anything the parameters cell's comments allow into it: an input of zeros or of one repeated
value, eps = 0, a huge component, a depth of 1. A degenerate case is shown and explained in the notebook's output
(a NaN printed with the reason, a figure with a note), never raised. Here each notebook is executed with a few sets
of parameters drawn at random (fixed seed) from what its parameters cell allows, and with the edge cases a learner
met (23.7 with a printed float32 sensitivity that rounds to 0, 23.1 with x0 = 0, 23.4 with a constant vector and
eps = 0). A run fails on any cell error, and on numpy's bare floating-point warnings ("invalid value encountered in
divide" explains nothing); the library's own warnings, which name the cause, may be written.

Cost: one execution per draw, a few seconds each (DRAWS per notebook). A notebook's runs here and in
test_parameters.py share one kernel (conftest.py's `notebook_kernel`): the first is fresh, each later one is
emptied first, as a learner edits the parameters cell and runs all again.
"""

from __future__ import annotations

import random
import re

import nbformat
import pytest
from test_prose_numbers import ROOT
from toc_support import toc_notebooks

from scripts.refresh_notebooks import execute

NOTEBOOKS = ROOT / "notebooks"
DRAWS = 2
ANSI = re.compile(r"\x1b\[[0-9;]*m")
# numpy's own floating-point warnings ("overflow encountered in divide") say nothing a learner can act on; the
# library's warnings (normlab_core's, which say what happened and why, e.g. a zero variance with eps = 0) may stay.
RAW_WARNING = re.compile(r"RuntimeWarning: .* encountered in|Traceback")
SEED = 32


def vector(rng: random.Random, n: int | None = None) -> list[float]:
    """A vector a learner might type: random numbers of any size, with an offset, or one repeated value
    (zero included)."""
    n = n or rng.randint(2, 8)
    kind = rng.choice(["random", "random", "offset", "constant", "zeros", "huge"])
    scale = 10 ** rng.uniform(-3, 3)
    if kind == "constant":
        return [round(rng.uniform(-10, 10), 3)] * n
    if kind == "zeros":
        return [0.0] * n
    if kind == "huge":
        v = [round(rng.uniform(-5, 5), 3) for _ in range(n)]
        v[rng.randrange(n)] = 1e4
        return v
    base = rng.uniform(-100, 100) if kind == "offset" else 0.0
    return [float(f"{base + scale * rng.gauss(0, 1):.6g}") for _ in range(n)]


def eps(rng: random.Random) -> float:
    return rng.choice([0.0, 1e-8, 1e-6, 1e-5, 1e-3, 1e-1, 1.0])


def depths(rng: random.Random, top: int) -> tuple[int, ...]:
    return tuple(sorted(rng.sample(range(1, top + 1), rng.randint(1, 5))))


# For each notebook: a function drawing one edit of its parameters cell within what its comments allow.
def _01(rng):
    return {"X0": vector(rng), "DEPTH": rng.randint(1, 64),
            "GAINS": tuple(round(rng.uniform(0, 2), 2) for _ in range(rng.randint(1, 4))),
            "MAX_DEPTH": rng.randint(1, 96)}


def _02(rng):
    return {"GAIN_UP": round(rng.uniform(1.01, 1.5), 3), "GAIN_DOWN": round(rng.uniform(0.5, 0.99), 3),
            "DEPTH": rng.randint(1, 96), "DEEP_DEPTH": rng.randint(1, 192), "X0": vector(rng),
            "BATCH": rng.randint(1, 64), "BATCH_SIZES": tuple(sorted(rng.sample(range(1, 65), rng.randint(1, 6)))),
            "SEQ_LEN": rng.randint(2, 256), "LONG_D": rng.randint(2, 16), "RHO": round(rng.uniform(0, 0.99), 2),
            "MOMENTUM": round(rng.uniform(0, 1), 2), "TRAIN_STEPS": rng.randint(1, 50)}


def _03(rng):
    n = rng.randint(2, 8)
    return {"A": vector(rng, n), "B": vector(rng, n)}


def _04(rng):
    n = rng.randint(2, 8)
    return {"A": vector(rng, n), "B": vector(rng, n), "EPS": eps(rng), "SEED": rng.randint(0, 10**6)}


def _05(rng):
    return {"A": vector(rng), "EPS": eps(rng)}


def _06(rng):
    return {"CENTRED": vector(rng), "OFFSET": round(rng.uniform(-1000, 1000), 2), "MIXED": vector(rng),
            "A": vector(rng), "EPS": eps(rng)}


def _12(rng):
    return {"A": vector(rng), "EPS": eps(rng), "STAT_OFFSET": round(rng.uniform(0, 1e4), 1),
            "CONSTANT": round(rng.uniform(-1000, 1000), 2)}


def _07(rng):
    return {"X0": vector(rng), "EPS": eps(rng), "GAIN": round(rng.uniform(0, 2), 3),
            "BIAS": round(rng.uniform(-1, 1), 3), "STEP": rng.choice([1e-5, 1e-4, 1e-3, 1e-2, 1e-1]),
            "DEPTHS": depths(rng, 64), "MAX_DEPTH": rng.randint(1, 512)}


def _08(rng):
    n = rng.randint(2, 8)
    return {"X": vector(rng, n), "DY": vector(rng, n), "EPS": eps(rng),
            "STEP": rng.choice([1e-6, 1e-5, 1e-4, 1e-3, 1e-2])}


def _09(rng):
    n = rng.randint(2, 8)
    return {"X_SIX": vector(rng), "CENTRED": vector(rng), "OFFSET": round(rng.uniform(-1000, 1000), 2),
            "X_STACK": vector(rng), "X_GRAD": vector(rng, n), "UPSTREAM": vector(rng, n), "EPS": eps(rng),
            "STACK_EPS": eps(rng), "STEP": rng.choice([1e-5, 1e-4, 1e-3, 1e-2]), "DEPTHS": depths(rng, 64),
            "MAX_DEPTH": rng.randint(1, 96)}


def _11(rng):
    return {"GRAD_DEPTHS": depths(rng, 12)[:3], "GRAD_SEEDS": tuple(sorted(rng.sample(range(5), rng.randint(1, 2)))),
            "GRAD_MATRIX": rng.choice(["attn.wq", "attn.wk", "attn.wv", "attn.wo", "mlp.w1", "mlp.w2"]),
            "CHECK": dict(depth=rng.randint(1, 2), d_model=rng.choice([4, 8]), heads=2, d_ff=rng.randint(2, 12),
                          vocab=rng.randint(2, 6), seq_len=rng.randint(1, 4)),
            "CHECK_BATCH": rng.randint(1, 6),
            "LIVE": dict(depth=rng.randint(1, 3), placement=rng.choice(["post", "pre"]), lr=rng.choice([1e-3, 1e-2]),
                         warmup=rng.choice([0.0, 0.15]), steps=rng.randint(1, 30), seed=rng.randint(0, 9)),
            "COSINE_DEPTH": rng.randint(1, 48)}


DRAW = {"01_what_you_will_learn": _01, "02_the_problem": _02, "03_mean_and_variance": _03, "04_layer_norm": _04,
        "05_rms_norm": _05, "06_comparing": _06, "07_pre_post_norm": _07, "08_backward": _08,
        "09_key_takeaways": _09, "11_does_it_train": _11, "12_norms_in_16_bits": _12}

# The edits the issue reports as crashing, as a learner typed them.
REPORTED = [
    ("07_pre_post_norm", {"X0": [1.0, -2.0, 0.5, 3.0, 1e4], "EPS": 1e-3, "GAIN": 0.8, "BIAS": 0.2,
                          "DEPTHS": (1, 2, 4, 8, 16, 32, 64)}),
    ("01_what_you_will_learn", {"X0": [0.0, 0.0, 0.0, 0.0]}),
    ("04_layer_norm", {"A": [3.0, 3.0, 3.0, 3.0, 3.0, 3.0], "EPS": 0.0}),
    ("08_backward", {"X": [2.0, 2.0, 2.0, 2.0], "DY": [0.1, -0.2, 0.3, 0.0], "EPS": 0.0}),   # x_hat = 0 / 0
    ("08_backward", {"X": [0.0, 0.0, 0.0], "DY": [0.0, 0.0, 0.0]}),                        # a zero gradient
]


def edit_source(values: dict) -> str:
    return "\n".join(f"{k} = {v!r}" for k, v in values.items())


def cases() -> list:
    out = [pytest.param(name, values, id=f"{name}-reported") for name, values in REPORTED]
    for name, draw in DRAW.items():
        rng = random.Random(f"{SEED}-{name}")
        out += [pytest.param(name, draw(rng), id=f"{name}-draw{i}") for i in range(DRAWS)]
    return out


def test_every_notebook_with_a_parameters_cell_has_a_drawer():
    with_parameters = sorted(p.stem for p in toc_notebooks()
                             if any("parameters" in c.metadata.get("tags", [])
                                    for c in nbformat.read(p, as_version=4).cells))
    assert sorted(DRAW) == with_parameters


@pytest.mark.parametrize("name, values", cases())
def test_notebook_runs_to_the_end_with_allowed_parameters(name, values, notebook_kernel):
    path = NOTEBOOKS / f"{name}.ipynb"
    nb = nbformat.read(path, as_version=4)
    edit = edit_source(values)
    try:
        execute(nb, path.parent, overrides=edit, kernel=notebook_kernel(name))
    except Exception as err:  # noqa: BLE001 - reported with the edit that caused it
        cell = ANSI.sub("", str(err)).split("------------------")[1] if "------------------" in str(err) else ""
        pytest.fail(f"{name} stopped with the edit\n{edit}\nin the cell{cell}\n"
                    f"{getattr(err, 'ename', type(err).__name__)}: {ANSI.sub('', str(getattr(err, 'evalue', err)))}")
    raw = [f"cell {i}: {''.join(o.get('text', ''))[:300]}" for i, c in enumerate(nb.cells)
           for o in c.get("outputs", []) if o.get("name") == "stderr" and RAW_WARNING.search(o.get("text", ""))]
    assert not raw, f"{name} let numpy's bare warnings through with the edit\n{edit}\n" + "\n".join(raw)
