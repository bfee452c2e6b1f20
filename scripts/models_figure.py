"""The figure of "What models actually do": where each released model puts its norms, and which norm (`make book`).

Writes book/assets/generated/model-norms.png (not kept in git) from normlab_core/data/model_norms.json, the data
the page's table is written from (scripts/model_norms_page.py), so the figure and the table never disagree.
One row per model, oldest first; one column per place a norm can sit; a filled square where the model has a norm,
coloured by its kind (LayerNorm or RMSNorm).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
from matplotlib.patches import Patch, Rectangle  # noqa: E402

from normlab_core.figures.style import COLORS, new_figure  # noqa: E402
from scripts import model_norms_page as mnp  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "book" / "assets" / "generated" / "model-norms.png"
DPI = 100     # drawn at the size it is shown, as the landing figure: a phone shows it at 0.8 of its pixels or more

# The places a norm can sit, left to right, as the figure labels them.
PLACES = {
    "input": "sublayer\ninput",
    "output": "sublayer\noutput",
    "stream": "stream\npost-norm",
    "final": "final\nnorm",
    "qk": "queries\nand keys",
}
NORMS = {"LayerNorm": "layer_norm", "RMSNorm": "rms_norm"}   # the kind of norm -> its colour in COLORS


def year(model: dict) -> int:
    """The release year named in the model's `version` text ('7B to 65B, released in 2023' -> 2023)."""
    years = re.findall(r"\b(?:19|20)\d\d\b", model["version"])
    if len(years) != 1:
        raise ValueError(f"model {model['model']!r}: version should name one year, got {model['version']!r}")
    return int(years[0])


def norm_kind(model: dict) -> str:
    """'LayerNorm' or 'RMSNorm', from the start of the model's norm cell."""
    text = model["norm"]["text"]
    kind = next((k for k in NORMS if text.startswith(k)), None)
    if kind is None:
        raise ValueError(f"model {model['model']!r}: norm should start with one of {list(NORMS)}, got {text!r}")
    return kind


def places(model: dict) -> dict[str, bool]:
    """{place: whether the model has a norm there}, read from its placement and QK-norm cells."""
    text = model["placement"]["text"]
    found = {
        "input": "pre-norm" in text or "before" in text,
        "output": "after each sublayer" in text,
        "stream": re.search(r"(?<!res-)\bpost-norm\b", text) is not None,
        "final": "final norm" in text,
        "qk": model["qk_norm"]["text"].startswith("yes"),
    }
    if not (found["input"] or found["output"] or found["stream"]):
        raise ValueError(f"model {model['model']!r}: placement names no norm in the block: {text!r}")
    return found


def grid(data: dict) -> list[dict]:
    """One row per model, in the data's order: {"model", "year", "norm", "places"}."""
    return [{"model": m["model"], "year": year(m), "norm": norm_kind(m), "places": places(m)} for m in data["models"]]


def draw(path: Path, data: dict | None = None) -> list[dict]:
    """Draw the figure into `path` from `data` (the stored table by default); return the grid it shows."""
    rows = grid(mnp.load() if data is None else data)
    fig, (ax,) = new_figure(width=4.0, height=0.3 * len(rows) + 1.1)
    for i, row in enumerate(rows):
        for j, place in enumerate(PLACES):
            if row["places"][place]:
                color = COLORS[NORMS[row["norm"]]]
                ax.add_patch(Rectangle((j - 0.27, i - 0.36), 0.54, 0.72, color=color, lw=0))
            else:
                ax.plot(j, i, "o", ms=2.5, color="#BBBBBB")
    ax.set_xlim(-0.5, len(PLACES) - 0.5)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xticks(range(len(PLACES)), list(PLACES.values()), fontsize=8)
    ax.set_yticks(range(len(rows)), [f"{r['model']} ({r['year']})" for r in rows], fontsize=8)
    ax.xaxis.tick_top()
    ax.tick_params(length=0)
    for side in ax.spines.values():
        side.set_visible(False)
    ax.grid(False)
    kinds = [k for k in NORMS if any(r["norm"] == k for r in rows)]
    ax.legend(handles=[Patch(color=COLORS[NORMS[k]], label=k) for k in kinds], loc="upper center",
              bbox_to_anchor=(0.5, 0.0), ncol=len(kinds), frameon=False)
    fig.savefig(path, dpi=DPI, bbox_inches="tight", metadata={"Software": None})
    return rows


def main() -> int:
    OUT.parent.mkdir(parents=True, exist_ok=True)
    rows = draw(OUT)
    counts = {p: sum(r["places"][p] for r in rows) for p in PLACES}
    print(f"models_figure: {OUT.relative_to(ROOT)}; {len(rows)} models; norms at "
          + ", ".join(f"{p.replace(chr(10), ' ')} {n}" for p, n in counts.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
