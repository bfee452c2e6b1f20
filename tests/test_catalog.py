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
import math
import re
from decimal import Decimal
from functools import cache

import numpy as np
import pytest
from explorable_support import every_state, pixels, text_problems
from toc_support import toc_notebooks

from normlab_core.figures import catalog, get
from normlab_core.figures.style import SMALLEST
from normlab_core.interactive import Choice, Slider, layouts

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


def copy(exp):
    """A new explorable like `exp`, with no drawing yet."""
    return type(exp)(exp.name, title=exp.title, controls=exp.controls, setup=exp.setup, update=exp.update,
                     presets=exp.presets, inputs=exp.inputs, start=exp.start, size=exp.size, narrow=exp.narrow_size)


@pytest.mark.parametrize("name", NAMES)
def test_frames_do_not_depend_on_the_frames_drawn_before(name, monkeypatch):
    """A fresh explorable, its layout fitted afresh, drawing three states in reverse order gives the catalog's
    frames to the pixel, and the catalog's drawing holds the same layout (it may be one kept on disk by an earlier
    process: normlab_core/interactive/layouts.py)."""
    exp = get(name)
    picks = [exp.defaults()] + [exp.preset_values(p) for p in list(exp.presets)[:2]]
    catalogs = [exp.render(**values).png for values in reversed(picks)]
    fresh = copy(exp)
    monkeypatch.setenv("NORMLAB_LAYOUT_CACHE", "off")
    for values, png in zip(reversed(picks), catalogs, strict=True):
        assert (pixels(fresh.render(**values).png) == pixels(png)).all(), (name, values)
    ((key, mine),) = fresh._drawings.items()
    theirs = exp._drawings[key]
    assert mine.fitted and mine.key == theirs.key and mine.layout == theirs.layout, name


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


# -- what the presets' captions quote ------------------------------------------------------------------------------
# Every number a preset's caption (its notice) quotes must be one the figure shows in that state. The rule:
# - quoted: every numeral with a decimal point, an exponent, a % sign or three or more digits (|x| >= 100), with
#   its sign ('±' stands for both). Integers below 100 are counts, depths, layer and seed numbers, bits: mostly
#   structure, so only two shapes of them are checked here, counts "a/b" and "a of b", which must be shown as written.
#   Words are not numbers ("a tenth", "ten times"); a number after "section" is a reference and one after a bound
#   ("less than 0.0001", "below 1e-12") a bound, not a quote.
# - shown: the numbers in the state's readouts, its alt text and the texts drawn in its figure (notes, labels), and
#   every stop of every control (a caption names settings: "decay 0.05", "as at offset 100.5").
# - agrees: the caption's number, written to its last digit 10^k, is the shown number rounded there (taken as exact:
#   |quoted - shown| <= 10^k / 2), so '0.18' agrees with 0.1798 and '0.17' does not. A percentage x% also agrees
#   with a shown fraction x/100 or growth factor 1 + x/100 ("adds 3.9% (factor 1.0392)").
NUMBER = re.compile(r"(?<![\w.^])([+\-−±]?)(\d+(?:\.\d+)?(?:e[+\-−]?\d+)?)(?![\w.]*\d)(\s?%)?", re.IGNORECASE)
COUNT = re.compile(r"(?<![\w.])\d+(?:/| of )\d+(?![\w.]*\d)")
NOT_QUOTED = re.compile(r"(\bsection|less than|more than|below|above|under|at most|at least)\s+$", re.IGNORECASE)

# A caption that compares its state with another one: (explorable, preset) -> the other preset (None: the
# defaults), whose shown numbers count too.
COMPARED_WITH = {
    ("batch_vs_layer_norm", "batch 64"): "batch 8",                       # "from 0.131 to 0.049"
    ("rms_norm_offset", "offset 10"): "offset 100.5",                     # "at 100.5 that ratio is 0.01699"
    ("scale_invariance_step", "|W| 10 times"): None,                      # "instead of 17.42°"
    ("scale_invariance_step", "|W| 10 times, decay 0.05"): "decay 0.05",  # "as from |W| = 2.75"
    ("overview_stack_depth", "LayerNorm, pre-norm, depth 64"): "RMSNorm, pre-norm, depth 64",   # "RMSNorm's 9.573"
}
# Numbers a caption computes itself from the state's settings, checked by that arithmetic: (explorable, preset,
# quoted) -> the value from the control values.
COMPUTED = {
    ("gain_depth", "gain 1.024, depth 96", "0.024"): lambda v: math.log(10) / v["depth"],
    ("pre_post_sensitivity", "gain 1.5, bias 0.5", "2.5"): lambda v: 1 + v["gain"],
    ("pre_post_sensitivity", "gain 1.5, bias 0.5", "3.0"): lambda v: 1 + v["gain"] + abs(v["bias"]),
    ("layer_norm_spread", "epsilon 0.01", "2.917"): lambda v: v["spread"] ** 2,        # "variance 2.917"
    ("layer_norm_affine", "gamma 0.5, beta 1", "1.5"): lambda v: v["beta"] + v["gamma"],   # the dashed lines
}
# Numbers a caption reads off a plotted curve or cloud, which no text shows: (explorable, preset, quoted) -> (the
# line's legend label, x), checked against the mean of that line's points within half a unit of x.
PLOTTED = {
    ("batch_vs_layer_norm", "batch 32", "+1.5"): ("BatchNorm, 40 batches", 0),   # the clouds' centres
    ("batch_vs_layer_norm", "batch 32", "-1.6"): ("BatchNorm, 40 batches", 4),
    ("pre_post_fd_error", "reference setting", "7e-5"): ("post-norm", 1),
    ("pre_post_fd_error", "float64", "7e-6"): ("pre-norm", 1),
    ("pre_post_fd_error", "float64, h 1e-7", "0.12"): ("post-norm", 256),
}
# Numbers no single point shows, not checked: (explorable, preset) -> the numbers.
UNCHECKED = {
    ("pre_post_fd_error", "float64"): ("6e-5",),   # "between 7e-6 and 6e-5": a bound over both curves (largest 5.4e-5)
}
# Small numbers the rule above leaves out, checked by hand: (explorable, preset, readout, text it shows, text the
# caption quotes). An integer below 100 stated as a result ("9 distinct", "exactly 1", "step 2") cannot be told from
# a depth, a layer or a seed number by its shape, and NaN and inf are words; these rows pin the ones the captions
# rest on.
SMALL_NUMBERS = [
    ("teaser_stack_magnitude", "gain 1", "no normalization", "by 2", "factor 2 "),
    ("teaser_stack_magnitude", "depth 48", "post-norm", "|h| = 2;", "flat at 2"),
    ("batch_vs_layer_norm", "batch 1", "BatchNorm pools", "6 values (1 example × 6 positions)", "6 positions"),
    ("scale_offset_standardize", "offset 100000", "one-pass variance E[x²] - E[x]²", "0 in float32", "to 0"),
    ("scale_offset_standardize", "offset 100000, scale 0.0001", "mean, variance, std", "100000, 0, 0", "is 0"),
    ("layer_norm_eps", "scale 0, epsilon 0", "output", "NaN", "NaN"),
    ("layer_norm_affine", "gamma 2", "output", "variance 3.99999", "gamma² = 4"),
    ("layer_norm_spread", "epsilon 0, spread 1e-6", "output std (LayerNorm, float64)", "1", "flat at 1"),
    ("norm_geometry", "offset", "y · 1", "LayerNorm 0,", "y · 1 = 0"),
    ("compare_precision", "offset 100, bfloat16", "RMSNorm", "9 distinct stored values of 41", "9 distinct"),
    ("compare_precision", "offset 100, float16", "RMSNorm", "26 distinct stored values of 41", "26 distinct"),
    ("compare_precision", "offset 10000", "RMSNorm", "error after re-stretch 1", "error is 1"),
    ("compare_variance", "float16, offset 100", "one-pass", "+inf: overflow", "returns inf"),
    ("pre_post_sensitivity", "gain 0", "pre-norm", "sensitivity 1 (1 × its depth-1 value)", "exactly 1"),
    ("pre_post_final_norm", "final norm on", "pre-norm", "|out| 2,", "at 2"),
    ("pre_post_fd_error", "float32, h 1e-7", "measured exactly 0", "post-norm from depth 2; pre-norm from depth 4",
     "from depth 2 (post-norm) or 4"),
    ("fail_first", "no norm, depth 8", "loss", "at step 2, 2, 2", "(step 2)"),
    ("fail_first", "post-norm, depth 8, lr 0.1", "loss", "at step 8, 7, 9", "steps 8, 7 and 9"),
]


def quoted_numbers(text: str) -> list[tuple[str, Decimal, Decimal, bool, bool]]:
    """(as written, value, half its last digit, percent, '±') for each number `text` quotes (the rule above)."""
    out = []
    for m in NUMBER.finditer(text):
        sign, digits, percent = m.group(1), m.group(2).replace("−", "-").lower(), bool(m.group(3))
        if NOT_QUOTED.search(text[:m.start()]):
            continue
        if not ("." in digits or "e" in digits or percent or len(digits) >= 3):
            continue
        d = Decimal(digits)
        out.append((m.group(0).strip(), -d if sign in ("-", "−") else d, Decimal(5).scaleb(d.as_tuple().exponent - 1),
                    percent, sign == "±"))
    return out


def shown_numbers(texts) -> list[Decimal]:
    return [Decimal(m.group(2).replace("−", "-").lower()) * (-1 if m.group(1) in ("-", "−") else 1)
            for t in texts for m in NUMBER.finditer(t)]


def agrees(quoted: tuple, shown: Decimal) -> bool:
    _, value, half, percent, both = quoted
    for v in [shown, shown * 100, (shown - 1) * 100] if percent else [shown]:
        if any(abs(q - v) <= half for q in ([value, -value] if both else [value])):
            return True
    return False


def plotted_value(exp, values: dict, line: str, x: float) -> Decimal:
    """The mean y of the points within half a unit of x of the line labelled `line`, drawn at control `values`."""
    exp.render(**values)
    found = [a.get_xydata() for ax in exp.figure().axes for a in ax.get_lines() if a.get_label() == line]
    assert found, f"{exp.name}: no line labelled {line!r} (PLOTTED in tests/test_catalog.py)"
    xy = np.asarray(found[0], dtype=float)
    return Decimal(repr(float(xy[abs(xy[:, 0] - x) < 0.5, 1].mean())))


def shown_texts(exp, values: dict) -> list[str]:
    """The readouts, the alt text and the figure's drawn texts at control `values`, and the controls' stops."""
    f = exp.render(**values)
    fig = exp.figure()
    drawn_texts = [t.get_text() for t in [*fig.texts, *(t for ax in fig.axes for t in ax.texts)] if t.get_visible()]
    stops = [str(v) for c in exp.controls.values() for v in c.positions()]
    return [*f.readouts.values(), f.alt, *drawn_texts, *stops]


@pytest.mark.parametrize("name", NAMES)
def test_every_number_a_caption_quotes_is_one_its_state_shows(name):
    """Each preset's caption quotes only numbers its state shows (the rule above), and its counts as shown."""
    exp, wrong = get(name), []
    for label, p in exp.presets.items():
        values = exp.preset_values(label)
        texts = shown_texts(exp, values)
        if (name, label) in COMPARED_WITH:
            other = COMPARED_WITH[name, label]
            texts += shown_texts(exp, exp.defaults() if other is None else exp.preset_values(other))
        shown = shown_numbers(texts)
        for q in quoted_numbers(p.notice):
            if q[0] in UNCHECKED.get((name, label), ()):
                continue
            if (name, label, q[0]) in PLOTTED:
                plotted = plotted_value(exp, values, *PLOTTED[name, label, q[0]])
                if not agrees(q, plotted):
                    wrong.append(f"preset {label!r}: the caption reads {q[0]} off the plot, which draws {plotted:.4g}")
            elif (name, label, q[0]) in COMPUTED:
                computed = Decimal(repr(float(COMPUTED[name, label, q[0]](values))))
                if not agrees(q, computed):
                    wrong.append(f"preset {label!r}: the caption computes {q[0]}, the settings give {computed}")
            elif not any(agrees(q, s) for s in shown):
                wrong.append(f"preset {label!r}: the caption quotes {q[0]}; the state shows "
                             f"{', '.join(f'{s:g}' for s in sorted({float(s) for s in shown}, key=abs))}")
        counts = " ".join(texts)
        wrong += [f"preset {label!r}: the caption counts {c!r}; the state shows no {c!r}"
                  for c in COUNT.findall(p.notice) if not re.search(rf"(?<![\w.]){re.escape(c)}(?![\w.]*\d)", counts)]
    assert not wrong, (f"{name}: a caption quotes a number its state does not show. Correct the caption (the "
                       f"Preset notice in {exp.setup.__module__.replace('.', '/')}.py) or the readout it quotes; a "
                       "comparison with another state goes into COMPARED_WITH, the caption's own arithmetic into "
                       "COMPUTED, a value read off a curve into PLOTTED (tests/test_catalog.py).\n" + "\n".join(wrong))


def test_the_exceptions_to_the_caption_rule_name_what_the_captions_still_say():
    """Each entry of COMPARED_WITH, COMPUTED, PLOTTED and UNCHECKED names a preset whose caption still quotes it."""
    stale = [k for k in COMPARED_WITH if k[1] not in get(k[0]).presets or (v := COMPARED_WITH[k]) is not None
             and v not in get(k[0]).presets]
    stale += [k for k in [*COMPUTED, *PLOTTED]
              if k[2] not in [q[0] for q in quoted_numbers(get(k[0]).presets[k[1]].notice)]]
    stale += [(k, q) for k, qs in UNCHECKED.items() for q in qs
              if q not in [n[0] for n in quoted_numbers(get(k[0]).presets[k[1]].notice)]]
    assert not stale, f"entries in tests/test_catalog.py that no caption quotes any more; delete them: {stale}"


@pytest.mark.parametrize(("name", "label", "readout", "shown", "quoted"), SMALL_NUMBERS,
                         ids=[f"{n}:{p}:{k}" for n, p, k, *_ in SMALL_NUMBERS])
def test_a_small_number_a_caption_quotes_is_what_the_readout_shows(name, label, readout, shown, quoted):
    exp = get(name)
    readouts = exp.render(**exp.preset_values(label)).readouts
    assert shown in readouts[readout], f"{name} at {label!r}: {readout} reads {readouts[readout]!r}"
    assert quoted in exp.presets[label].notice, (f"{name} at {label!r}: the caption no longer says {quoted!r}; "
                                                 "update this row of SMALL_NUMBERS in tests/test_catalog.py")


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


def test_a_layout_is_kept_under_a_key_that_names_everything_its_fit_depends_on(tmp_path, monkeypatch):
    """normlab_core/interactive/layouts.py: the key changes with any byte of the library's files, the layout, the
    inputs, the stops and matplotlib's text and axes settings; a learner's own setup or input type is never kept; a
    kept layout that does not fit the figure, or is none, is fitted afresh and replaced; NORMLAB_LAYOUT_CACHE=off
    keeps nothing, nor does a process without a home folder."""
    import shutil

    from normlab_core.interactive import Explorable
    from normlab_core.residual import Affine

    copied = tmp_path / "normlab_core"
    shutil.copytree(layouts.PACKAGE, copied, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(layouts, "PACKAGE", copied)
    digest = layouts.source_digest.__wrapped__
    before = digest()
    for path in [copied / "figures" / "s04_layer_norm.py", copied / "data" / "fail_first.json.gz"]:
        data = path.read_bytes()
        path.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
        assert digest() != before, f"a change to {path.name} must change the layouts' key"
        path.write_bytes(data)
        assert digest() == before

    exp = get("pre_post_final_norm")
    start = {**exp.resolve({})[0], **exp.resolve({})[1]}
    key = layouts.key(exp, False, start, 180)
    assert key is not None
    others = [layouts.key(exp, True, start, 270), layouts.key(exp, False, {**start, "eps": 1e-3}, 180),
              layouts.key(exp, False, {**start, "sublayer": Affine(0.7, 0.2)}, 180),
              layouts.key(exp, False, {**start, "x0": start["x0"][:-1]}, 180),
              layouts.key(exp.at(depth=7), False, start, 180)]
    import matplotlib

    with matplotlib.rc_context({"font.family": "serif"}):   # a learner's own matplotlib settings
        others.append(layouts.key(exp, False, start, 180))
    assert None not in others and len({key, *others}) == len(others) + 1

    class Own(Affine):   # a learner's own sublayer, and a learner's own setup
        pass

    assert layouts.key(exp, False, {**start, "sublayer": Own(0.7, 0.2)}, 180) is None
    toy = Explorable("toy", title="toy", controls=exp.controls, setup=lambda fig, narrow, **kw: exp.setup(
        fig, narrow=narrow, **kw), update=exp.update, inputs=exp.inputs)
    assert layouts.key(toy, False, start, 180) is None

    monkeypatch.setenv("NORMLAB_LAYOUT_CACHE", str(tmp_path / "kept"))
    for other, narrow in [("gain_depth", True), ("pre_post_final_norm", False)]:   # (gain_depth has a colorbar)
        first, second = copy(get(other)), copy(get(other))
        picks = [{}] + [first.preset_values(p) for p in first.presets]
        frames = [first.render(narrow=narrow, **values).png for values in picks]
        assert [second.render(narrow=narrow, **values).png for values in picks] == frames, other
        (fitted,), (kept,) = first._drawings.values(), second._drawings.values()
        assert fitted.fitted and not kept.fitted and kept.layout == fitted.layout, other

    fresh = copy(exp)
    fresh.render()
    (drawing,) = fresh._drawings.values()
    good = layouts.load(drawing.key)
    assert good == drawing.layout and len(good["axes"]) == len(drawing.fig.axes)
    for bad in [{"axes": good["axes"][:-1], "sup": {}},                      # kept for a figure with other axes
                {"axes": [{**a, "box": "nonsense"} for a in good["axes"]], "sup": {}}, ["not", "a", "layout"]]:
        layouts.store(drawing.key, bad)
        again = copy(exp)
        assert again.render().png == fresh.render().png
        assert next(iter(again._drawings.values())).fitted and layouts.load(drawing.key) == good

    monkeypatch.setenv("NORMLAB_LAYOUT_CACHE", "off")
    shutil.rmtree(tmp_path / "kept")
    copy(exp).render()
    assert layouts.folder() is None and not (tmp_path / "kept").exists()

    def no_home():
        raise RuntimeError("Could not determine home directory")

    monkeypatch.delenv("NORMLAB_LAYOUT_CACHE")
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setattr(layouts.Path, "home", staticmethod(no_home))   # a sandbox without a home folder
    assert layouts.folder() is None and copy(exp).render().png == fresh.render().png
