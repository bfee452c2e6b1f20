"""The "Check yourself" questions (normlab_core/questions): every answer key is right and every distractor is
wrong, each judged here by a computation of its own (plain numpy formulas, finite differences, the stored runs read
directly), not by the declaration's code. Also: every section of the book has its questions, and
scripts/add_question_cells.py puts them in each notebook once.

A failure names the question: fix its declaration in normlab_core/questions/<section>.py, or, if the book changed,
its checker here. After editing the cells' script run `.venv/bin/python -m scripts.add_question_cells`."""

from __future__ import annotations

import copy
import json
import math

import nbformat
import numpy as np
import pytest

from normlab_core import questions as Q
from scripts import add_question_cells as cells
from scripts.toc import ROOT, toc_pages

ALL = [(label, q) for label in Q.SECTIONS for q in Q.questions(label)]


# -- independent formulas --------------------------------------------------------------------------------------
def ln(x, eps=0.0):
    x = np.asarray(x, float)
    m = x.mean(-1, keepdims=True)
    return (x - m) / np.sqrt(((x - m) ** 2).mean(-1, keepdims=True) + eps)


def rms(x, eps=0.0):
    x = np.asarray(x, float)
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps)


def rmsnorm_stack(x0, depth, placement, a=0.5, b=0.1, eps=1e-6):
    """The toy stack written out: F(v) = a v + b, gamma-free RMSNorm."""
    h = np.asarray(x0, float)
    for _ in range(depth):
        if placement == "pre":
            h = h + a * rms(h, eps) + b
        elif placement == "post":
            h = rms(h + a * h + b, eps)
        else:
            h = h + a * h + b
    return h


def fd_sensitivity(x0, depth, placement, b, step=1e-6):
    e = np.zeros(len(x0))
    e[0] = step
    return np.linalg.norm(rmsnorm_stack(x0 + e, depth, placement, b=b) - rmsnorm_stack(x0 - e, depth, placement, b=b)
                          ) / (2 * step)


def numeric_grad(f, x, h=1e-6):
    g = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (f(x + e) - f(x - e)) / (2 * h)
    return g


def runs():
    import gzip
    from pathlib import Path

    from normlab_core import data as data_module

    path = Path(data_module.__file__).parent / "experiments.json.gz"
    return json.loads(gzip.decompress(path.read_bytes()))["runs"]


def solved_count(placement, depth, lr, warmup):
    got = [r for r in runs() if set(r["config"]) <= {"placement", "depth", "final_norm"}   # the plain LayerNorm runs
           and r["config"]["placement"] == placement and r["config"]["depth"] == depth
           and r["lr"] == lr and r["warmup"] == warmup and r.get("steps", 500) == 500]
    return sum(r["outcome"] == "solved" for r in got), len(got)


# -- per question: a number's value, or the truth of each option -----------------------------------------------
A = np.arange(98.0, 104.0)


def _axes():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(4, 5, 6)) * rng.uniform(0.5, 3, size=(1, 5, 1)) + rng.normal(size=(1, 5, 6))
    from normlab_core.norms import batch_norm_sequences, layer_norm
    bn, lnorm = batch_norm_sequences(x, eps=0.0), layer_norm(x, eps=0.0)

    def by(axes):
        m = x.mean(axes, keepdims=True)
        return (x - m) / np.sqrt(((x - m) ** 2).mean(axes, keepdims=True))

    bt, d = (0, 1), (2,)
    b = {k: np.allclose(bn, by(a)) for k, a in (("bt", bt), ("d", d))}
    lay = {k: np.allclose(lnorm, by(a)) for k, a in (("bt", bt), ("d", d))}
    return [b["bt"] and lay["d"], b["d"] and lay["bt"], b["d"] and lay["d"], b["bt"] and lay["bt"]]


def _batchmates():
    from normlab_core.norms import batch_norm_sequences, layer_norm
    rng = np.random.default_rng(4)
    x = rng.normal(size=(3, 4, 5))
    y = x.copy()
    y[2] = rng.normal(size=(4, 5)) * 5
    bn = not np.allclose(batch_norm_sequences(x)[0, 0], batch_norm_sequences(y)[0, 0])
    lnc = not np.allclose(layer_norm(x)[0, 0], layer_norm(y)[0, 0])
    return [bn and not lnc, lnc and not bn, bn and lnc, not bn and not lnc]


def _identity():
    h = np.array([1.0, -2.0, 0.5, 3.0])
    pre = h + 0.0 * rms(h, 1e-6)                 # F = 0
    post = rms(h + 0.0, 1e-6)
    p, q = np.allclose(pre, h), np.allclose(post, h)
    return [p and not q, q and not p, p and q, not p and not q]


def _who_grows():
    x0 = np.array([1.0, -0.5, 0.25, 2.0])
    grows = {p: np.linalg.norm(rmsnorm_stack(x0, 48, p)) > 5 * np.linalg.norm(rmsnorm_stack(x0, 2, p))
             for p in ("pre", "post")}
    return [grows["pre"] and not grows["post"], grows["post"] and not grows["pre"], grows["pre"] and grows["post"],
            not grows["pre"] and not grows["post"]]


def _backward_forms():
    x = np.array([0.3, -1.2, 2.0, 0.7, -0.4])
    g = np.array([1.0, -0.5, 0.25, 2.0, -1.5])
    eps = 1e-5
    truth = numeric_grad(lambda v: float(np.dot(g, ln(v, eps))), x)
    s = 1 / math.sqrt(x.var() + eps)
    xh = ln(x, eps)
    forms = [s * (g - g.mean() - xh * (g * xh).mean()), s * g, s * (g - g.mean()), s * (g - xh * (g * xh).mean())]
    return [np.allclose(f, truth, atol=1e-6) for f in forms]


def _scale():
    rng = np.random.default_rng(5)
    w, x, t = rng.normal(size=(3, 4)), rng.normal(size=(6, 4)), rng.normal(size=(6, 3))

    def loss(m):
        return float(((ln(x @ m.T) - t) ** 2).sum() / (2 * len(x)))

    g1 = numeric_grad(lambda v: loss(v.reshape(w.shape)), w.ravel())
    g3 = numeric_grad(lambda v: loss(v.reshape(w.shape)), 3 * w.ravel())
    same = math.isclose(loss(w), loss(3 * w), rel_tol=1e-9)
    r = np.linalg.norm(g3) / np.linalg.norm(g1)
    return [same and math.isclose(r, 1 / 3, rel_tol=1e-4), same and math.isclose(r, 1, rel_tol=1e-4),
            same and math.isclose(r, 3, rel_tol=1e-4), math.isclose(loss(3 * w), 9 * loss(w), rel_tol=1e-6)]


def _agree():
    def same(x):
        return np.allclose(ln(x), rms(x))
    mean0 = np.array([1.0, -3.0, 2.0])
    std1 = (lambda v: 10 + (v - v.mean()) / v.std())(np.array([1.0, 2.0, 4.0]))
    positive = np.array([1.0, 2.0, 4.0])
    return [same(mean0), same(std1), same(positive)]


def _token():
    from normlab_core.norms import layer_norm
    x = np.array([[0.5, -1.0, 2.0, 0.0], [4.0, 1.0, 3.0, 2.0]])
    base = layer_norm(x, eps=0.0)[0]
    own = x.copy()
    own[0, 1] = 1.5
    shifted, other, doubled = x.copy(), x.copy(), x.copy()
    shifted[0] += 7
    other[1] = [9.0, -9.0, 0.0, 1.0]
    doubled[0] *= 2
    return [not np.allclose(layer_norm(v, eps=0.0)[0], base) for v in (own, shifted, other, doubled)]


def _every_cell():
    grid = {(r["config"]["depth"], r["lr"], r["warmup"]) for r in runs()
            if set(r["config"]) <= {"placement", "depth", "final_norm"} and r["config"]["depth"] in (2, 6, 12, 24)
            and r["lr"] in (0.001, 0.003, 0.01) and r["warmup"] in (0.0, 0.15)}
    ok = {p: all(s == n > 0 for s, n in (solved_count(p, *c) for c in grid)) for p in ("pre", "post")}
    return [ok["pre"] and not ok["post"], ok["post"] and not ok["pre"], ok["pre"] and ok["post"],
            not ok["pre"] and not ok["post"]]


def _outcome(count):
    s, n = count
    return [s == n, s == 0, 0 < s < n]


x0 = np.array([1.0, -0.5, 0.25, 2.0])
FAR = rms(np.array([-1.0, 2.0, -3.0, 1.0]) + 1e4, 1e-5)
SHIFT = A + 1000

CHECKS = {
    "23.1-compound": lambda: 1.5 ** 10,
    "23.1-post-flat": lambda: (lambda n: [n[-1] > 2 * n[0], abs(n[-1] / n[0] - 1) < 1e-3, n[-1] < 0.5 * n[0]])(
        [np.linalg.norm(rmsnorm_stack(np.array([1.0, 2.0, 3.0, 4.0]), d, "post", b=0.0)) for d in (1, 48)]),
    "23.1-pre-wiring": lambda: [np.allclose(rmsnorm_stack(x0, 1, "pre"), f(x0)) for f in (
        lambda h: h + (0.5 * rms(h, 1e-6) + 0.1), lambda h: rms(h + 0.5 * h + 0.1, 1e-6),
        lambda h: 0.5 * rms(h, 1e-6) + 0.1)],
    "23.2-gain-up": lambda: math.exp(24 * math.log(1.1)),
    "23.2-gain-down": lambda: math.ceil(math.log(0.1) / math.log(0.95)),
    "23.2-axes": _axes,
    "23.2-batchmates": _batchmates,
    "23.3-variance": lambda: float(np.sum((A - A.sum() / 6) ** 2) / 6),
    "23.3-shift": lambda: (lambda s0, s1: [math.isclose(s1, s0), math.isclose(s1, s0 + 1000),
                                           math.isclose(s1, 1000 * s0),
                                           s0 < s1 < 1.5 * s0 and not math.isclose(s1, s0)])(A.std(), SHIFT.std()),
    "23.3-scale": lambda: (lambda r: [math.isclose(r, 10), math.isclose(r, 100), math.isclose(r, 1),
                                      math.isclose(r, 10 ** 0.5)])((10 * A).var() / A.var()),
    "23.3-span": lambda: 5 / math.sqrt(35 / 12),
    "23.4-offset": lambda: (lambda y0, y1: [np.allclose(y0, y1), np.allclose(y1, y0 + 50),
                                            np.all(np.abs(y1) < np.abs(y0)) and not np.allclose(y0, y1)])(
        ln(A, 1e-5), ln(A + 50, 1e-5)),
    "23.4-root-eps": lambda: 1 / math.sqrt(2),
    "23.4-flat": lambda: (lambda y: [np.array_equal(y, np.zeros(4)), np.array_equal(y, np.ones(4)),
                                     bool(np.all(np.isnan(y))), np.array_equal(y, np.full(4, 5.0))])(
        ln(np.full(4, 5.0), 1e-5)),
    "23.4-params": lambda: 2 * 512,
    "23.5-formula": lambda: (lambda x: [np.allclose(__import__("normlab_core").rms_norm(x, eps=1e-5), f(x)) for f in (
        lambda v: v / np.sqrt((v * v).mean() + 1e-5), lambda v: (v - v.mean()) / np.sqrt(v.var() + 1e-5),
        lambda v: v / np.sqrt(v.var() + 1e-5))])(np.array([3.0, -1.0, 4.0, 1.5])),
    "23.5-rms": lambda: math.sqrt((7.0 ** 2 + 1.0) / 2),
    "23.5-far": lambda: (lambda y, y0, yl: [bool(np.all(np.abs(y - 1) < 0.01)), np.allclose(y, y0),
                                            bool(np.all(np.abs(y) < 0.01)),
                                            math.isclose(np.ptp(y), np.ptp(yl), rel_tol=0.1)])(
        FAR, rms(np.array([-1.0, 2.0, -3.0, 1.0]), 1e-5), ln(np.array([-1.0, 2.0, -3.0, 1.0]), 1e-5)),
    "23.6-centred": lambda: (lambda x: (lambda a, b: [np.allclose(a, b), np.all(np.abs(b) > np.abs(a) * 1.01),
                                                       np.all(np.abs(b) < np.abs(a) * 0.99), np.allclose(a, 0)])(
        ln(x, 1e-5), rms(x, 1e-5)))(np.array([-1.5, 0.5, 2.0, -1.0])),
    "23.6-offset": lambda: (lambda x: (lambda r, c: [r and not c, c and not r, r and c, not r and not c])(
        not np.allclose(rms(x, 1e-5), rms(x + 10, 1e-5)), not np.allclose(ln(x, 1e-5), ln(x + 10, 1e-5))))(
        np.array([-1.5, 0.5, 2.0, -1.0])),
    "23.6-keep": lambda: 4 / 5,
    "23.7-identity": _identity,
    "23.7-sensitivity": lambda: (lambda a, b: [b < 0.5 * a, b > 2 * a, math.isclose(a, b, rel_tol=0.05)])(
        fd_sensitivity(x0, 1, "post", 0.1), fd_sensitivity(x0, 64, "post", 0.1)),
    "23.7-final-norm": lambda: (lambda a, b: [b > 2 * a, b < 0.5 * a, math.isclose(np.sqrt(np.mean(rmsnorm_stack(
        x0, 64, "pre") ** 2)), 1, rel_tol=0.01)])(np.linalg.norm(rmsnorm_stack(x0, 4, "pre")),
                                                   np.linalg.norm(rmsnorm_stack(x0, 64, "pre"))),
    "23.8-formula": _backward_forms,
    "23.8-sum": lambda: float(np.sum(numeric_grad(lambda v: float(np.dot([0.1, -0.2, 0.3, 0.4, -0.5], ln(v, 1e-5))),
                                                  np.array([1.0, 3.0, 2.0, 5.0, 4.0])))),
    "23.8-scale": _scale,
    "23.9-agree": _agree,
    "23.9-token": _token,
    "23.9-which-grows": _who_grows,
    "lab-every-cell": _every_cell,
    "lab-warmup-d6": lambda: _outcome(solved_count("post", 6, 0.01, 0.15)),
    "lab-warmup-d24": lambda: _outcome(solved_count("post", 24, 0.001, 0.15)),
}


# -- the tests -------------------------------------------------------------------------------------------------
def test_every_section_of_the_book_has_three_to_five_questions():
    """23.1-23.9 and the lab, by the notebooks of _toc.yml; each with 3 to 5 questions, ids unique."""
    stems = {cells.sections()[s] for s in cells.sections()}
    want = [p.split("/")[-1] for p in toc_pages() if p.startswith("notebooks/")
            and p.split("/")[-1][:2] in {"01", "02", "03", "04", "05", "06", "07", "08", "09", "11"}]
    assert sorted(cells.sections()) == sorted(want)
    assert stems == set(Q.SECTIONS)
    for label in Q.SECTIONS:
        assert 3 <= len(Q.questions(label)) <= 5, label
    ids = [q.id for _, q in ALL]
    assert len(ids) == len(set(ids))


def test_every_question_has_an_independent_check():
    assert sorted(CHECKS) == sorted(q.id for _, q in ALL), "add a checker here for every declared question"


@pytest.mark.parametrize("label,q", ALL, ids=[q.id for _, q in ALL])
def test_the_key_is_right_and_every_distractor_wrong(label, q):
    truth = CHECKS[q.id]()
    if isinstance(q, Q.Number):
        assert q.accepts(truth), f"{q.id}: declared {q.answer}, an independent computation gives {truth}"
        assert q.tol <= max(0.02 * abs(truth), 1e-6), f"{q.id}: tolerance {q.tol} accepts answers far from {truth}"
    else:
        assert len(truth) == len(q.options), f"{q.id}: the checker judges {len(truth)} options, not {len(q.options)}"
        assert truth[q.answer], f"{q.id}: the key {q.key()!r} is not right"
        also = [q.options[i] for i, t in enumerate(truth) if t and i != q.answer]
        assert not also, f"{q.id}: distractor(s) also right: {also}"


def test_numbers_have_typical_wrong_answers_outside_their_tolerance():
    """A tolerance wide enough to pass the misconception would make the question pointless."""
    wrong = {"23.1-compound": 1 + 0.5 * 10, "23.2-gain-up": 1 + 0.1 * 24, "23.3-variance": 17.5 / 5,
             "23.4-root-eps": 1.0, "23.4-params": 512, "23.5-rms": 4.0, "23.6-keep": 0.75}
    for _, q in ALL:
        if q.id in wrong:
            assert not q.accepts(wrong[q.id]), q.id


def test_a_bad_section_is_refused_by_name():
    with pytest.raises(ValueError, match="23.1.*got '24.1'"):
        Q.spec("24.1")


def test_the_static_html_carries_inert_json_only():
    html = Q.static_html("23.3")
    assert html.count("<script") == 1 and 'type="application/json"' in html
    spec = json.loads(html.split('class="nl-q-spec">')[1].split("</script>")[0])
    assert spec == json.loads(json.dumps(Q.spec("23.3")))


def test_the_cells_script_inserts_once_and_is_idempotent(tmp_path):
    """Every section notebook has the heading and the question cell once; running the script again changes
    nothing, and on a notebook without them it puts them before the trailing navigation."""
    known = cells.sections()
    for stem, label in known.items():
        nb = nbformat.read(ROOT / "notebooks" / f"{stem}.ipynb", as_version=4)
        ids = [c.get("id") for c in nb.cells]
        assert ids.count(cells.HEADING_ID) == ids.count(cells.CODE_ID) == 1, f"{stem}: run add_question_cells"
        code = nb.cells[ids.index(cells.CODE_ID)]
        assert ids.index(cells.CODE_ID) == ids.index(cells.HEADING_ID) + 1
        assert f'show_questions("{label}")' in code.source
        assert not cells.add(copy.deepcopy(nb), label), f"{stem}: re-running add_question_cells would change it"
        after = nb.cells[ids.index(cells.CODE_ID) + 1:]
        assert all(cells.NAVIGATION.match(c.source) for c in after), f"{stem}: questions not at the end"
    bare = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# T"), nbformat.v4.new_code_cell("1"),
                                           nbformat.v4.new_markdown_cell("Back: [a](a.ipynb). Next: [b](b.ipynb).")])
    assert cells.add(bare, "23.1")
    assert [c.get("id") for c in bare.cells][2:4] == [cells.HEADING_ID, cells.CODE_ID]
    assert not cells.add(bare, "23.1")


def test_the_frontend_judges_as_the_declaration(tmp_path):
    """frontend.js's rule for numbers (|value - answer| <= tol) and its parsing, run in Node against Number.accepts."""
    import shutil
    import subprocess

    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    js = (ROOT / "normlab_core/questions/frontend.js").read_text(encoding="utf-8").replace("export default { render };",
                                                                                      "")
    q = next(q for _, q in ALL if q.id == "23.4-root-eps")
    tries = ["0.7071", "0,707", "0.70", "7.071e-1", "1", "abc", "−0.7071"]
    prog = js + f"\nconst q = {json.dumps(q.data())};\nconsole.log(JSON.stringify({json.dumps(tries)}.map(" \
                "t => { const v = judge(q, t); return v === null ? null : v.ok; })));"
    out = subprocess.run([node, "-e", prog], capture_output=True, text=True, check=True).stdout
    got = json.loads(out)
    assert got == [True, True, q.accepts(0.70), True, False, None, False]
