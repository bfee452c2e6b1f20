"""Section 23.2 explorables: drift of a running sum, and BatchNorm's batch statistics against LayerNorm's."""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from matplotlib.patches import Patch, Rectangle
from matplotlib.ticker import FuncFormatter

from ..controls import Preset
from ..examples import STACK_INPUT
from ..explore import Explorable, Slider
from ..norms import batch_norm, layer_norm
from ..residual import Affine, stack_curves
from ..stats import mean_var
from ..style import COLORS, label

# ---------------------------------------------------------------------------------------------
# 1. Per-layer gain x depth
# ---------------------------------------------------------------------------------------------
MAX_DEPTH = 96
GAIN_RANGE = (0.8, 1.2)
MAG_LIM = (1e-10, 1e8)
X0 = STACK_INPUT


def growth(gain: float, depth: int) -> np.ndarray:
    """|h_l| / |h_0| for l = 0..depth of the residual stream h_l = h_(l-1) + (gain - 1) h_(l-1).

    Each layer adds back a sublayer output that is (gain - 1) times the running sum, so the sum
    is multiplied by `gain` per layer; computed with the library's unnormalized residual stack.
    """
    norms = stack_curves(X0, depth, "none", sublayer=Affine(gain - 1.0, 0.0))[0]
    return np.concatenate([[1.0], norms / np.sqrt(np.sum(X0 * X0))])


@lru_cache(maxsize=128)
def _growth_cached(gain: float) -> np.ndarray:
    return growth(gain, MAX_DEPTH)


def _gain_setup(fig):
    ax_c, ax_m = fig.subplots(1, 2)
    depths = np.arange(MAX_DEPTH + 1)
    ax_c.axhspan(0.1, 10, color="0.92", zorder=0)
    for g, ls in ((1.1, "--"), (0.9, ":")):
        ax_c.plot(depths, float(g) ** depths, ls, color="0.55", lw=1, label=f"gain {g}")
    ax_c.axhline(1, color="0.6", lw=0.8)
    (line,) = ax_c.plot(depths, depths * 0 + 1.0, color=COLORS["none"], label="your gain")
    (dot,) = ax_c.plot([0], [1], "o", color=COLORS["none"], ms=6, clip_on=False, in_layout=False)
    ax_c.set_yscale("log")
    ax_c.set_xlim(0, MAX_DEPTH)
    ax_c.set_ylim(*MAG_LIM)
    ax_c.legend(loc="lower left")
    label(ax_c, "depth L (layers)", "|h_L| / |h_0| (dimensionless, log)",
          "Gains compound (grey: 0.1x to 10x)")
    # the whole gain x depth plane: log10 of the magnitude factor
    gains = np.linspace(*GAIN_RANGE, 161)
    logmag = depths[None, :] * np.log10(gains)[:, None]
    img = ax_m.imshow(logmag, origin="lower", aspect="auto", cmap="PuOr_r", vmin=-6, vmax=6,
                      extent=(0, MAX_DEPTH, GAIN_RANGE[0], GAIN_RANGE[1]))
    cs = ax_m.contour(depths, gains, logmag, levels=[-3, -1, 1, 3], colors="k", linewidths=0.7)
    ax_m.clabel(cs, fmt={-3: "1/1000x", -1: "1/10x", 1: "10x", 3: "1000x"}, fontsize=7)
    cbar = fig.colorbar(img, ax=ax_m, ticks=[-6, -3, 0, 3, 6])
    cbar.set_label("log10(|h_L| / |h_0|) (dimensionless)")
    (mark,) = ax_m.plot([24], [1.1], "o", mfc="none", mec="k", mew=2, ms=9, clip_on=False)
    label(ax_m, "depth L (layers)", "per-layer gain g (dimensionless)", "log10 of the factor, gain x depth")
    return {"line": line, "dot": dot, "mark": mark, "animated": [line, dot, mark]}


def _gain_update(art, gain, depth):
    curve = _growth_cached(round(float(gain), 6))
    art["line"].set_ydata(np.clip(curve, *MAG_LIM))
    art["dot"].set_data([depth], [np.clip(curve[depth], *MAG_LIM)])
    art["mark"].set_data([depth], [gain])
    out = {"|h_L| / |h_0|": f"{curve[depth]:.4g} at L = {depth}  (gain**depth = {float(gain) ** depth:.4g})"}
    if gain > 1:
        out["layers per factor 10"] = f"{np.log(10) / np.log(gain):.1f} (growing)"
    elif gain < 1:
        out["layers per factor 10"] = f"{np.log(0.1) / np.log(gain):.1f} (shrinking)"
    else:
        out["layers per factor 10"] = "never: a gain of exactly 1 keeps the magnitude"
    return out


# ---------------------------------------------------------------------------------------------
# 2. BatchNorm vs LayerNorm on a (batch, position, feature) tensor
# ---------------------------------------------------------------------------------------------
SEED = 23
N_DRAWS = 40          # how many different batches the tracked example is put into
MAX_BATCH = 64
POS_MEAN = np.array([4.0, -1.0, 0.0, 1.5, -2.5, 0.5])   # each position has its own statistics
POS_STD = np.array([0.5, 1.0, 2.0, 1.0, 3.0, 1.5])
T, D = POS_MEAN.size, 8
TRACK_POS = 2          # the token whose LayerNorm averaging strip is drawn
OUT_LIM = (-3.0, 3.0)


def activations(seed: int = SEED) -> np.ndarray:
    """(N_DRAWS, MAX_BATCH, T, D) float64 activations: batch k, example b, position t, feature d.

    Position t has mean POS_MEAN[t] and std POS_STD[t]. Example 0 is the same "tracked" example in
    every batch; the other examples differ from batch to batch.
    """
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((N_DRAWS, MAX_BATCH, T, D))
    z[:, 0] = z[0, 0]
    return POS_MEAN[None, None, :, None] + POS_STD[None, None, :, None] * z


X = activations()


def batch_norm_sequences(x: np.ndarray) -> np.ndarray:
    """BatchNorm of x (..., B, T, D) per feature, pooling every example and position of one batch."""
    *lead, b, t, d = x.shape
    flat = np.moveaxis(x.reshape(*lead, b * t, d), -2, 0)     # (B*T, ..., D)
    return np.moveaxis(batch_norm(flat), 0, -2).reshape(x.shape)


@lru_cache(maxsize=MAX_BATCH + 1)
def tracked_outputs(batch: int) -> tuple[np.ndarray, np.ndarray]:
    """Feature 0 of the tracked example after BatchNorm and after LayerNorm: each (N_DRAWS, T)."""
    x = X[:, :batch]
    bn = batch_norm_sequences(x)[:, 0, :, 0]
    ln = layer_norm(x)[:, 0, :, 0]
    return bn, ln


@lru_cache(maxsize=1)
def spread_curve() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Batch sizes 1..MAX_BATCH and the std over the N_DRAWS batches of the tracked value (mean over positions)."""
    sizes = np.arange(1, MAX_BATCH + 1)
    bn = np.array([tracked_outputs(int(b))[0].std(axis=0).mean() for b in sizes])
    ln = np.array([tracked_outputs(int(b))[1].std(axis=0).mean() for b in sizes])
    return sizes, bn, ln


def _bn_setup(fig):
    gs = fig.add_gridspec(2, 2, height_ratios=[1.0, 1.15])
    ax_t = fig.add_subplot(gs[0, :])
    ax_o = fig.add_subplot(gs[1, 0])
    ax_s = fig.add_subplot(gs[1, 1])
    # the tensor of batch 0: columns = examples, rows = (position, feature). All MAX_BATCH examples are drawn
    # once, with the still parts of the figure; a cover in the axes' own colour hides the examples beyond the
    # batch size (scaling the picture up again for every frame took more than half of a frame's time)
    ax_t.imshow(X[0].reshape(MAX_BATCH, T * D).T, cmap="Greys", vmin=-6, vmax=6, aspect="auto", origin="upper",
                extent=(-0.5, MAX_BATCH - 0.5, T * D - 0.5, -0.5), interpolation="nearest")
    cover = ax_t.add_patch(Rectangle((MAX_BATCH - 0.5, -0.5), 0, T * D, facecolor=ax_t.get_facecolor(),
                                     edgecolor="none", antialiased=False, zorder=1.5))
    ax_t.set_yticks([t * D + (D - 1) / 2 for t in range(T)], [f"position {t}" for t in range(T)])
    separators = [ax_t.axhline(t * D - 0.5, color="0.4", lw=0.6) for t in range(1, T)]
    ax_t.set_xlim(-0.5, MAX_BATCH - 0.5)
    ax_t.grid(False)
    bn_boxes = [ax_t.add_patch(Rectangle((-0.5, t * D - 0.5), 1, 1, fill=False, ec=COLORS["batch_norm"], lw=1.8))
                for t in range(T)]
    ln_box = ax_t.add_patch(Rectangle((-0.5, TRACK_POS * D - 0.5), 1, D, fill=False, ec=COLORS["layer_norm"],
                                      lw=2.2))
    ax_t.legend(handles=[Patch(fill=False, ec=COLORS["batch_norm"], lw=1.8,
                               label="one BatchNorm mean: feature 0 of every example and position"),
                         Patch(fill=False, ec=COLORS["layer_norm"], lw=2.2,
                               label=f"one LayerNorm mean: all {D} features of one token")],
                loc="lower right", bbox_to_anchor=(1.0, 1.0), fontsize=7, frameon=False)
    label(ax_t, "example b in the batch (column 0 is the tracked example)", "", "One batch (grey = value)")
    # the tracked example's normalized feature 0, in each of the N_DRAWS batches
    jitter = (np.random.default_rng(0).random(N_DRAWS) - 0.5) * 0.35
    xs = np.arange(T)[None, :] + jitter[:, None] - 0.12
    (bn_dots,) = ax_o.plot(xs.ravel(), np.zeros(xs.size), ".", color=COLORS["batch_norm"], ms=4,
                           label=f"BatchNorm, {N_DRAWS} batches")
    (ln_dots,) = ax_o.plot(np.tile(np.arange(T) + 0.2, N_DRAWS), np.zeros(T * N_DRAWS), "D",
                           color=COLORS["layer_norm"], ms=5, label=f"LayerNorm, {N_DRAWS} batches")
    ax_o.set_xlim(-0.6, T - 0.4)
    ax_o.set_ylim(*OUT_LIM)
    ax_o.set_xticks(range(T))
    ax_o.axhline(0, color="0.6", lw=0.8)
    ax_o.legend(loc="lower left", fontsize=7)
    label(ax_o, "position t of the tracked example", "normalized feature 0 (dimensionless)",
          "One token in 40 batches: only BN moves")
    # spread of that value across batches against batch size
    sizes, bn, ln = spread_curve()
    ax_s.plot(sizes, bn, color=COLORS["batch_norm"], label="BatchNorm")
    ax_s.plot(sizes, ln, color=COLORS["layer_norm"], label="LayerNorm (exactly 0)")
    (mark,) = ax_s.plot([1], [bn[0]], "o", color=COLORS["batch_norm"], ms=7, clip_on=False, in_layout=False)
    ax_s.set_xscale("log", base=2)
    ax_s.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax_s.set_xlim(1, MAX_BATCH)
    ax_s.set_ylim(-0.01, float(bn.max()) * 1.25)
    ax_s.legend(loc="upper right", fontsize=7)
    label(ax_s, "batch size B (examples, log scale)", "std across batches (dimensionless)",
          "BN noise shrinks slowly with B")
    return {"cover": cover, "bn_boxes": bn_boxes, "ln_box": ln_box, "bn_dots": bn_dots, "ln_dots": ln_dots,
            "mark": mark, "animated": [cover, *separators, *(sp for sp in ax_t.spines.values() if sp.get_visible()),
                                       *bn_boxes, ln_box, bn_dots, ln_dots, mark]}


def _bn_update(art, batch):
    art["cover"].set_x(batch - 0.5)
    art["cover"].set_width(MAX_BATCH - batch)
    for box in art["bn_boxes"]:
        box.set_width(batch)
    bn, ln = tracked_outputs(batch)
    art["bn_dots"].set_ydata(np.clip(bn, *OUT_LIM).ravel())
    art["ln_dots"].set_ydata(np.clip(ln, *OUT_LIM).ravel())
    sizes, bn_spread, _ = spread_curve()
    art["mark"].set_data([batch], [bn_spread[batch - 1]])
    means = mean_var(X[:, :batch].reshape(N_DRAWS, batch * T, D)[..., 0], axis=-1)[0]
    pooled = float(np.mean(POS_MEAN))
    out = {
        "BatchNorm": (f"tracked value at position {TRACK_POS} ranges {bn[:, TRACK_POS].min():+.3f} to "
                      f"{bn[:, TRACK_POS].max():+.3f} over the {N_DRAWS} batches"),
        "LayerNorm": (f"tracked value at position {TRACK_POS} is {ln[0, TRACK_POS]:+.3f} in every batch "
                      f"(largest difference {np.ptp(ln, axis=0).max():.1e})"),
        "BN batch mean of feature 0": (f"{means.min():+.3f} to {means.max():+.3f} across batches; the positions' "
                                       f"average mean is {pooled:+.3f}, no single position's"),
    }
    examples = "1 example" if batch == 1 else f"{batch} examples"
    pooled_values = f"each BatchNorm statistic pools {batch * T} values ({examples} x {T} positions)"
    if batch == 1:
        pooled_values += (": with one example that is its own positions, so BatchNorm normalizes against the "
                          "spread between positions, which is structure, not noise")
    out["BatchNorm pools"] = pooled_values
    return out


GAIN_STOPS = [0.8, 0.85, 0.9, 0.95, 0.977, 0.99, 1.0, 1.01, 1.024, 1.05, 1.1, 1.15, 1.2]
DEPTH_STOPS = list(range(0, MAX_DEPTH + 1, 12))
BATCH_STOPS = [1, 2, 4, 8, 16, 32, 64]

GAIN_PRESETS = {
    "depth 96": Preset({"depth": 96}, (
        "at gain 1.1 the curve passes 10 near layer 24 and keeps climbing in a straight line: after 96 layers "
        "the factor is 1.1^96 = 9412")),
    "gain 0.9": Preset({"gain": 0.9}, (
        "a gain just under 1 shrinks the stream as surely: 0.07977 of its size after 24 layers, a tenth after "
        "21.9 layers")),
    "gain 1": Preset({"gain": 1.0}, "only a gain of exactly 1 keeps the curve flat at every depth"),
    "gain 1.024, depth 96": Preset({"gain": 1.024, "depth": 96}, (
        "the edge of the band that stays within a factor ten over 96 layers: 9.745 (ln 10 / 96 = 0.024); "
        "on the right the band narrows like a funnel as depth grows")),
    "gain 0.977, depth 96": Preset({"gain": 0.977, "depth": 96}, (
        "the lower edge of that band: 0.1071, just above a tenth")),
    "gain 1.05, depth 96": Preset({"gain": 1.05, "depth": 96}, (
        "five percent per layer is already a factor 108.2 at depth 96")),
    "gain 1.01, depth 96": Preset({"gain": 1.01, "depth": 96}, (
        "even a one-percent gain is worth a factor 2.599 over 96 layers")),
}

BATCH_PRESETS = {
    "batch 8": Preset({"batch": 8}, (
        "bottom left: each light blue cloud is one token normalized in 40 different batches; the LayerNorm "
        "diamonds are single points because all 40 copies agree")),
    "batch 64": Preset({"batch": 64}, (
        "the boxes span the whole batch and the clouds tighten without collapsing: eight times the batch only "
        "takes the spread from 0.131 to 0.049")),
    "batch 1": Preset({"batch": 1}, (
        "one sequence alone still gets a BatchNorm output because its 6 positions are pooled, but that output "
        "is measured against the differences between positions")),
    "batch 32": Preset({"batch": 32}, (
        "compare the clouds' centres with zero: at positions 0 and 4 they sit near +1.5 and -1.6 at every "
        "batch size, because BatchNorm subtracts an average over positions, not the position's own mean")),
}


def entries() -> list:
    """The catalog entries of section 23.2."""
    return [
        Explorable(
            "gain_depth",
            {
                "gain": Slider(GAIN_RANGE[0], GAIN_RANGE[1], 1.1, label="per-layer gain g", stops=GAIN_STOPS),
                "depth": Slider(0, MAX_DEPTH, 24, label="depth L (layers)", stops=DEPTH_STOPS),
            },
            _gain_setup,
            _gain_update,
            title="A running sum multiplied by g at every layer",
            alt=lambda gain, depth: (
                f"Left, log scale: the magnitude factor g**L against depth for g={gain:g}, with dashed and dotted "
                f"reference curves for 1.1 and 0.9; a dot at depth {depth}. Right: a colour map of log10 of the "
                "factor over gain 0.8 to 1.2 and depth 0 to 96 with contours at 1/1000, 1/10, 10 and 1000 times, "
                f"and a ring at gain {gain:g}, depth {depth}."),
            height=3.4,
            presets=GAIN_PRESETS,
        ),
        Explorable(
            "batch_vs_layer_norm",
            {"batch": Slider(1, MAX_BATCH, 8, scale="log", label="batch size B (examples)", stops=BATCH_STOPS)},
            _bn_setup,
            _bn_update,
            title="BatchNorm averages across the batch, LayerNorm across one token's features",
            alt=lambda batch: (
                f"Top: a grey-level picture of a batch of {batch} examples with {T} positions of {D} features; "
                "light blue boxes mark the values one BatchNorm statistic pools, a dark blue box the values one "
                "LayerNorm statistic uses. Bottom left: feature 0 of the same example after each normalization in "
                f"{N_DRAWS} different batches, per position. Bottom right: how much the BatchNorm value varies "
                "between batches against batch size; the LayerNorm value never varies."),
            height=4.6,
            presets=BATCH_PRESETS,
        ),
    ]
