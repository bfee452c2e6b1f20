"""Section 23.2: drift of a running sum, and BatchNorm's batch statistics against LayerNorm's."""

from __future__ import annotations

import matplotlib as mpl
import numpy as np
from matplotlib.patches import Patch, Polygon, Rectangle
from matplotlib.ticker import FuncFormatter

from ..examples import BATCHES, FEATURES, MAX_BATCH, N_DRAWS, POS_MEAN
from ..formatting import number
from ..interactive import Explorable, Preset, Slider
from ..norms import tracked_outputs
from ..residual import growth
from ..stats import mean_var
from .style import COLORS, NARROW_IN, WIDTH_IN, label, new_figure, panels

# -- 1. per-layer gain x depth ----------------------------------------------------------------------------------
MAX_DEPTH = 96
GAIN_RANGE = (0.8, 1.2)
MAG_LIM = (1e-10, 1e8)
GUIDES = ((1.1, "--"), (0.9, ":"))   # the fixed grey curves: gain and line style
CONTOURS = {-3: "1/1000×", -1: "1/10×", 1: "10×", 3: "1000×"}   # log10 of the factor: label


def gain_setup(fig, *, narrow):
    ax_c, ax_m = panels(fig, narrow)
    depths = np.arange(MAX_DEPTH + 1)
    ax_c.axhspan(0.1, 10, color="0.92", zorder=0)
    for g, ls in GUIDES:
        ax_c.plot(depths, g ** depths, ls, color="0.55", lw=1, label=f"gain {g}")
    ax_c.axhline(1, color="0.6", lw=0.8)
    (line,) = ax_c.plot(depths, depths * 0 + 1.0, color=COLORS["none"], label="gain g")
    (dot,) = ax_c.plot([0], [1], "o", color=COLORS["none"], ms=6, clip_on=False)
    ax_c.set_yscale("log")
    ax_c.set_xlim(0, MAX_DEPTH)
    ax_c.set_ylim(*MAG_LIM)
    ax_c.legend(loc="lower left")
    label(ax_c, "depth L (layers)", r"$\|h_L\| \,/\, \|h_0\|$ (log scale)",
          r"Gains compound (grey: 0.1$\times$ to 10$\times$)")
    gains = np.linspace(*GAIN_RANGE, 161)
    logmag = depths[None, :] * np.log10(gains)[:, None]
    img = ax_m.imshow(logmag, origin="lower", aspect="auto", cmap="PuOr_r", vmin=-6, vmax=6,
                      extent=(0, MAX_DEPTH, *GAIN_RANGE))
    cs = ax_m.contour(depths, gains, logmag, levels=list(CONTOURS), colors="k", linewidths=0.7)
    ax_m.clabel(cs, fmt=CONTOURS, fontsize=8)
    cbar = fig.colorbar(img, ax=ax_m, ticks=[-6, -3, 0, 3, 6])
    cbar.set_label(r"$\log_{10}(\|h_L\| / \|h_0\|)$")
    (mark,) = ax_m.plot([24], [1.1], "o", mfc="none", mec="k", mew=2, ms=9, clip_on=False)
    label(ax_m, "depth L (layers)", "per-layer gain g", r"$\log_{10}$ of the factor, gain $\times$ depth")
    return {"line": line, "dot": dot, "mark": mark}


def gain_update(art, *, gain, depth):
    curve = growth(gain, MAX_DEPTH)
    art["line"].set_ydata(np.clip(curve, *MAG_LIM))
    art["dot"].set_data([depth], [np.clip(curve[depth], *MAG_LIM)])
    art["mark"].set_data([depth], [gain])
    out = {"|h_L| / |h_0|": f"{number(curve[depth])} at L = {depth} (g^L = {number(gain ** depth)})"}
    if gain != 1:
        out["layers per factor 10"] = (f"{abs(np.log(10) / np.log(gain)):.1f} "
                                       f"({'growing' if gain > 1 else 'shrinking'})")
    else:
        out["layers per factor 10"] = "never: a gain of exactly 1 keeps the magnitude"
    (g1, _), (g2, _) = GUIDES
    times = [t.replace("×", "") for t in CONTOURS.values()]
    alt = (f"Left, log scale: the magnitude factor g^L against depth for g = {number(gain)}, beside dashed and "
           f"dotted curves for {number(g1)} and {number(g2)}; at depth {depth} it is {number(curve[depth], 3)}. "
           f"Right: a colour map of log10 of the factor over gain {number(GAIN_RANGE[0])} to "
           f"{number(GAIN_RANGE[1])} and depth 0 to {MAX_DEPTH}, with contours at {', '.join(times[:-1])} and "
           f"{times[-1]} times and a ring at gain {number(gain)}, depth {depth}.")
    return out, alt


# -- 2. BatchNorm against LayerNorm on a (batch, position, feature) tensor ----------------------------------------
T = POS_MEAN.size
TRACK_POS = 2          # the token whose LayerNorm averaging strip is drawn
OUT_LIM = (-3.0, 3.0)


def batch_setup(fig, *, narrow):
    gs = fig.add_gridspec(3, 1, height_ratios=[1.0, 1.1, 1.1]) if narrow else \
        fig.add_gridspec(2, 2, height_ratios=[1.0, 1.15])
    ax_t = fig.add_subplot(gs[0] if narrow else gs[0, :])
    ax_o, ax_s = (fig.add_subplot(gs[1]), fig.add_subplot(gs[2])) if narrow else \
        (fig.add_subplot(gs[1, 0]), fig.add_subplot(gs[1, 1]))
    # the tensor of batch 0: columns = examples, rows = (position, feature); only the batch's examples are drawn
    picture = ax_t.imshow(BATCHES[0].reshape(MAX_BATCH, T * FEATURES).T, cmap="Greys", vmin=-6, vmax=6,
                          aspect="auto", origin="upper", interpolation="nearest",
                          extent=(-0.5, MAX_BATCH - 0.5, T * FEATURES - 0.5, -0.5))
    ax_t.set_yticks([t * FEATURES + (FEATURES - 1) / 2 for t in range(T)],
                    [f"t = {t}" if narrow else f"position {t}" for t in range(T)])
    for t in range(1, T):
        ax_t.axhline(t * FEATURES - 0.5, color="0.4", lw=0.6)
    ax_t.set_ylim(T * FEATURES - 0.5, -0.5)
    ax_t.grid(False)
    bn_boxes = [ax_t.add_patch(Rectangle((-0.5, t * FEATURES - 0.5), MAX_BATCH, 1, fill=False, ec=COLORS["batch_norm"],
                                         lw=1.8, clip_on=False)) for t in range(T)]
    ln_box = ax_t.add_patch(Rectangle((-0.5, TRACK_POS * FEATURES - 0.5), 1, FEATURES, fill=False,
                                      ec=COLORS["layer_norm"], lw=2.2, clip_on=False))
    ax_t.legend(handles=[Patch(fill=False, ec=COLORS["batch_norm"], lw=1.8,
                               label="BatchNorm mean: feature 0, whole batch"),
                         Patch(fill=False, ec=COLORS["layer_norm"], lw=2.2,
                               label=f"LayerNorm mean: {FEATURES} features, one token")],
                loc="upper left", bbox_to_anchor=(0.0, -0.02), fontsize=8, frameon=False, ncols=1 if narrow else 2,
                handlelength=1.2, columnspacing=1.0)
    ax_t.set_xticks([])   # the grid fills the panel at every batch size; the title gives the number of columns
    # (the panel's limits stay: the batch's columns are stretched over it, so a new batch size changes data only, and
    # the title is a text drawn with the data, not the axes' title, which would be drawn with the background)
    ax_t.set_xlim(-0.5, MAX_BATCH - 0.5)
    title = ax_t.text(0.0, 1.0, "", transform=ax_t.transAxes, ha="left", va="baseline",
                      fontsize=mpl.rcParams["axes.titlesize"], fontweight=mpl.rcParams["axes.titleweight"])
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
    ax_o.legend(loc="lower left", fontsize=8)
    label(ax_o, "position t of the tracked example", "normalized feature 0", f"One token in {N_DRAWS} batches")
    sizes = np.arange(1, MAX_BATCH + 1)
    spread = np.array([tracked_outputs(int(b))[0].std(axis=0).mean() for b in sizes])
    ax_s.plot(sizes, spread, color=COLORS["batch_norm"], label="BatchNorm")
    ax_s.plot(sizes, sizes * 0.0, color=COLORS["layer_norm"], label="LayerNorm (exactly 0)")
    (mark,) = ax_s.plot([1], [spread[0]], "o", color=COLORS["batch_norm"], ms=7, clip_on=False)
    ax_s.set_xscale("log", base=2)
    ax_s.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax_s.set_xlim(1, MAX_BATCH)
    ax_s.set_ylim(-0.01, float(spread.max()) * 1.25)
    ax_s.legend(loc="upper right", fontsize=8)
    label(ax_s, "batch size B (examples, log scale)", "std across batches", "BatchNorm's noise shrinks slowly")
    return {"picture": picture, "bn_boxes": bn_boxes, "ln_box": ln_box, "bn_dots": bn_dots, "ln_dots": ln_dots,
            "mark": mark, "spread": spread, "title": title, "narrow": narrow}


def batch_title(batch: int, narrow: bool) -> str:
    """The batch grid's title: how many examples (columns) it shows."""
    examples = "1 example" if batch == 1 else f"{batch} examples"
    if narrow:
        return f"One batch: {examples} (grey = value)"
    return f"One batch of {examples} (grey = value; column 0: the tracked example)"


def batch_update(art, *, batch):
    art["picture"].set_data(BATCHES[0, :batch].reshape(batch, T * FEATURES).T)   # (its extent: the whole panel)
    art["title"].set_text(batch_title(batch, art["narrow"]))
    ax = art["title"].axes   # where the axes' own title would sit: its pad (points) above the panel
    height = ax.get_position().height * ax.figure.get_figheight()   # inches
    art["title"].set_y(1.0 + mpl.rcParams["axes.titlepad"] / 72 / height)
    art["ln_box"].set_width(MAX_BATCH / batch)    # one column (the BatchNorm boxes span the whole batch: all columns)
    bn, ln = tracked_outputs(batch)
    art["bn_dots"].set_ydata(np.clip(bn, *OUT_LIM).ravel())
    art["ln_dots"].set_ydata(np.clip(ln, *OUT_LIM).ravel())
    art["mark"].set_data([batch], [art["spread"][batch - 1]])
    means = mean_var(BATCHES[:, :batch].reshape(N_DRAWS, batch * T, FEATURES)[..., 0], axis=-1)[0]
    lo, hi = bn[:, TRACK_POS].min(), bn[:, TRACK_POS].max()
    examples = "1 example" if batch == 1 else f"{batch} examples"
    pools = f"each BatchNorm statistic pools {batch * T} values ({examples} × {T} positions)"
    if batch == 1:
        pools += (": with one example that is its own positions, so BatchNorm normalizes against the spread "
                  "between positions, which is structure, not noise")
    out = {
        "BatchNorm": f"tracked value at position {TRACK_POS} ranges {lo:+.3f} to {hi:+.3f} over the {N_DRAWS} batches",
        "LayerNorm": (f"tracked value at position {TRACK_POS} is {ln[0, TRACK_POS]:+.3f} in every batch "
                      f"(largest difference {number(np.ptp(ln, axis=0).max(), 2)})"),
        "BatchNorm batch mean of feature 0": (f"{means.min():+.3f} to {means.max():+.3f} across batches; the "
                                              f"positions' average mean is {np.mean(POS_MEAN):+.3f}"),
        "BatchNorm pools": pools,
    }
    alt = (f"Top: a grey-level picture of a batch of {batch} examples with {T} positions of {FEATURES} features, "
           "with the values one BatchNorm statistic pools and the values one LayerNorm statistic uses boxed. "
           f"Bottom: the tracked example's feature 0 after each normalization in {N_DRAWS} batches: after "
           f"BatchNorm it ranges {lo:+.2f} to {hi:+.2f} at position {TRACK_POS}, after LayerNorm it is the same "
           f"in every batch; and the BatchNorm spread against batch size, {number(art['spread'][batch - 1], 3)} "
           f"at B = {batch}.")
    return out, alt


# -- 3. the (batch, position, feature) block, with what one statistic of each norm averages -------------------------
BLOCK_SHAPE = (4, T, FEATURES)   # examples, positions and features drawn (the block stands for any B, T, D)
BLOCK_NORMS = {
    "batch_norm": ("BatchNorm", "one feature of every example and position:\n"
                                "a mean per feature, from B\u00b7T numbers"),
    "layer_norm": ("LayerNorm", "every feature of one token:\na mean per token, from D numbers"),
}
_DEPTH = (0.62 * np.cos(np.radians(35)), 0.62 * np.sin(np.radians(35)))   # the drawn offset of one example back


def averaged_cells(norm: str, shape=BLOCK_SHAPE, token=(0, TRACK_POS), feature: int = 0) -> np.ndarray:
    """(B, T, D) bool: the entries one statistic of `norm` averages; BatchNorm: `feature` of every example and
    position; LayerNorm (and RMSNorm): every feature of `token` (example, position)."""
    if norm not in BLOCK_NORMS and norm != "rms_norm":
        raise ValueError(f"norm must be one of {sorted([*BLOCK_NORMS, 'rms_norm'])}, got {norm!r}")
    mask = np.zeros(shape, dtype=bool)
    if norm == "batch_norm":
        mask[:, :, feature] = True
    else:
        mask[token[0], token[1], :] = True
    return mask


def _at(t, y, b):
    """Where the block's point (position t, height y, example b) is drawn: examples recede up and to the right."""
    return t + b * _DEPTH[0], y + b * _DEPTH[1]


def _cell(ax, corners, shaded, color, grey, alpha):
    ax.add_patch(Polygon([_at(*c) for c in corners], closed=True, fc=color if shaded else grey,
                         alpha=alpha if shaded else 1.0, ec="0.45", lw=0.5))


def _block(ax, mask, color):
    """The block of `mask`'s shape as seen from the front, top and right, the entries of `mask` in `color`.
    Feature 0 is the top row, example 0 the front face."""
    n_b, n_t, n_d = mask.shape
    for t in range(n_t):                       # the front face: example 0
        for r in range(n_d):
            _cell(ax, [(t, r, 0), (t + 1, r, 0), (t + 1, r + 1, 0), (t, r + 1, 0)], mask[0, t, n_d - 1 - r],
                  color, "#F4F4F4", 1.0)
    for t in range(n_t):                       # the top face: feature 0 of every example
        for b in range(n_b):
            _cell(ax, [(t, n_d, b), (t + 1, n_d, b), (t + 1, n_d, b + 1), (t, n_d, b + 1)], mask[b, t, 0],
                  color, "#E4E4E4", 0.75)
    for b in range(n_b):                       # the right face: the last position of every example
        for r in range(n_d):
            _cell(ax, [(n_t, r, b), (n_t, r, b + 1), (n_t, r + 1, b + 1), (n_t, r + 1, b)],
                  mask[b, n_t - 1, n_d - 1 - r], color, "#D2D2D2", 0.55)
    arrow = {"arrowstyle": "-|>", "color": "0.3", "lw": 0.9}
    ax.annotate("", xy=(n_t, -0.55), xytext=(0, -0.55), arrowprops=arrow)
    ax.text(n_t / 2, -0.75, "position t", ha="center", va="top", fontsize=8)
    ax.annotate("", xy=(-0.45, 0), xytext=(-0.45, n_d), arrowprops=arrow)
    ax.text(-0.65, n_d / 2, "feature d", ha="right", va="center", rotation=90, fontsize=8)
    x0, y0 = _at(n_t + 0.35, -0.2, 0)
    x1, y1 = _at(n_t + 0.35, -0.2, n_b)
    ax.annotate("", xy=(x1, y1), xytext=(x0, y0), arrowprops=arrow)
    ax.text((x0 + x1) / 2 + 0.25, (y0 + y1) / 2 - 0.15, "example b\nin the batch", ha="left", va="top", fontsize=8)
    right, top = _at(n_t, n_d, n_b)
    ax.set_xlim(-1.6, right + 2.3)
    ax.set_ylim(-1.6, top + 0.3)
    ax.set_aspect("equal")
    ax.axis("off")


def norm_axes_block(narrow: bool = False):
    """The activations of a sequence model as a block of examples x positions x features, twice: the entries one
    BatchNorm statistic averages (one feature of every example and position) and the entries one LayerNorm
    statistic averages (every feature of one token) shaded; narrow=True stacks the two."""
    if narrow:
        fig, axes = new_figure(1, 2, width=NARROW_IN, height=6.4)
    else:
        fig, axes = new_figure(2, width=WIDTH_IN, height=3.1)
    for ax, (norm, (name, what)) in zip(axes, BLOCK_NORMS.items(), strict=True):
        color = COLORS[norm]
        _block(ax, averaged_cells(norm), color)
        ax.set_title(f"{name} averages", loc="left", fontsize=9.5, color=color, weight="bold")
        ax.text(0.0, 0.0, what, transform=ax.transAxes, ha="left", va="top", fontsize=8.5, color="0.15")
    return fig


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
    """The explorables of section 23.2."""
    return [
        Explorable("gain_depth", title="A running sum multiplied by g at every layer", setup=gain_setup,
                   update=gain_update, presets=GAIN_PRESETS, size=(7.2, 3.4), narrow=(NARROW_IN, 5.8),
                   controls={"gain": Slider([0.8, 0.85, 0.9, 0.95, 0.977, 0.99, 1.0, 1.01, 1.024, 1.05, 1.1, 1.15,
                                             1.2], 1.1, label="per-layer gain g", free=GAIN_RANGE),
                             "depth": Slider(list(range(0, MAX_DEPTH + 1, 12)), 24, label="depth L (layers)",
                                             free=(0, MAX_DEPTH))}),
        Explorable("batch_vs_layer_norm", title="BatchNorm averages across the batch, LayerNorm across one token's "
                   "features", setup=batch_setup, update=batch_update, presets=BATCH_PRESETS, size=(7.2, 4.8),
                   narrow=(NARROW_IN, 7.4), controls={"batch": Slider([1, 2, 4, 8, 16, 32, 64], 8,
                                                                label="batch size B (examples)",
                                                                free=(1, MAX_BATCH))}),
    ]
