"""The catalog: every explorable of the book, at every combination of its stops (the states the static book
pre-renders) and every preset, in both layouts.

Each state is drawn once (`drawn`, shared by the tests): no two texts overlap and none leaves the figure (or, placed
in an axes, its axes), no text is smaller than the house minimum, legends list only what is drawn, pictures fill
their panels, the readouts keep their rows and explain any non-finite value, the alt text states the result,
neighbouring stops never look the same, the presets' notices quote what the readouts show, and a learner's own
input draws cleanly too.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from functools import cache

import numpy as np
import pytest
from explorable_support import every_state, pixels, text_problems
from toc_support import toc_notebooks

from normlab_core.figures import catalog, get
from normlab_core.figures.style import SMALLEST
from normlab_core.interactive import Choice, Slider

NAMES = list(catalog())
LAYOUTS = {"wide": False, "narrow": True}
NON_FINITE = re.compile(r"\b(nan|inf)\b", re.IGNORECASE)


def key(exp, values: dict) -> tuple:
    return tuple(exp.controls[k].positions().index(v) for k, v in values.items())


def legend_problems(fig) -> list[str]:
    """Legend entries whose artist is not drawn: hidden, or with no data in view."""
    out = []
    for ax in fig.axes:
        legend = ax.get_legend()
        for text in legend.get_texts() if legend else []:
            named = [a for a in ax.get_children() if getattr(a, "get_label", lambda: None)() == text.get_text()]
            for a in named:
                data = a.get_xydata() if hasattr(a, "get_xydata") else None
                if not a.get_visible() or (data is not None and not np.isfinite(data).all(axis=1).any()):
                    out.append(f"legend entry {text.get_text()!r} names nothing drawn")
    return out


def image_problems(fig, least: float = 0.9) -> list[str]:
    """Pictures (imshow) that fill less than `least` of their panel's width or height: a grid squeezed into a
    corner of an axes sized for its largest state."""
    out = []
    for ax in fig.axes:
        for im in ax.get_images():
            if not im.get_visible():
                continue
            x0, x1, y0, y1 = im.get_extent()
            (v0, v1), (w0, w1) = ax.get_xlim(), ax.get_ylim()
            for what, shown, room in (("width", abs(x1 - x0), abs(v1 - v0)), ("height", abs(y1 - y0), abs(w1 - w0))):
                if ax.get_xscale() == ax.get_yscale() == "linear" and shown < least * room:
                    out.append(f"a picture fills {shown / room:.0%} of its panel's {what}")
    return out


@cache
def drawn(name: str, layout: str) -> dict:
    """{stop indices: (sha of the PNG, readouts, alt, problems)} for every combination of stops and preset."""
    exp = get(name)
    states = every_state(exp) + [exp.preset_values(label) for label in exp.presets]
    out = {}
    for values in states:
        k = key(exp, values)
        if k in out:
            continue
        f = exp.render(narrow=LAYOUTS[layout], **values)
        fig = exp.figure(narrow=LAYOUTS[layout])
        problems = text_problems(fig) + legend_problems(fig) + image_problems(fig)
        problems += [f"text {t.get_text()!r} at {t.get_fontsize():g} pt" for t in fig.findobj(
            lambda a: hasattr(a, "get_fontsize") and hasattr(a, "get_text")) if t.get_visible() and t.get_text()
            and t.get_fontsize() < SMALLEST]
        out[k] = (hashlib.sha1(f.png).hexdigest(), f.readouts, f.alt, problems)
    return out


def state(name: str, values: dict, layout: str = "wide"):
    exp = get(name)
    return drawn(name, layout)[key(exp, {**exp.defaults(), **values})]


# -- the notebooks: each explorable shown once; its presets explained in its caption, not in a list on the page ----
SHOW = re.compile(r'^(show|try_this)\("([a-z0-9_]+)"[,)]')


def test_every_explorable_is_shown_once_and_any_try_this_list_left_follows_it():
    calls = [m.groups() for path in toc_notebooks()
             for c in json.loads(path.read_text(encoding="utf-8"))["cells"] if c["cell_type"] == "code"
             if (m := SHOW.match("".join(c["source"]).strip()))]
    shown = [name for kind, name in calls if kind == "show"]
    assert sorted(shown) == sorted(NAMES)
    assert all(calls[i - 1] == ("show", name) for i, (kind, name) in enumerate(calls) if kind == "try_this")


# Pages whose explorables' presets are explained in the figures' captions only: a "Try this" list (try_this) there
# would say the same twice, away from the figure.
CAPTIONED = ("03_", "04_", "05_", "06_", "07_", "08_", "11_", "12_")


def test_pages_explain_their_presets_in_the_caption_not_in_a_list():
    lists = [f"{path.name}: {''.join(c['source']).strip()}" for path in toc_notebooks()
             if path.name.startswith(CAPTIONED) for c in json.loads(path.read_text(encoding="utf-8"))["cells"]
             if c["cell_type"] == "code" and "try_this(" in "".join(c["source"])]
    assert not lists, ("the caption under the figure explains each preset (its Preset notice in "
                       f"normlab_core/figures/s*.py); delete these cells: {lists}")


@pytest.mark.parametrize("name", NAMES)
def test_every_preset_has_an_explanation_the_caption_shows(name):
    """Each preset's explanation (its notice) is a sentence's worth of words, and the figure's caption at that
    preset's state is that explanation in both faces (static.spec feeds both); away from every preset it is the
    neutral caption."""
    from normlab_core.interactive import static

    exp = get(name)
    for label, p in exp.presets.items():
        assert len(p.notice.split()) >= 5, f"{name}: preset {label!r} needs an explanation of what to look at"
        values = exp.preset_values(label)
        assert static.spec(exp, values)["caption"] == p.notice, (
            f"{name}: the caption at preset {label!r} must be its notice (normlab_core/interactive/static.py caption)")
    states = {key(exp, exp.preset_values(label)) for label in exp.presets}
    other = next((v for v in every_state(exp) if key(exp, v) not in states), None)   # (None: every state is one)
    if other is not None:
        assert static.spec(exp, other)["caption"] == static.spec(exp, other)["neutral"] == static.NEUTRAL


# -- declarations -------------------------------------------------------------------------------------------------
def test_catalog_names_are_the_books_sixteen_stable_snake_case_names():
    assert len(NAMES) >= 16 and all(re.fullmatch(r"[a-z][a-z0-9_]*", n) for n in NAMES)
    with pytest.raises(KeyError, match="known: "):
        get("nope")


@pytest.mark.parametrize("name", NAMES)
def test_controls_are_few_with_exact_stops_and_short_option_labels(name):
    exp = get(name)
    assert 1 <= len(exp.controls) <= 3
    for k, c in exp.controls.items():
        assert c.label, f"{name}: {k} has no label"
        if isinstance(c, Slider):
            labels = [c.format(v) for v in c.positions()]
            assert len(set(labels)) == len(labels) and c.value in c.positions()
        else:
            assert isinstance(c, Choice) and all(len(c.format(o)) <= 12 for o in c.options), (name, k)
    states = [key(exp, exp.preset_values(label)) for label in exp.presets]
    assert exp.presets and len(states) == len(set(states)), f"{name}: two presets set the same state"


# -- every state, both layouts --------------------------------------------------------------------------------
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", NAMES)
def test_every_frame_is_readable(name, layout):
    """No text overlaps another or leaves the figure or (placed in an axes) its axes, none is under SMALLEST points,
    legends name only what is drawn, pictures fill their panels, and the mechanism found every artist update()
    changes (exp.late)."""
    problems = {}
    for k, (*_, found) in drawn(name, layout).items():
        for p in found:
            problems.setdefault(p, []).append(k)
    report = [f"{p} (in {len(ks)} states, e.g. {ks[0]})" for p, ks in problems.items()]
    assert not report, f"{name} ({layout}):\n" + "\n".join(report[:20])
    assert not get(name).late, f"{name}: update() changes these artists in some states only: {get(name).late}"


@pytest.mark.parametrize("name", NAMES)
def test_readouts_and_alt_text_follow_the_state(name):
    wide, narrow = drawn(name, "wide"), drawn(name, "narrow")
    rows = {tuple(r) for _, r, _, _ in wide.values()}
    assert len(rows) == 1, f"{name}: readout rows differ between states: {rows}"
    for k, (_, readouts, alt, _) in wide.items():
        text = " ".join(readouts.values())
        if NON_FINITE.search(text):
            assert re.search(r"0/0|NaN|undefined", text), f"{name}: unexplained non-finite readout {readouts}"
        assert narrow[k][1:3] == (readouts, alt), f"{name}: the layouts disagree at {k}"
        assert 80 <= len(alt) <= 700 and alt.endswith("."), f"{name}: alt text {alt!r}"
        assert re.search(r"\d", alt), f"{name}: the alt text states no result: {alt!r}"
    by_readouts = {}
    for _, readouts, alt, _ in wide.values():
        by_readouts.setdefault(tuple(readouts.values()), set()).add(alt)
    assert len({a for alts in by_readouts.values() for a in alts}) > 1, f"{name}: one alt text for every state"


@pytest.mark.parametrize("name", NAMES)
def test_neighbouring_stops_never_look_the_same(name):
    """From the defaults and from every preset, each control's neighbouring stops differ in frame or readouts."""
    exp, dead = get(name), []
    for base_label, base in [("defaults", exp.defaults())] + [(p, exp.preset_values(p)) for p in exp.presets]:
        for k, c in exp.controls.items():
            for a, b in itertools.pairwise(c.positions()):
                if state(name, {**base, k: a})[:2] == state(name, {**base, k: b})[:2]:
                    dead.append(f"{k} {c.format(a)} / {c.format(b)} from {base_label}")
    assert not dead, f"{name}: neighbouring stops with the identical frame and readouts: {dead}"


@pytest.mark.parametrize("name", NAMES)
def test_frames_do_not_depend_on_the_frames_drawn_before(name):
    """A fresh explorable drawing three states in reverse order gives the catalog's frames to the pixel."""
    exp = get(name)
    picks = [exp.defaults()] + [exp.preset_values(p) for p in list(exp.presets)[:2]]
    fresh = type(exp)(exp.name, title=exp.title, controls=exp.controls, setup=exp.setup, update=exp.update,
                      presets=exp.presets, inputs=exp.inputs, start=exp.start, size=exp.size,
                      narrow=exp.narrow_size)
    for values in reversed(picks):
        assert (pixels(fresh.render(**values).png) == pixels(exp.render(**values).png)).all(), (name, values)


@pytest.mark.parametrize("name", NAMES)
def test_a_learners_own_input_draws_cleanly(name):
    """Every input replaced by a different allowed value (vectors of another length and scale): the frame draws,
    its texts are readable, and the readouts change."""
    exp = get(name)
    if not exp.inputs:
        pytest.skip(f"{name} takes no inputs")
    own = {}
    for k, spec in exp.inputs.items():
        d = spec.default
        if isinstance(d, np.ndarray):
            own[k] = np.round(np.concatenate([d, d[:1] + 0.7]) * 1.3 + 0.25, 3)
        elif isinstance(d, float):
            own[k] = d * 2 if d else 1e-6
        else:
            own[k] = type(d)(getattr(d, "gain", 0.5) * 0.8, getattr(d, "bias", 0.1) * 1.5)
    mine, stock = exp.render(**own), exp.render()
    assert mine.readouts != stock.readouts and mine.png != stock.png
    assert not text_problems(exp.figure(**own)), text_problems(exp.figure(**own))


# -- what the presets' notices quote -------------------------------------------------------------------------------
# (explorable, preset, readout, text the readout shows, text the notice quotes)
NOTICE_NUMBERS = [
    ("teaser_stack_magnitude", "gain 0.1", "no normalization", "by 1.103", "1.103"),
    ("teaser_stack_magnitude", "gain 0.1, depth 48", "no normalization", "by 1.1003", "1.1003"),
    ("teaser_stack_magnitude", "gain 1", "no normalization", "by 2", "factor 2 "),
    ("teaser_stack_magnitude", "gain 1", "pre-norm", "by 1.0392", "1.0392"),
    ("teaser_stack_magnitude", "gain 1, depth 48", "pre-norm", "by 1.0202", "1.0202"),
    ("teaser_stack_magnitude", "depth 0", "post-norm", "by 0.36515", "0.36515"),
    ("teaser_stack_magnitude", "depth 0", "input |x0|", "5.477", "5.477"),
    ("teaser_stack_magnitude", "depth 48", "post-norm", "|h| = 2;", "flat at 2"),
    ("gain_depth", "depth 96", "|h_L| / |h_0|", "9412 at L = 96", "9412"),
    ("gain_depth", "gain 0.9", "|h_L| / |h_0|", "0.07977 at L = 24", "0.07977"),
    ("gain_depth", "gain 0.9", "layers per factor 10", "21.9", "21.9"),
    ("gain_depth", "gain 1.024, depth 96", "|h_L| / |h_0|", "9.745 at", "9.745"),
    ("gain_depth", "gain 0.977, depth 96", "|h_L| / |h_0|", "0.1071 at", "0.1071"),
    ("gain_depth", "gain 1.05, depth 96", "|h_L| / |h_0|", "108.2 at", "108.2"),
    ("gain_depth", "gain 1.01, depth 96", "|h_L| / |h_0|", "2.599 at", "2.599"),
    ("batch_vs_layer_norm", "batch 1", "BatchNorm pools", "6 values (1 example × 6 positions)", "6 positions"),
    ("scale_offset_standardize", "offset 0", "span (max - min) / std", "2.9277", "2.928"),
    ("scale_offset_standardize", "offset 100000", "one-pass variance E[x²] - E[x]²", "0 in float32", "to 0"),
    ("scale_offset_standardize", "offset 100000, scale 0.0001", "mean, variance, std", "100000, 0, 0", "is 0"),
    ("scale_offset_standardize", "offset 100000, scale 0.0001, float64", "one-pass variance E[x²] - E[x]²",
     "-3.814697e-6", "-3.8e-6"),
    ("scale_offset_standardize", "defaults (float32)", "one-pass variance E[x²] - E[x]²", "2.916992", "2.916992"),
    ("scale_offset_standardize", "defaults (float32)", "mean, variance, std", "2.916667", "2.916667"),
    ("layer_norm_eps", "scale 0, epsilon 0", "output", "NaN", "NaN"),
    ("layer_norm_eps", "epsilon 1", "var / (var + eps)", "0.744681", "0.744681"),
    ("layer_norm_eps", "scale 0.001", "var / (var + eps)", "0.225806", "0.225806"),
    ("layer_norm_eps", "scale 0.001", "input", "variance 2.917e-6", "2.917e-6"),
    ("layer_norm_affine", "gamma 2", "output", "variance 3.99999", "gamma² = 4"),
    ("layer_norm_affine", "gamma 0.5, beta 1", "output", "mean +1.000000", "centre"),
    ("layer_norm_spread", "epsilon 0.01", "output std (LayerNorm, float64)", "0.99829", "0.99829"),
    ("layer_norm_spread", "epsilon 1", "output std (LayerNorm, float64)", "0.862971", "0.862971"),
    ("layer_norm_spread", "spread 0.01", "output std (LayerNorm, float64)", "0.953463", "0.953463"),
    ("layer_norm_spread", "spread 0.001", "output std (LayerNorm, float64)", "0.301511", "0.301511"),
    ("layer_norm_spread", "spread 1e-5", "output std (LayerNorm, float64)", "0.00316226", "0.00316226"),
    ("layer_norm_spread", "epsilon 0, spread 1e-6", "output std (LayerNorm, float64)", "1", "flat at 1"),
    ("rms_norm_offset", "offset 100.5", "LayerNorm output", "from -1.4638 to +1.4638", "±1.46"),
    ("rms_norm_offset", "offset 10", "RMSNorm std / LayerNorm std", "0.1683", "0.1683"),
    ("rms_norm_offset", "offset 10", "rms² = mean² + var", "97.17%", "97%"),
    ("rms_norm_offset", "offset -50", "RMSNorm output", "mean -0.9994", "-1"),
    ("norm_geometry", "offset", "angle to the plane", "RMSNorm's y +60.7°", "+60.7°"),
    ("norm_geometry", "offset", "y · 1", "LayerNorm 0,", "y · 1 = 0"),
    ("norm_geometry", "centred", "|y| (sphere radius √3 = 1.7321)", "LayerNorm 1.7321, RMSNorm 1.7321", "1.7321"),
    ("norm_geometry", "centred, offset 3", "y · 1", "RMSNorm 2.8828", "2.8828"),
    ("norm_geometry", "nearly flat", "|y| (sphere radius √3 = 1.7321)", "LayerNorm 1.7321", "1.7321"),
    ("norm_geometry", "nearly flat, eps 0.01", "what eps leaves of √3", "= 0.3780 (var 0.001667)", "0.3780"),
    ("norm_geometry", "nearly flat, eps 0.01", "what eps leaves of √3", "RMSNorm √(ms/(ms+eps)) = 0.9950",
     "0.9950"),
    ("norm_geometry", "eps 1", "what eps leaves of √3", "LayerNorm √(var/(var+eps)) = 0.5247", "0.5247"),
    ("norm_geometry", "eps 1", "what eps leaves of √3", "RMSNorm √(ms/(ms+eps)) = 0.7835", "0.7835"),
    ("compare_offset", "offset 10", "RMS", "[+0.792, +0.891, +0.990, +1.089, +1.188]", "+0.792 .. +1.188"),
    ("compare_offset", "mixed, offset 0.8", "x", "[3, -1, 0.5, 2, -0.5]", "[3, -1, 0.5, 2, -0.5]"),
    ("compare_offset", "mixed, offset 0", "largest |LN - RMS|", "0", "agree"),
    ("compare_precision", "offset 100, bfloat16", "RMSNorm", "9 distinct stored values of 41", "9 distinct"),
    ("compare_precision", "offset 100, bfloat16", "RMSNorm", "error after re-stretch 0.181", "0.181"),
    ("compare_precision", "offset 100, float16", "RMSNorm", "26 distinct stored values of 41", "26 distinct"),
    ("compare_precision", "offset 100, float16", "RMSNorm", "error after re-stretch 0.0227", "0.0227"),
    ("compare_precision", "offset 10000", "RMSNorm", "error after re-stretch 1", "error is 1"),
    ("compare_precision", "offset 10000, float16", "LayerNorm", "error after re-stretch 0.000213", "0.000213"),
    ("compare_variance", "float32, offset 300", "one-pass", "relative error 0.0078", "0.0078"),
    ("compare_variance", "float32, offset 300", "Welford", "relative error 2.4e-5", "less than 0.0001"),
    ("compare_variance", "float32, offset 10000", "one-pass", "negative!", "negative variance"),
    ("compare_variance", "float32, offset 10000", "Welford", "relative error 0.00073", "three or more digits"),
    ("compare_variance", "float16, offset 100", "one-pass", "+inf: overflow", "returns inf"),
    ("compare_variance", "float16, offset 10", "one-pass", "relative error 0.19", "a fifth"),
    ("compare_variance", "float16, offset 10", "two-pass", "relative error 0.00032", "0.00032"),
    ("compare_variance", "bfloat16, offset 30", "two-pass", "relative error 0.41", "0.41"),
    ("pre_post_sensitivity", "bias 0", "post-norm", "(1 × its depth-1 value)", "flat"),
    ("pre_post_sensitivity", "gain 1.5, bias 0.5", "note", "= 0.8333 of its", "0.8333"),
    ("pre_post_sensitivity", "gain 1.5, bias -0.5", "note", "= 0.8333 of its", "0.8333"),
    ("pre_post_sensitivity", "gain 0", "pre-norm", "sensitivity 1 (1 × its depth-1 value)", "exactly 1"),
    ("pre_post_final_norm", "final norm on", "pre-norm", "|out| 2,", "at 2"),
    ("pre_post_final_norm", "final norm on, depth 256", "pre-norm", "sensitivity 0.188 ", "0.188"),
    ("pre_post_final_norm", "final norm on, depth 256", "post-norm", "sensitivity 2.598e-8", "2.598e-8"),
    ("pre_post_final_norm", "final norm off, depth 256", "pre-norm", "|out| 311,", "311"),
    ("pre_post_fd_error", "reference setting", "post-norm at depth 32", "relative error 0.0045", "0.0045"),
    ("pre_post_fd_error", "reference setting", "measured exactly 0", "post-norm from depth 143", "depth 143"),
    ("pre_post_fd_error", "float64, h 1e-7", "post-norm at depth 32", "relative error 8.8e-8", "8.8e-8"),
    ("pre_post_fd_error", "float32, h 1e-7", "measured exactly 0", "post-norm from depth 2; pre-norm from depth 4",
     "from depth 2 (post-norm) or 4"),
    ("pre_post_fd_error", "float32, h 1e-7", "step actually taken", "1.192e-7", "1.192e-7"),
    ("pre_post_trains", "no warm-up", "post-norm", "every seed solved in 5 of 12 cells", "solved in 5 of 12 cells"),
    ("pre_post_trains", "no warm-up", "pre-norm", "every seed solved in 12 of 12 cells", "solved in 12 of 12 cells"),
    ("pre_post_trains", "with warm-up", "post-norm", "every seed solved in 8 of 12 cells", "solved in 8 of 12 cells"),
    ("backward_fd_step", "reference setting", "largest error", "0.000259 at component 2", "2.59e-4"),
    ("backward_fd_step", "float32, h 1e-2", "largest error", "3.32e-6", "3.32e-6"),
    ("backward_fd_step", "float32, h 1e-7", "numerical", "+0.000000", "exactly 0"),
    ("backward_fd_step", "float64, h 2e-5", "largest error", "5.01e-12", "5.01e-12"),
    ("overview_norm_output", "RMSNorm, offset 10", "RMSNorm output", "[+0.792, +0.891, +0.990, +1.089, +1.188]",
     "+0.792 .. +1.188"),
    ("overview_stack_depth", "RMSNorm, post-norm, depth 1", "post-norm", "sensitivity 0.3507", "0.3507"),
    ("overview_stack_depth", "RMSNorm, post-norm, depth 32", "post-norm", "sensitivity 0.04929", "0.04929"),
    ("overview_stack_depth", "RMSNorm, post-norm, depth 64", "post-norm", "sensitivity 0.006253", "0.006253"),
    ("overview_stack_depth", "RMSNorm, pre-norm, depth 64", "pre-norm", "sensitivity 9.573", "9.573"),
    ("overview_stack_depth", "LayerNorm, post-norm", "post-norm", "sensitivity 0.4899", "0.4899"),
    ("overview_stack_depth", "LayerNorm, pre-norm, depth 64", "pre-norm", "sensitivity 16.25", "16.25"),
    # "Does it train?": the notices are written from the stored runs (normlab_core/data); these rows check that
    # they say what the readouts show in their state.
    ("train_outcomes", "depth 6, lr 0.01", "post-norm", "0/3 solved (3 stuck)", "post-norm is 0/3 solved"),
    ("train_outcomes", "depth 6, lr 0.01", "pre-norm", ": 3/3 solved", "pre-norm 3/3 solved"),
    ("train_outcomes", "with warm-up", "post-norm", ": 3/3 solved", "post-norm is 3/3 solved"),
    ("train_outcomes", "depth 12, lr 0.003", "post-norm", "0/3 solved (3 stuck)", "post-norm is 0/3 solved"),
    ("train_outcomes", "depth 24, warm-up", "post-norm", "0/3 solved (2 learning, 1 stuck)",
     "post-norm is 0/3 solved (2 learning, 1 stuck)"),
    ("train_outcomes", "depth 24, warm-up", "pre-norm", ": 3/3 solved", "pre-norm is 3/3 solved"),
    ("train_outcomes", "depth 24, lr 0.01", "pre-norm", ": 3/3 solved", "pre-norm is 3/3 solved"),
    ("train_fixes", "DeepNorm, depth 24", "outcome", ": 3/3 solved", "DeepNorm is 3/3 solved"),
    ("train_fixes", "DeepNorm, depth 24", "plain post-norm, same cell", "0/3 solved", "post-norm is 0/3 solved"),
    ("train_fixes", "Peri-LN, depth 24", "residual stream at the end", "RMS up to 14.8, largest |value| 55.3",
     "RMS up to 14.8, largest |value| 55.3"),
    ("train_fixes", "pre-norm, depth 24", "residual stream at the end", "RMS up to 30.9, largest |value| 113",
     "RMS up to 30.9, largest |value| 113"),
    ("train_fixes", "DyT, depth 12", "outcome", "0/3 solved (3 stuck)", "0/3 solved (3 stuck)"),
    ("train_qk_norm", "pre-norm, lr 0.03", "largest logit over training", "seed 0 195; seed 1 296; seed 2 176",
     "seed 0 195; seed 1 296; seed 2 176"),
    ("train_qk_norm", "with QK-norm", "largest logit over training", "seed 0 10.3; seed 1 12.4; seed 2 11.5",
     "seed 0 10.3; seed 1 12.4; seed 2 11.5"),
    ("train_qk_norm", "post-norm, lr 0.01, QK-norm", "outcome", "0/3 solved (3 stuck)",
     "0/3 solved (3 stuck)"),
    ("fail_first", "no norm, depth 4", "activations |h|, median", "layer 0 0.667, layer 4 1.09 at the start",
     "from 0.667 to 1.09"),
    ("fail_first", "no norm, depth 4", "loss", "last loss 0.34, 0.335, 0.367", "0.335 to 0.367"),
    ("fail_first", "no norm, depth 8", "gradients |dL/dh|, median", "layer 0 / layer 8: 4.01 at the start",
     "4.01 times"),
    ("fail_first", "no norm, depth 8", "loss", "blew up in 3 of 3 seeds", "every seed (step 2)"),
    ("fail_first", "no norm, depth 8", "loss", "at step 2, 2, 2", "(step 2)"),
    ("fail_first", "no norm, depth 32", "activations |h|, median", "layer 32 68.8 at the start", "68.8"),
    ("fail_first", "no norm, depth 32", "loss", "start 6.44e4;", "6.44e4"),
    ("fail_first", "no norm, depth 32", "gradients |dL/dh|, median", "layer 0 / layer 32: 221 at the start", "221"),
    ("fail_first", "pre-norm, depth 32", "activations |h|, median", "layer 32 2.28 at the start", "2.28"),
    ("fail_first", "pre-norm, depth 32", "gradients |dL/dh|, median", "layer 32: 3.67 at the start", "3.67"),
    ("fail_first", "pre-norm, depth 32", "loss", "last loss 0.394, 0.349, 0.409", "0.394, 0.349, 0.409"),
    ("fail_first", "post-norm, depth 32", "gradients |dL/dh|, median", "0.0522 at step 299", "0.0522"),
    ("fail_first", "post-norm, depth 32", "loss", "last loss 1.69, 1.57, 1.27", "1.3 to 1.7"),
    ("fail_first", "post-norm, depth 8, lr 0.1", "loss", "at step 8, 7, 9", "steps 8, 7 and 9"),
    ("fail_first", "pre-norm, depth 32, lr 0.1", "loss", "blew up in 2 of 3 seeds", "2 of 3 seeds"),
    ("scale_invariance_step", "|W| 10 times", "first step", "W turns by 0.1798°", "0.1798°"),
    ("scale_invariance_step", "|W| 10 times", "first step", "|W| = 27.5,", "ten times longer"),
    ("scale_invariance_step", "|W| half", "first step", "W turns by 51.46°", "51.46°"),
    ("scale_invariance_step", "decay 0.05", "after 300 steps", "|W| = 2.11, the last step turns W by 13.11°",
     "settles near 2.11"),
    ("scale_invariance_step", "decay 0.05", "no decay, same start", "|W| = 12.1, last turn 0.1145°", "0.1145°"),
    ("scale_invariance_step", "|W| 10 times, decay 0.05", "after 300 steps", "|W| = 2.032, the last step turns W "
     "by 12.86°", "0.1844° to 12.86°"),
    ("scale_invariance_step", "|W| 10 times, decay 0.05", "first step", "W turns by 0.1844°", "0.1844°"),
    ("scale_invariance_step", "decay 0.2", "after 300 steps", "|W| = 1.606, the last step turns W by 25.84°",
     "25.84°"),
]


@pytest.mark.parametrize(("name", "label", "readout", "shown", "quoted"), NOTICE_NUMBERS,
                         ids=[f"{n}:{p}:{k}" for n, p, k, *_ in NOTICE_NUMBERS])
def test_notice_quotes_what_the_readouts_show(name, label, readout, shown, quoted):
    exp = get(name)
    readouts = state(name, exp.preset_values(label))[1]
    assert shown in readouts[readout], f"{name} at {label!r}: {readout} reads {readouts[readout]!r}"
    assert quoted in exp.presets[label].notice


def test_every_explorable_has_its_notice_numbers_checked():
    assert {n for n, *_ in NOTICE_NUMBERS} == set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_values_typed_between_and_beyond_the_stops_never_raise(name):
    """The live face takes typed values within each slider's free range: its ends and values between the stops
    draw, with readouts that explain any non-finite number (controls never raise)."""
    exp, rng = get(name), np.random.default_rng(21)
    free = {k: c for k, c in exp.controls.items() if isinstance(c, Slider) and c.free}
    if not free:
        pytest.skip(f"{name}: stored data only, no slider takes typed values")
    for k, c in free.items():
        lo, hi = c.free
        picks = [lo, hi, *rng.uniform(lo, hi, 2)]
        for v in picks:
            v = int(round(v)) if c.integer else float(v)
            f = exp.render(**{k: v})
            text = " ".join(f.readouts.values())
            assert not NON_FINITE.search(text) or re.search(r"0/0|NaN|undefined", text), (name, k, v, f.readouts)


def test_the_23_7_curves_are_computed_once_per_input_and_equal_a_fresh_computation():
    """s07.curves keeps the curves the depth control only moves along: the same arrays for a second depth,
    read-only, equal to stack_curves itself; another x0 or sublayer computes anew, and a learner's own sublayer
    class (which may hold state) is never kept."""
    from normlab_core.figures import s07_pre_post as s07
    from normlab_core.residual import Affine, stack_curves

    x0, sub = np.array([0.5, -1.0, 2.0, 3.5]), Affine(0.7, 0.2)
    first = s07.curves(x0, sub, False, 1e-6)
    again = s07.curves(x0.copy(), Affine(0.7, 0.2), False, 1e-6)
    for p in s07.PLACEMENTS:
        fresh = stack_curves(x0, s07.MAX_DEPTH, p, sublayer=sub, eps=1e-6)
        assert all(a is b for a, b in zip(first[p], again[p], strict=True))
        assert all(np.array_equal(a, b) and not a.flags.writeable for a, b in zip(first[p], fresh, strict=True))
    assert s07.curves(x0, Affine(0.7, 0.3), False, 1e-6)["post"][1] is not first["post"][1]
    assert s07.curves(x0 * 2, sub, False, 1e-6)["post"][1] is not first["post"][1]
    assert s07.curves(x0, sub, True, 1e-6)["post"][1] is not first["post"][1]

    class Counting(Affine):
        calls = 0

        def jvp(self, v, dv):
            type(self).calls += 1
            return super().jvp(v, dv)

    own = Counting(0.7, 0.2)
    s07.curves(x0, own, False, 1e-6)
    calls = Counting.calls
    s07.curves(x0, own, False, 1e-6)
    assert calls > 0 and Counting.calls == 2 * calls
