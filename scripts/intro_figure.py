"""The landing page's figure: the vector's size through section 23.1's residual stack, one panel (`make book`).

Writes book/assets/generated/stack-growth.png (not kept in git) from the curves 23.1 draws
(normlab_core.figures.s01_teaser.magnitudes at its default input and gain), so the two never disagree.
"""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402

from normlab_core.examples import STACK_INPUT  # noqa: E402
from normlab_core.figures import s01_teaser  # noqa: E402
from normlab_core.figures.style import COLORS, PLACEMENT_NAMES, label, new_figure  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "book" / "assets" / "generated" / "stack-growth.png"
GAIN = 0.5   # 23.1's default sublayer gain
DPI = 100     # drawn at the size it is shown: a phone shows it at 0.8 of its pixels or more


def draw(path: Path) -> dict:
    """Draw the figure into `path`; return {placement: size after the last layer}."""
    curves = s01_teaser.magnitudes(np.asarray(STACK_INPUT, dtype=float), GAIN)
    fig, (ax,) = new_figure(width=4.0, height=2.8)
    depths = np.arange(s01_teaser.MAX_DEPTH + 1)
    for p in s01_teaser.PLACEMENTS:
        ax.plot(depths, curves[p], color=COLORS[p], lw=2.2, label=PLACEMENT_NAMES[p])
    ax.set_yscale("log")
    ax.set_xlim(0, s01_teaser.MAX_DEPTH)
    ax.set_ylim(top=10 * max(float(c.max()) for c in curves.values()))   # room above the steepest curve
    label(ax, "depth (layers)", "size ‖h‖ (log scale)")
    ax.legend(loc="upper left", frameon=False)
    fig.savefig(path, dpi=DPI, bbox_inches="tight", metadata={"Software": None})
    return {p: float(c[-1]) for p, c in curves.items()}


def main() -> int:
    OUT.parent.mkdir(parents=True, exist_ok=True)
    ends = draw(OUT)
    print(f"intro_figure: {OUT.relative_to(ROOT)}; sizes after the last layer: "
          + ", ".join(f"{p} {v:.3g}" for p, v in ends.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
