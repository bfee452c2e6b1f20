"""The stored training experiments (`make experiments` writes them; the book only reads them).

`load()` returns an `Experiments` over `experiments.json.gz`, which scripts/experiments.py writes (`assemble`) in
this layout:
{"format", "version", "settings", "studies": {name: {"title", "cells"}}, "runs": [run, ...],
 "update_size": {...}}. A run is a dict with its "config" (Config fields), "lr", "warmup", "seed", "outcome",
"accuracy", "final_loss" and its curves: "loss", "max_logit", "grad_norm" (at settings["curve_steps"]), "eval_steps",
"eval_loss", "eval_accuracy", "resid_rms" and "resid_max" (one row per evaluation, one column per layer) and
"grad_norms_at_init" (one row per layer, one column per settings["grad_groups"]).
"""

from __future__ import annotations

import gzip
import json
from functools import lru_cache
from pathlib import Path

from ..outcome import LABELS
from ..transformer import DYT_ALPHA

PATH = Path(__file__).with_name("experiments.json.gz")
FORMAT, VERSION = "normlab-experiments", 1
BASE = {"norm": "layer_norm", "qk_norm": False, "deepnorm": False, "dyt_alpha": DYT_ALPHA}   # unnamed config fields


class Experiments:
    """The stored runs, with a lookup by configuration, learning rate, warm-up and seed."""

    def __init__(self, data: dict):
        if data.get("format") != FORMAT or data.get("version") != VERSION:
            raise ValueError(f"not a {FORMAT} file of version {VERSION}: got {data.get('format')!r} "
                             f"version {data.get('version')!r}; run `make experiments`")
        self.settings, self.studies, self.runs = data["settings"], data["studies"], data["runs"]
        self.update_size = data.get("update_size", {})

    def select(self, **want) -> list[dict]:
        """Every run whose config fields, lr, warmup, steps or seed equal `want` (unnamed fields of BASE take their
        plain values, unnamed steps the settings' steps), ordered by seed."""
        want = {**BASE, "steps": self.settings["steps"], **want}
        out = []
        for r in self.runs:
            have = {**BASE, **r["config"], "lr": r["lr"], "warmup": r["warmup"], "seed": r["seed"],
                    "steps": r.get("steps", self.settings["steps"])}
            if all(have.get(k) == v for k, v in want.items()):
                out.append(r)
        return sorted(out, key=lambda r: r["seed"])

    def outcomes(self, **want) -> dict:
        """{"solved": n, "learning": n, "stuck": n, "diverged": n, "seeds": n} over the runs `select` finds (the
        labels of normlab_core.outcome)."""
        runs = self.select(**want)
        counts = {k: 0 for k in LABELS}
        for r in runs:
            counts[r["outcome"]] += 1
        return {**counts, "seeds": len(runs)}


@lru_cache(maxsize=2)
def _read(path: str) -> dict:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def load(path=None) -> Experiments:
    """The stored experiments (default: the file shipped with normlab_core)."""
    path = Path(path) if path is not None else PATH
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: `make experiments` writes it")
    return Experiments(_read(str(path)))
