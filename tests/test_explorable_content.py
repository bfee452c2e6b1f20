"""The content of the catalog: presets, stops and readouts that a reader can rely on.

Every combination of stops is rendered once (the static book pre-renders exactly these states) and the
results are shared by the tests below: readouts keep the same rows in every state, neighbouring stops
never show the same thing, and the numbers the presets' "what to notice" lines quote are the numbers
the readouts show in that state.  The notebooks call try_this() right after each show().
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
import warnings
from functools import cache
from pathlib import Path

import pytest

from normlab_core.controls import Choice, Slider
from normlab_core.explore import catalog

NAMES = list(catalog())
NOTEBOOKS = sorted(p for p in Path(__file__).resolve().parents[1].joinpath("notebooks").glob("[01][0-9]_*.ipynb")
                   if not p.name.startswith(("00_", "10_")))   # the section notebooks and "Does it train?" (11)
NON_FINITE = re.compile(r"\b(nan|inf)\b", re.IGNORECASE)


def combinations(exp) -> list[dict]:
    """Every state the static book offers: the product of all controls' positions."""
    keys = list(exp.controls)
    return [dict(zip(keys, combo, strict=True))
            for combo in itertools.product(*(c.positions() for c in exp.controls.values()))]


@cache
def rendered(name: str) -> dict:
    """{state key: (sha1 of the PNG, readouts)} for every combination of stops; warnings are errors."""
    exp = catalog()[name]
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for values in combinations(exp):
            png, readouts = exp.render(**values)
            out[_key(values)] = (hashlib.sha1(png).hexdigest(), readouts)
    return out


def _key(values: dict) -> tuple:
    return tuple(sorted(values.items()))


def state(name: str, values: dict):
    return rendered(name)[_key(catalog()[name].values(**values))]


# ---- controls and stops -----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_at_most_three_controls(name):
    assert 1 <= len(catalog()[name].controls) <= 3


@pytest.mark.parametrize("name", NAMES)
def test_every_slider_has_explicit_stops_holding_its_default(name):
    for k, c in catalog()[name].controls.items():
        if isinstance(c, Slider):
            assert c.stops is not None, f"{name}.{k} has no explicit stops"
            stops = c.positions()
            assert stops == sorted(set(stops)), f"{name}.{k}: stops must be strictly increasing: {stops}"
            assert any(s == c.value and type(s) is type(c.value) for s in stops), (name, k, c.value, stops)


@pytest.mark.parametrize("name", NAMES)
def test_depth_stops_are_evenly_spaced_on_the_sliders_scale(name):
    for k, c in catalog()[name].controls.items():
        if isinstance(c, Slider) and "depth" in k:
            stops = c.positions()
            steps = [b - a for a, b in itertools.pairwise(stops)] if c.scale == "linear" else \
                [math.log(b / a) for a, b in itertools.pairwise(stops)]
            assert max(steps) - min(steps) <= 1e-9 * max(steps), f"{name}.{k}: uneven stops {stops}"


# ---- presets ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_presets_name_exact_stops(name):
    exp = catalog()[name]
    assert len(exp.presets) >= 2, f"{name} needs presets for the states its notebook discusses"
    for label, p in exp.presets.items():
        for k, v in p.values.items():
            positions = exp.controls[k].positions()
            assert any(v == s and type(v) is type(s) for s in positions), f"{name} preset {label!r}: {k}={v!r}"
        # The notice is rendered as Markdown in try_this(): no character that would start emphasis or code.
        assert not re.search(r"[*_`$<>]", p.notice), f"{name} preset {label!r}: markdown-active text in notice"


@pytest.mark.parametrize("name", NAMES)
def test_presets_are_distinct_states(name):
    exp = catalog()[name]
    states = [_key(exp.preset_values(label)) for label in exp.presets]
    assert len(states) == len(set(states)), f"{name}: two presets set the same state"


# (explorable, preset, readout key, text the readout shows, text the notice quotes)
NOTICE_NUMBERS = [
    ("teaser_stack_magnitude", "gain 0.1", "no normalization", "by 1.1030", "1.1030"),
    ("teaser_stack_magnitude", "gain 0.1, depth 48", "no normalization", "by 1.1003", "1.1003"),
    ("teaser_stack_magnitude", "gain 1", "no normalization", "by 2.0000", "2.0000"),
    ("teaser_stack_magnitude", "gain 1", "pre-norm", "by 1.0392", "1.0392"),
    ("teaser_stack_magnitude", "gain 1, depth 48", "pre-norm", "by 1.0202", "1.0202"),
    ("teaser_stack_magnitude", "depth 0", "post-norm", "by 0.3651", "0.3651"),
    ("teaser_stack_magnitude", "depth 0", "input |x0|", "5.477", "5.477"),
    ("teaser_stack_magnitude", "depth 48", "post-norm", "|h| = 2;", "flat at 2"),
    ("gain_depth", "depth 96", "|h_L| / |h_0|", "9412 at L = 96", "9412"),
    ("gain_depth", "gain 0.9", "|h_L| / |h_0|", "0.07977 at L = 24", "0.07977"),
    ("gain_depth", "gain 0.9", "layers per factor 10", "21.9", "21.9"),
    ("gain_depth", "gain 1.024, depth 96", "|h_L| / |h_0|", "9.745 at", "9.745"),
    ("gain_depth", "gain 0.977, depth 96", "|h_L| / |h_0|", "0.1071 at", "0.1071"),
    ("gain_depth", "gain 1.05, depth 96", "|h_L| / |h_0|", "108.2 at", "108.2"),
    ("gain_depth", "gain 1.01, depth 96", "|h_L| / |h_0|", "2.599 at", "2.599"),
    ("batch_vs_layer_norm", "batch 1", "BatchNorm pools", "6 values (1 example x 6 positions)", "6 positions"),
    ("scale_offset_standardize", "offset 0", "span (max - min) / std", "2.9277", "2.928"),
    ("scale_offset_standardize", "offset 100000", "one-pass variance E[x²] - E[x]²", "0 in float32", "to 0"),
    ("scale_offset_standardize", "offset 100000, scale 0.0001", "mean, variance, std", "100000, 0, 0", "is 0"),
    ("scale_offset_standardize", "offset 100000, scale 0.0001, float64", "one-pass variance E[x²] - E[x]²",
     "-3.814697e-06", "-3.8e-6"),
    ("scale_offset_standardize", "defaults (float32)", "one-pass variance E[x²] - E[x]²", "2.916992", "2.916992"),
    ("scale_offset_standardize", "defaults (float32)", "mean, variance, std", "2.916667", "2.916667"),
    ("layer_norm_eps", "scale 0, epsilon 0", "output", "NaN", "NaN"),
    ("layer_norm_eps", "epsilon 1", "var / (var + eps)", "0.744681", "0.7447"),
    ("layer_norm_eps", "scale 0.001", "var / (var + eps)", "0.225806", "0.2258"),
    ("layer_norm_eps", "scale 0.001", "input", "variance 2.917e-06", "2.9e-6"),
    ("layer_norm_affine", "gamma 2", "output", "variance 3.99999", "gamma² = 4"),
    ("layer_norm_affine", "gamma 0.5, beta 1", "output", "mean +1.000000", "centre"),
    ("layer_norm_spread", "epsilon 0.01", "output std (LayerNorm, float64)", "0.99829", "0.9983"),
    ("layer_norm_spread", "epsilon 1", "output std (LayerNorm, float64)", "0.862971", "0.8630"),
    ("layer_norm_spread", "spread 0.01", "output std (LayerNorm, float64)", "0.953463", "0.9535"),
    ("layer_norm_spread", "spread 0.001", "output std (LayerNorm, float64)", "0.301511", "0.3015"),
    ("layer_norm_spread", "spread 1e-5", "output std (LayerNorm, float64)", "0.00316226", "0.003162"),
    ("layer_norm_spread", "epsilon 0, spread 1e-6", "output std (LayerNorm, float64)", "1", "flat at 1"),
    ("rms_norm_offset", "offset 100.5", "LayerNorm output", "from -1.4638 to +1.4638", "±1.46"),
    ("rms_norm_offset", "offset 10", "RMSNorm std / LayerNorm std", "0.1683", "0.1683"),
    ("rms_norm_offset", "offset 10", "rms² = mean² + var", "97.17%", "97%"),
    ("rms_norm_offset", "offset -50", "RMSNorm output", "mean -0.9994", "-1"),
    ("compare_offset", "offset 10", "RMS", "[+0.792, +0.891, +0.990, +1.089, +1.188]", "+0.792 .. +1.188"),
    ("compare_offset", "mixed, offset 0.8", "x", "[3.0, -1.0, 0.5, 2.0, -0.5]", "[3, -1, 0.5, 2, -0.5]"),
    ("compare_offset", "mixed, offset 0", "largest |LN - RMS|", "0", "agree"),
    ("compare_precision", "offset 100, bfloat16", "RMSNorm", "9 distinct stored values of 41", "9 distinct"),
    ("compare_precision", "offset 100, bfloat16", "RMSNorm", "error after re-stretch 0.181", "0.181"),
    ("compare_precision", "offset 100, float16", "RMSNorm", "26 distinct stored values of 41", "26 distinct"),
    ("compare_precision", "offset 100, float16", "RMSNorm", "error after re-stretch 0.0227", "0.0227"),
    ("compare_precision", "offset 10000", "RMSNorm", "error after re-stretch 1", "error is 1"),
    ("compare_precision", "offset 10000, float16", "LayerNorm", "error after re-stretch 0.000213", "0.000213"),
    ("pre_post_sensitivity", "bias 0", "post-norm", "(1 x its depth-1 value)", "flat"),
    ("pre_post_sensitivity", "gain 1.5, bias 0.5", "note", "= 0.8333 of its", "0.8333"),
    ("pre_post_sensitivity", "gain 1.5, bias -0.5", "note", "= 0.8333 of its", "0.8333"),
    ("pre_post_sensitivity", "gain 0", "pre-norm", "sensitivity 1 (1 x its depth-1 value)", "exactly 1"),
    ("pre_post_final_norm", "final norm on", "pre-norm", "|out| 2,", "at 2"),
    ("pre_post_final_norm", "final norm on, depth 256", "pre-norm", "sensitivity 0.188 ", "0.188"),
    ("pre_post_final_norm", "final norm on, depth 256", "post-norm", "sensitivity 2.598e-08", "2.6e-8"),
    ("pre_post_final_norm", "final norm off, depth 256", "pre-norm", "|out| 311,", "311"),
    ("pre_post_fd_error", "reference setting", "post-norm at depth 32", "relative error 4.5e-03", "4.5e-3"),
    ("pre_post_fd_error", "reference setting", "measured exactly 0", "post-norm from depth 143", "depth 143"),
    ("pre_post_fd_error", "float64, h 1e-7", "post-norm at depth 32", "relative error 8.8e-08", "8.8e-8"),
    ("pre_post_fd_error", "float32, h 1e-7", "measured exactly 0", "post-norm from depth 2; pre-norm from depth 4",
     "from depth 2 (post-norm) or 4"),
    ("pre_post_fd_error", "float32, h 1e-7", "step actually taken", "1.192e-07", "1.19e-7"),
    ("backward_fd_step", "reference setting", "largest error", "2.59e-04 at dimension 2", "2.6e-4"),
    ("backward_fd_step", "float32, h 1e-2", "largest error", "3.32e-06", "3.3e-6"),
    ("backward_fd_step", "float32, h 1e-7", "numerical", "+0.000000", "exactly 0"),
    ("backward_fd_step", "float64, h 2e-5", "largest error", "5.01e-12", "5e-12"),
    ("overview_norm_output", "RMSNorm, offset 10", "RMSNorm output", "[+0.792, +0.891, +0.990, +1.089, +1.188]",
     "+0.792 .. +1.188"),
    ("overview_stack_depth", "RMSNorm, post-norm, depth 1", "post-norm", "sensitivity 0.3507", "0.3507"),
    ("overview_stack_depth", "RMSNorm, post-norm, depth 32", "post-norm", "sensitivity 0.04929", "0.04929"),
    ("overview_stack_depth", "RMSNorm, post-norm, depth 64", "post-norm", "sensitivity 0.006253", "0.006253"),
    ("overview_stack_depth", "RMSNorm, pre-norm, depth 64", "pre-norm", "sensitivity 9.573", "9.573"),
    ("overview_stack_depth", "LayerNorm, post-norm", "post-norm", "sensitivity 0.4899", "0.490"),
    ("overview_stack_depth", "LayerNorm, pre-norm, depth 64", "pre-norm", "sensitivity 16.25", "16.25"),
    # "Does it train?": the notices are written from the stored runs (normlab_core/data); these rows check that
    # they say what the readouts show in their state.
    ("train_outcomes", "depth 6, lr 1e-2", "post-norm", "0/3 solved (3 stuck at chance)", "post-norm is 0/3 solved"),
    ("train_outcomes", "depth 6, lr 1e-2", "pre-norm", ": 3/3 solved", "pre-norm 3/3 solved"),
    ("train_outcomes", "with warm-up", "post-norm", ": 3/3 solved", "post-norm is 3/3 solved"),
    ("train_outcomes", "depth 12, lr 3e-3", "post-norm", "0/3 solved (3 stuck at chance)", "post-norm is 0/3 solved"),
    ("train_outcomes", "depth 24, warm-up", "post-norm", "0/3 solved (3 stuck at chance)", "post-norm 0/3 solved"),
    ("train_outcomes", "depth 24, warm-up", "pre-norm", ": 3/3 solved", "pre-norm is 3/3 solved"),
    ("train_outcomes", "depth 24, lr 1e-2", "pre-norm", ": 3/3 solved", "pre-norm is 3/3 solved"),
    ("train_fixes", "DeepNorm, depth 24", "outcome", ": 3/3 solved", "DeepNorm is 3/3 solved"),
    ("train_fixes", "DeepNorm, depth 24", "plain post-norm, same cell", "0/3 solved", "post-norm is 0/3 solved"),
    ("train_fixes", "Peri-LN, depth 24", "residual stream at the end", "RMS up to 14.8, largest |value| 55.3",
     "RMS up to 14.8, largest |value| 55.3"),
    ("train_fixes", "pre-norm, depth 24", "residual stream at the end", "RMS up to 30.9, largest |value| 113",
     "RMS up to 30.9, largest |value| 113"),
    ("train_fixes", "DyT, depth 12", "outcome", "0/3 solved (3 stuck at chance)", "0/3 solved (3 stuck at chance)"),
    ("train_qk_norm", "pre-norm, lr 3e-2", "largest logit over training", "seed 0 195; seed 1 296; seed 2 176",
     "seed 0 195; seed 1 296; seed 2 176"),
    ("train_qk_norm", "with QK-norm", "largest logit over training", "seed 0 10.3; seed 1 12.4; seed 2 11.5",
     "seed 0 10.3; seed 1 12.4; seed 2 11.5"),
    ("train_qk_norm", "post-norm, lr 1e-2, QK-norm", "outcome", "0/3 solved (3 stuck at chance)",
     "0/3 solved (3 stuck at chance)"),
]


@pytest.mark.parametrize(("name", "label", "key", "shown", "quoted"), NOTICE_NUMBERS,
                         ids=[f"{n}:{p}:{k}" for n, p, k, *_ in NOTICE_NUMBERS])
def test_notice_quotes_what_the_readouts_show(name, label, key, shown, quoted):
    exp = catalog()[name]
    readouts = state(name, exp.preset_values(label))[1]
    assert shown in readouts[key], f"{name} at {label!r}: {key} reads {readouts[key]!r}"
    assert quoted in exp.presets[label].notice


def test_every_explorable_has_its_notice_numbers_checked():
    assert {n for n, *_ in NOTICE_NUMBERS} == set(NAMES)


# ---- every state: stable readouts, explained extremes, no dead stops ----------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_readouts_keep_their_rows_in_every_state(name):
    states = rendered(name)
    keys = {tuple(r) for _, r in states.values()}
    assert len(keys) == 1, f"{name}: readout rows differ between states: {keys}"
    for (_, readouts) in states.values():
        text = " ".join(readouts.values())
        if NON_FINITE.search(text):
            assert re.search(r"0/0|NaN:|undefined", text), f"{name}: unexplained non-finite readout {readouts}"


def _bases(exp) -> list[tuple[str, dict]]:
    return [("defaults", exp.defaults())] + [(label, exp.preset_values(label)) for label in exp.presets]


@pytest.mark.parametrize("name", NAMES)
def test_neighbouring_stops_never_look_the_same(name):
    """From the defaults and from every preset, each control's neighbouring stops differ in frame or readouts."""
    exp = catalog()[name]
    dead = []
    for base_label, base in _bases(exp):
        for k, c in exp.controls.items():
            pos = c.positions()
            for a, b in itertools.pairwise(pos):
                if state(name, {**base, k: a}) == state(name, {**base, k: b}):
                    dead.append(f"{k} {c.format(a)} / {c.format(b)} from {base_label}")
    assert not dead, f"{name}: neighbouring stops with the identical frame and readouts: {dead}"


# ---- notebooks --------------------------------------------------------------------------------------------
def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def _source(cell) -> str:
    src = cell["source"]
    return "".join(src) if isinstance(src, list) else src


SHOW = re.compile(r'^show\("([a-z0-9_]+)"\)$')
TRY = re.compile(r'^try_this\("([a-z0-9_]+)"\)$')


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_each_show_is_followed_by_its_try_this(path):
    cells = _cells(path)
    for i, cell in enumerate(cells):
        m = SHOW.match(_source(cell).strip()) if cell["cell_type"] == "code" else None
        if m:
            nxt = cells[i + 1] if i + 1 < len(cells) else None
            t = TRY.match(_source(nxt).strip()) if nxt and nxt["cell_type"] == "code" else None
            assert t and t.group(1) == m.group(1), f"{path.name}: show({m.group(1)!r}) is not followed by try_this"
        if cell["cell_type"] == "markdown":
            assert not re.search(r"^(\*\*Try this\*\*|Try this:)", _source(cell), re.MULTILINE), (
                f"{path.name}: a hand-written Try-this list is left in cell {i}")


def test_every_explorable_is_shown_once_in_the_notebooks():
    shown = [SHOW.match(_source(c).strip()).group(1) for p in NOTEBOOKS for c in _cells(p)
             if c["cell_type"] == "code" and SHOW.match(_source(c).strip())]
    assert sorted(shown) == sorted(NAMES)


def test_choice_labels_are_short():
    """Toggle labels must fit their buttons on a 390 px screen."""
    for name, exp in catalog().items():
        for k, c in exp.controls.items():
            if isinstance(c, Choice):
                assert all(len(c.format(o)) <= 12 for o in c.options), (name, k)
