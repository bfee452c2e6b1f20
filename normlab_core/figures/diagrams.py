"""Diagrams drawn by code: the wiring of post-norm and pre-norm residual layers (figure 23-5)."""

from __future__ import annotations

from matplotlib.patches import Circle, FancyArrowPatch, FancyBboxPatch

from .style import COLORS, NARROW_IN, new_figure

TRUNK_X = 2.2        # x of the residual stream (the trunk) in each panel
BRANCH_X = 5.6       # x of the sublayer branch
BOX_W, BOX_H = 2.5, 0.75
LAYER_H = 4.2        # height of one residual layer in data units
BOTTOM = 1.0         # y where the first layer starts
ADD_R = 0.28         # radius of the addition circle
X_SPAN = 8.6         # width of a panel in data units
LINE = COLORS["input"]


def _box(ax, x, y, text, kind):
    """A labelled block centred at (x, y); kind 'norm' or 'sublayer' picks its colours."""
    if kind == "norm":
        face, edge, weight = "#FBE3D3", COLORS["rms_norm"], "bold"
    else:
        face, edge, weight = "#EDEDED", LINE, "normal"
    ax.add_patch(FancyBboxPatch((x - BOX_W / 2, y - BOX_H / 2), BOX_W, BOX_H,
                                boxstyle="round,pad=0.02,rounding_size=0.15", fc=face, ec=edge, lw=1.4, zorder=3))
    ax.text(x, y, text, ha="center", va="center", fontsize=8.5, weight=weight, color="#222222", zorder=4)


def _add(ax, x, y):
    """The residual addition: a circle with a plus."""
    ax.add_patch(Circle((x, y), ADD_R, fc="white", ec=LINE, lw=1.4, zorder=3))
    ax.text(x, y - 0.02, "+", ha="center", va="center", fontsize=12, color="#222222", zorder=4)


def _arrow(ax, points, color=LINE, lw=1.2, head=True):
    """A polyline through `points` whose last segment ends in an arrow head."""
    for (x0, y0), (x1, y1) in zip(points[:-2], points[1:-1], strict=True):
        ax.plot([x0, x1], [y0, y1], color=color, lw=lw, zorder=2, solid_capstyle="butt")
    style = "-|>,head_length=4,head_width=2.5" if head else "-"
    ax.add_patch(FancyArrowPatch(points[-2], points[-1], arrowstyle=style, color=color, lw=lw,
                                 shrinkA=0, shrinkB=0, zorder=2, mutation_scale=1.6))


def _layer(ax, y0, placement):
    """One residual layer from y0 to y0 + LAYER_H; returns the y where its output leaves the trunk."""
    split = y0 + 0.35
    add_y = y0 + (2.75 if placement == "pre" else 2.15)
    ax.plot([TRUNK_X, TRUNK_X], [y0, split], color=LINE, lw=1.2, zorder=2, solid_capstyle="butt")   # the stream in
    ax.plot([TRUNK_X], [split], "o", ms=3.5, color=LINE, zorder=3)
    if placement == "pre":
        norm_y, sub_y = y0 + 1.05, y0 + 2.05
        _arrow(ax, [(TRUNK_X, split), (BRANCH_X, split), (BRANCH_X, norm_y - BOX_H / 2)])
        _box(ax, BRANCH_X, norm_y, "RMSNorm", "norm")
        _arrow(ax, [(BRANCH_X, norm_y + BOX_H / 2), (BRANCH_X, sub_y - BOX_H / 2)])
        _box(ax, BRANCH_X, sub_y, "Sublayer F", "sublayer")
        _arrow(ax, [(BRANCH_X, sub_y + BOX_H / 2), (BRANCH_X, add_y), (TRUNK_X + ADD_R, add_y)])
        _arrow(ax, [(TRUNK_X, split), (TRUNK_X, add_y - ADD_R)])
        _add(ax, TRUNK_X, add_y)
        _arrow(ax, [(TRUNK_X, add_y + ADD_R), (TRUNK_X, y0 + LAYER_H)], head=False)
    else:
        sub_y, norm_y = y0 + 1.25, y0 + 3.15
        _arrow(ax, [(TRUNK_X, split), (BRANCH_X, split), (BRANCH_X, sub_y - BOX_H / 2)])
        _box(ax, BRANCH_X, sub_y, "Sublayer F", "sublayer")
        _arrow(ax, [(BRANCH_X, sub_y + BOX_H / 2), (BRANCH_X, add_y), (TRUNK_X + ADD_R, add_y)])
        _arrow(ax, [(TRUNK_X, split), (TRUNK_X, add_y - ADD_R)])
        _add(ax, TRUNK_X, add_y)
        _arrow(ax, [(TRUNK_X, add_y + ADD_R), (TRUNK_X, norm_y - BOX_H / 2)])
        _box(ax, TRUNK_X, norm_y, "RMSNorm", "norm")
        _arrow(ax, [(TRUNK_X, norm_y + BOX_H / 2), (TRUNK_X, y0 + LAYER_H)], head=False)
    return y0 + LAYER_H


def _panel(ax, placement, layers):
    """One wiring diagram: `layers` residual layers stacked from x (bottom) to out (top)."""
    top = BOTTOM + layers * LAYER_H
    color = COLORS[placement]
    # The route along the trunk: plain in pre-norm, interrupted by a norm in every post-norm layer.
    if placement == "pre":
        ax.add_patch(FancyBboxPatch((TRUNK_X - 0.32, BOTTOM - 0.55), 0.64, top - BOTTOM + 1.1,
                                    boxstyle="round,pad=0,rounding_size=0.3", fc=COLORS["highlight"],
                                    ec="none", alpha=0.75, zorder=1))
    y = BOTTOM
    ax.text(TRUNK_X, BOTTOM - 0.9, "x", ha="center", va="center", fontsize=11, style="italic")
    _arrow(ax, [(TRUNK_X, BOTTOM - 0.65), (TRUNK_X, BOTTOM + 0.35)], head=False)
    for i in range(layers):
        y = _layer(ax, y, placement)
        if i < layers - 1:
            ax.text(0.25, y - 0.05, f"layer {i + 2}", ha="left", va="center", fontsize=7.5, color="0.45")
            ax.plot([0.2, 8.3], [y - 0.35, y - 0.35], color="0.8", lw=0.8, ls=(0, (3, 3)), zorder=0)
    ax.text(0.25, BOTTOM - 0.05 + 0.05, "layer 1", ha="left", va="center", fontsize=7.5, color="0.45")
    _arrow(ax, [(TRUNK_X, top), (TRUNK_X, top + 0.45)])
    ax.text(TRUNK_X, top + 0.8, "out", ha="center", va="center", fontsize=11, style="italic")
    if placement == "pre":
        formula = "h  ←  h + F(Norm(h))"
        note = ("highlighted: a route from x to out\nthrough additions only,\n"
                "so d out/dx contains the identity")
    else:
        formula = "h  ←  Norm(h + F(h))"
        note = ("every route from x to out\npasses through a norm\nin every layer")
    ax.text(4.3, top + 1.75, formula, ha="center", va="center", fontsize=9.5, color=color, weight="bold")
    ax.text(BRANCH_X + 0.2, top + 0.15, note, ha="center", va="center", fontsize=7.5, color="#333333")
    ax.set_xlim(0, X_SPAN)
    ax.set_ylim(BOTTOM - 1.3, top + 2.2)
    ax.set_aspect("equal")
    ax.axis("off")


def pre_post_wiring(layers: int = 2, narrow: bool = False):
    """Figure 23-5: post-norm (left) and pre-norm (right) wiring of `layers` residual layers each; narrow=True
    stacks them, post-norm on top."""
    if narrow:   # each panel as wide as the figure, its height from the panel's aspect, plus its title
        panel = NARROW_IN * (layers * LAYER_H + 3.5) / X_SPAN + 0.3
        fig, (ax_post, ax_pre) = new_figure(1, 2, width=NARROW_IN, height=2 * panel)
    else:
        fig, (ax_post, ax_pre) = new_figure(2, width=7.2, height=2.2 + 1.35 * layers)
    _panel(ax_post, "post", layers)
    _panel(ax_pre, "pre", layers)
    for ax, placement, title in ((ax_post, "post", "Post-norm (original transformer, 2017)"),
                                 (ax_pre, "pre", "Pre-norm (GPT-2, LLaMA, DeepSeek-V3)")):
        ax.set_title(title, fontsize=9, loc="left", color=COLORS[placement], weight="bold")
    return fig
