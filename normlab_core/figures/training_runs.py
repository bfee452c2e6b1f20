"""The stored training runs of `make experiments` as the section "Does it train?" draws them: what the grid and
the other studies are (read from normlab_core/data, never declared here), the words for a cell's seeds, the loss
axes every loss figure shares, and the section's static figures."""

from __future__ import annotations

import math
import textwrap
from functools import cache

import numpy as np
from matplotlib.ticker import MaxNLocator

from .. import data, spread
from ..formatting import number
from .style import COLORS, NARROW_IN, PLACEMENT_NAMES, blank_figure, house_style, label

CHANCE = math.log(16)
FLOAT16_MAX = 65504.0
LOSS_LIM = (0.0, 4.6)      # room above chance (2.77) for the legend
SEED_STYLES = ["-", "--", ":"]
LOSS_AXIS = "loss (nats per answer token)"


def stored():
    """The stored experiments (normlab_core/data/experiments.json.gz)."""
    return data.load()


def steps() -> int:
    """The steps of a stored run, unless its study says otherwise."""
    return stored().settings["steps"]


def seeds() -> list:
    """The seeds of every stored cell, unless its study adds more."""
    return list(stored().settings["seeds"])


def curve_steps() -> np.ndarray:
    """The training steps at which the stored loss curves were kept."""
    return np.array(stored().settings["curve_steps"])


@cache
def study_axes(study: str, *fields: str) -> tuple:
    """The sorted values each of `fields` takes over the cells of a stored study ("depth" and the other Config
    fields, "lr", "warmup"): the grid's depths, say, as the data file has them."""
    cells = stored().studies[study]["cells"]
    return tuple(sorted({c["config"].get(f, data.BASE.get(f)) if f not in ("lr", "warmup") else c[f]
                         for c in cells}) for f in fields)


def warmup_label(w: float, short: bool = False) -> str:
    """'none', or the fraction of the steps: '15% of the steps' ('15 %' if short)."""
    return "none" if w == 0 else f"{w:.0%}".replace("%", " %") if short else f"{w:.0%} of the steps"


def seed_summary(runs: list) -> str:
    """'2/3 solved (1 learning)': how the seeds of one cell ended (the labels of normlab_core.outcome)."""
    if not runs:
        return "not run"
    solved = sum(r["outcome"] == "solved" for r in runs)
    words = {"learning": "learning", "stuck": "stuck", "diverged": "diverged"}
    tail = ", ".join(f"{n} {w}" for k, w in words.items() if (n := sum(r["outcome"] == k for r in runs)))
    return f"{solved}/{len(runs)} solved" + (f" ({tail})" if tail else "")


def interval_words(estimate: tuple, digits: int = 2) -> str:
    """'1.71 (1.41 to 2.06)': an (estimate, low, high) of normlab_core.spread, with its 90 % bootstrap interval."""
    est, lo, hi = estimate
    return f"{est:.{digits}f} ({lo:.{digits}f} to {hi:.{digits}f})"


def loss_axes(ax, title="Loss of every seed", n_steps=None):
    """Loss against step, from 0 to `n_steps` (the stored runs' steps by default), with the chance line."""
    ax.set_xlim(0, steps() if n_steps is None else n_steps)
    ax.set_ylim(*LOSS_LIM)
    ax.axhline(CHANCE, color="0.35", lw=0.9, ls=(0, (4, 3)))
    ax.text(0.99, CHANCE + 0.06, "chance: ln 16 = 2.77", ha="right", va="bottom", color="0.3",
            transform=ax.get_yaxis_transform())      # x in axes fractions: the label stays put whatever the steps
    label(ax, "training step", LOSS_AXIS, title)


def stored_runs_figure(runs: list, color, seed: int, name: str, narrow: bool = False):
    """The loss of every stored seed of one configuration (seed `seed` drawn thicker); narrow=True: for phones."""
    fig = blank_figure(NARROW_IN, 3.8) if narrow else blank_figure()
    with house_style():
        ax = fig.subplots(1, 1)
        loss_axes(ax, "Stored runs:\n" + (textwrap.fill(name, 34) if narrow else name))
        for r in runs:
            ax.plot(curve_steps()[: len(r["loss"])], r["loss"], SEED_STYLES[r["seed"] % len(SEED_STYLES)],
                    lw=2.0 if r["seed"] == seed else 1.0, color=color,
                    label=f"seed {r['seed']}: {r['outcome']}")
        if runs:
            ax.legend(loc="upper right")
        else:
            ax.text(0.5, 0.5, "this configuration is not among\nthe stored runs: run the notebook\nin JupyterLab "
                    "to train it", transform=ax.transAxes, ha="center", va="center")
    return fig


def grad_norm_figure(per_layer: dict, depths, matrix: str, narrow: bool = False):
    """One log-scale panel per depth: the gradient norm of each layer's `matrix` at initialization, post and pre.
    per_layer maps (placement, depth) to one value per layer, or to an array (seeds, layers): then the line is the
    seeds' mean and its 90 % bootstrap interval is shaded; narrow=True stacks the panels."""
    fig = blank_figure(NARROW_IN, 0.5 + 2.1 * len(depths)) if narrow else blank_figure(height=3.0)
    with house_style():
        axes = np.atleast_1d(fig.subplots(len(depths), 1, sharey=True) if narrow else
                             fig.subplots(1, len(depths), sharey=True))
        for ax, d in zip(axes, depths, strict=True):
            for p in ("post", "pre"):
                layers, values = np.arange(1, d + 1), np.asarray(per_layer[p, d])
                ax.plot(layers, values.mean(axis=0) if values.ndim == 2 else values, "o-", ms=3, color=COLORS[p],
                        label=PLACEMENT_NAMES[p])
                if values.ndim == 2:
                    band = np.array([spread.mean_interval(col)[1:] for col in values.T])
                    ax.fill_between(layers, band[:, 0], band[:, 1], color=COLORS[p], alpha=0.2, lw=0)
            ax.set_yscale("log")
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))   # layers are whole numbers
            y = "gradient norm" if narrow else f"gradient norm of {matrix}" if ax is axes[0] else ""
            label(ax, "layer" if ax is axes[-1] or not narrow else "", y,
                  f"{d} layers" + (f": {matrix}" if narrow else ""))
        axes[0].legend(loc="lower left")
    return fig


def update_size_figure(depths, change: dict, narrow: bool = False):
    """Log-log: the RMS change of the logits after one Adam step, against depth, one line per variant (mean over
    seeds, its 90 % bootstrap interval over the seeds shaded). change maps a variant to an array (seeds, depths);
    narrow=True: for phones."""
    colors = {"post": COLORS["post"], "pre": COLORS["pre"], "peri": COLORS["layer_norm"], "deepnorm": "0.3"}
    names = PLACEMENT_NAMES
    depths = np.asarray(depths)
    fig = blank_figure(NARROW_IN, 3.8) if narrow else blank_figure(height=3.0)
    with house_style():
        ax = fig.subplots(1, 1)
        for v, rows in change.items():
            rows = np.asarray(rows, dtype=float)
            ax.plot(depths, rows.mean(axis=0), "o-", ms=3.5, color=colors.get(v, "0.5"), label=names.get(v, v))
            band = np.array([spread.mean_interval(rows[:, i])[1:] for i in range(rows.shape[1])])
            ax.fill_between(depths, band[:, 0], band[:, 1], color=colors.get(v, "0.5"), alpha=0.2, lw=0)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks(depths, [str(d) for d in depths])
        ax.minorticks_off()
        if narrow:   # the legend below the axes: the lines fill the plot from corner to corner
            fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncols=2)
        else:
            ax.legend(loc="upper left")
        label(ax, "depth (layers, log scale)", "RMS change of the logits",
              "One Adam step from\ninitialization" if narrow else "One Adam step from initialization")
    return fig


def grid_overview_figure(depths, solved: dict, narrow: bool = False):
    """Share of runs that solved the task against depth, one line per series. solved maps a series name to a
    list of (solved, runs) per depth; each point is labelled 'solved/runs'; narrow=True: for phones."""
    colors = [COLORS["pre"], COLORS["post"], "0.45"]
    styles = ["o-", "s-", "^--"]
    fig = blank_figure(NARROW_IN, 3.6) if narrow else blank_figure(height=2.8)
    with house_style():
        ax = fig.subplots(1, 1)
        for k, (name, counts) in enumerate(solved.items()):
            share = [n / max(total, 1) for n, total in counts]
            ax.plot(range(len(depths)), share, styles[k % 3], ms=4, color=colors[k % 3], label=name)
            for i, (n, total) in enumerate(counts):
                ax.annotate(f"{n}/{total}", (i, share[i]), textcoords="offset points",   # one corner per series
                            xytext=((5, 5), (5, -12), (-30, 6))[k % 3],
                            fontsize=7, color=colors[k % 3])
        ax.set_xticks(range(len(depths)), [str(d) for d in depths])
        ax.set_ylim(-0.08, 1.12)
        ax.set_xlim(-0.3, len(depths) - 0.5)
        if narrow:
            fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncols=1)
        else:
            ax.legend(loc="lower left")
        label(ax, "depth (layers)", "share of runs solved", "Runs that learnt the task, every learning rate")
    return fig


def stored_seeds(cfg, lr: float, warmup: float, n_steps: int | None = None) -> list:
    """The stored runs (every seed) of the configuration `cfg` (a transformer.Config) at peak learning rate lr,
    warm-up fraction `warmup` and `n_steps` steps (the stored runs' steps by default); [] if it was never stored.
    A stored run names only the Config fields that differ from the defaults, so only those are compared."""
    import dataclasses

    from ..transformer import Config

    plain = Config(depth=cfg.depth)
    named = {*data.BASE, "placement", "depth"}
    fields = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)
              if f.name in named or getattr(cfg, f.name) != getattr(plain, f.name)}
    return stored().select(**fields, lr=lr, warmup=warmup, steps=steps() if n_steps is None else n_steps)


def run_words(cfg, lr: float, warmup: float, seed: int | None = None) -> str:
    """A configuration in words: 'post-norm with LayerNorm, depth 6, lr 0.01, no warm-up, seed 0'."""
    from .. import norms

    extras = [w for k, w in (("qk_norm", "QK-norm"), ("deepnorm", "DeepNorm")) if getattr(cfg, k)]
    model = f"{PLACEMENT_NAMES.get(cfg.placement, cfg.placement)} with {norms.get(cfg.norm).NAME}"
    warm = "no warm-up" if warmup == 0 else f"warm-up {warmup:.0%}"
    return ", ".join([model, *extras, f"depth {cfg.depth}", f"lr {number(lr)}", warm]
                     + ([] if seed is None else [f"seed {seed}"]))
