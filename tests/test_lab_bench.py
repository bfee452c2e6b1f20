"""train() as a lab bench, the rest: a stopped run is kept and stops a Run All, the live figure (warm-up shaded,
both loss lines in view, words in its title, drawn before the first step, plain numbers on its axis), and
compare() of runs, beside the stored seeds of their configuration."""

from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from normlab_core import data, training
from normlab_core import training_live as live
from normlab_core.transformer import Config

TINY = dict(depth=1, d_model=8, heads=2, d_ff=16)


@pytest.fixture
def shown(monkeypatch):
    """What train() and compare() display, in order (IPython objects, their PNG where they have one)."""
    import IPython.display

    out = []

    class Handle:
        def update(self, obj, **kwargs):
            out.append(obj)

    def display(*objs, display_id=None, **k):
        out.extend(objs)
        return Handle() if display_id else None

    monkeypatch.setattr(IPython.display, "display", display)
    monkeypatch.setattr(live, "in_kernel", lambda: True)      # as in JupyterLab (outside it train() writes text)
    monkeypatch.delenv("NORMLAB_STATIC", raising=False)
    return out


def png_size(png: bytes) -> tuple:
    return Image.open(io.BytesIO(png)).size


def test_train_shows_empty_axes_before_the_first_step(shown, monkeypatch):
    import base64

    seen_at_start = []
    real = training.run

    def run(*a, **k):
        seen_at_start.extend(shown)
        return real(*a, **k)

    monkeypatch.setattr(training, "run", run)
    live.train(lr=1e-2, steps=4, eval_every=2, **TINY, placement="pre")
    assert seen_at_start, "nothing was shown before training began"
    first = seen_at_start[0]
    assert isinstance(first, dict) and first.get("image/png"), f"the first output is {first!r}, not a drawn image"
    assert "training" in first["text/plain"].lower() and "<" not in first["text/plain"]    # words, not a repr
    w, h = png_size(base64.b64decode(first["image/png"]))
    assert w > 300 and h > 200


def test_a_stopped_run_is_kept_and_stops_the_cells_after_it(shown, monkeypatch):
    calls = []
    real = live.LiveLoss.draw

    def draw(self, run, status):     # the stop button: an interrupt arrives during the third evaluation's redraw
        calls.append(run)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(self, run, status)

    monkeypatch.setattr(live.LiveLoss, "draw", draw)
    with pytest.raises(KeyboardInterrupt, match="last_run"):
        live.train(lr=1e-2, steps=40, eval_every=5, **TINY, placement="pre")
    kept = live.last_run()
    assert isinstance(kept, training.Run) and kept.interrupted
    assert 0 < len(kept.loss) < 40 and list(kept.eval_steps[:2]) == [0, 5]


def fake_run(loss, eval_loss, warmup=0.15, steps=40, **cfg):
    n = len(loss)
    ev = np.arange(0, n + 1, 10)[: len(eval_loss)]
    return training.Run(Config(**{**TINY, **cfg}), 0.01, steps, warmup, 0, loss=np.asarray(loss, float),
                        eval_steps=ev, eval_loss=np.asarray(eval_loss, float),
                        eval_accuracy=np.full(len(eval_loss), 0.5))


def test_the_live_figure_shades_the_warm_up_and_titles_in_words():
    fig = live.LiveLoss(Config(**TINY, norm="rms_norm", qk_norm=True), 0.01, 40, 0.15, 2, "C0")
    png = fig.draw(None, "starting")
    assert png_size(png)[0] > 300
    spans = [p for p in fig.ax.patches if p.get_width() > 0]
    assert [(round(p.get_x()), round(p.get_width())) for p in spans] == [(0, 6)]      # 15 % of 40 steps
    title = fig.ax.get_title(loc="left")
    assert "RMSNorm" in title and "QK-norm" in title and "lr 0.01" in title
    assert not re.search(r"rms_norm|layer_norm|qk_norm|_", title), title


@pytest.mark.parametrize("top", [3.0, 9.0, 1e30])
def test_both_loss_lines_stay_in_view_with_plain_numbers(top):
    fig = live.LiveLoss(Config(**TINY), 0.01, 40, 0.0, 0, "C0")
    loss = np.linspace(2.0, top, 30)
    run = fake_run(loss, [2.5, 2.0, top / 2], warmup=0.0)
    fig.draw(run, "step 30")
    low, high = fig.ax.get_ylim()
    for line in (fig.train_line, fig.eval_line):
        y = np.asarray(line.get_ydata(), float)
        assert len(y) and low <= y.min() and y.max() <= high, (line.get_label(), low, high)
    assert fig.eval_line.get_linestyle() == "None"    # dots: no line of their own over the training loss
    fig.fig.canvas.draw()
    labels = [t.get_text() for t in fig.ax.get_yticklabels() if t.get_text()]
    assert labels and all(re.fullmatch(r"[−-]?[0-9.]+(e[−+-]?[0-9]+)?", t) for t in labels), labels


def test_compare_overlays_runs_and_the_stored_seeds_of_their_configuration(shown):
    exp = data.load()
    stored = exp.select(placement="post", depth=6, lr=0.01, warmup=0.0)
    assert len(stored) == 3
    a = training.Run(Config(depth=6, placement="post"), 0.01, 500, 0.0, 7, loss=np.linspace(3.0, 2.8, 500),
                     eval_steps=np.array([0, 500]), eval_loss=np.array([3.0, 2.8]), eval_accuracy=np.array([0.1, 0.1]))
    b = fake_run(np.linspace(2.9, 0.1, 40), [2.9, 1.0, 0.5, 0.1, 0.1], warmup=0.0, placement="pre")
    fig = live.compare_figure([a, b], stored=True)
    ys = [np.asarray(line.get_ydata(), float) for line in fig.axes[0].lines]
    for r in (a, b):
        assert any(len(y) == len(r.loss) and np.array_equal(y, r.loss) for y in ys)
    for s in stored:                   # each stored seed of a's configuration, as the data file has it
        want = np.array(s["loss"], float)
        assert any(len(y) == len(want) and np.allclose(y, want, equal_nan=True) for y in ys), s["seed"]
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert any("stored seeds, 0/3 solved" in t for t in legend), legend       # b's configuration is not stored
    assert any(t.startswith("B: stored seeds, not run") for t in legend), legend
    live.compare(a, b)
    assert len(shown) == 1


def test_compare_names_a_bad_argument(tmp_path):
    with pytest.raises(TypeError, match="argument 2 is dict"):
        live.compare(fake_run([2.0], [2.0]), {"loss": []})
    with pytest.raises(TypeError, match="at least one run"):
        live.compare()
    path = fake_run([2.0, 1.5], [2.0]).save(tmp_path / "a.json")
    assert live.compare_figure([training.Run.load(path)]).axes


@pytest.mark.lab
def test_the_stop_button_during_run_all_keeps_the_run_and_stops_the_later_cells():
    """A kernel given three cells at once, as JupyterLab's Run All sends them: interrupted during the first
    train(), the second (another train()) must not start, and last_run() holds the stopped run."""
    import os
    import time

    from jupyter_client.manager import start_new_kernel

    km, kc = start_new_kernel(kernel_name="python3", env={**os.environ, "PYTHONPATH": os.getcwd()})
    try:
        setup = ("from normlab_core.training_live import train, last_run\n"
                 "T = dict(depth=2, d_model=16, heads=2, d_ff=32)")
        kc.execute_interactive(setup, timeout=120)
        first = kc.execute("train(lr=0.01, steps=5000, eval_every=5, **T)", stop_on_error=True)
        second = kc.execute("train(lr=0.01, steps=3, **T); print('second cell ran')", stop_on_error=True)
        drawn, deadline = 0, time.monotonic() + 120
        while drawn < 4 and time.monotonic() < deadline:      # wait for the live figure to update a few times
            msg = kc.get_iopub_msg(timeout=60)
            if msg["parent_header"].get("msg_id") == first and msg["msg_type"] in (
                    "display_data", "update_display_data", "comm_open", "comm_msg"):     # a figure or a redraw
                drawn += 1
        assert drawn >= 4
        km.interrupt_kernel()
        replies = {}
        while len(replies) < 2:
            reply = kc.get_shell_msg(timeout=120)
            replies[reply["parent_header"]["msg_id"]] = reply["content"]
        assert replies[first]["status"] == "error" and replies[first]["ename"] == "KeyboardInterrupt"
        assert replies[second]["status"] == "aborted", replies[second]
        out = []
        kc.execute_interactive("r = last_run(); print(r.interrupted, 0 < len(r.loss) < 5000, r.steps)",
                               output_hook=lambda m: out.append(m["content"].get("text", "")), timeout=60)
        assert "".join(out).split() == ["True", "True", "5000"]
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


# -- in JupyterLab: a reopened notebook, and a restarted kernel -----------------------------------------------------
SHOTS = Path(__file__).resolve().parents[1].parent / f"{Path(__file__).resolve().parents[1].name}-shots"
VISIBLE_OUTPUTS = """() => Array.from(document.querySelectorAll(
    '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell')).map(cell => ({
      source: cell.querySelector('.jp-InputArea-editor')?.innerText || '',
      outputs: Array.from(cell.querySelectorAll('.jp-OutputArea-child')).filter(c => c.checkVisibility())
        .map(c => ({text: c.innerText, img: Array.from(c.querySelectorAll('img')).some(i => i.naturalWidth > 0)}))
    }))"""


@pytest.fixture(scope="module")
def lab11():
    from browser_support import chromium_or_skip
    from lab_support import LabServer, launch
    from playwright.sync_api import sync_playwright

    executable = chromium_or_skip()
    with LabServer(["11_does_it_train.ipynb"]) as server, sync_playwright() as pw:
        browser = launch(pw, executable)
        yield server, browser
        browser.close()


@pytest.mark.lab
def test_reopened_notebook_11_shows_figures_and_no_object_reprs(lab11):
    """The notebook as stored, opened without running it: each explorable's fallback figure and the train cell's
    last drawing, and none of the texts a missing widget leaves (its repr, Image(value=b''...), HBox(...))."""
    from lab_support import LabPage

    server, browser = lab11
    page = LabPage(browser, server)
    try:
        page.open("11_does_it_train.ipynb")
        page.page.wait_for_timeout(4000)
        cells = page.page.evaluate(VISIBLE_OUTPUTS)
        texts = [o["text"] for c in cells for o in c["outputs"]]
        for bad in ("<live explorable", "Image(value=", "HBox(children", "IPython.core.display", "Error displaying"):
            assert not any(bad in t for t in texts), (bad, [t[:200] for t in texts if bad in t])
        shows = [c for c in cells if re.match(r"show\(\"train_", c["source"])]
        assert len(shows) == 3 and all(any(o["img"] for o in c["outputs"]) for c in shows), shows
        trains = [c for c in cells if c["source"].startswith("result = train(")]
        assert len(trains) == 1 and any(o["img"] for o in trains[0]["outputs"]), trains
        SHOTS.mkdir(exist_ok=True)
        page.page.evaluate("""() => { const w = window.jupyterapp.shell.currentWidget;
            const i = w.content.widgets.findIndex(c => c.model.sharedModel.source.startsWith('result = train('));
            w.content.activeCellIndex = i; w.content.scrollToItem(i, 'start'); }""")
        page.page.wait_for_timeout(800)
        page.page.screenshot(path=str(SHOTS / "lab-reopened-11-train-cell.png"))
    finally:
        page.close_notebook()
        page.close()


@pytest.mark.lab
def test_after_a_kernel_restart_no_control_can_be_used(lab11):
    """A live explorable, then a kernel restart: every control is disabled, by keyboard too, until the cell runs."""
    import nbformat
    from lab_support import LabPage

    server, browser = lab11
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "from normlab_core.display import show\nshow('train_qk_norm')")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, server.root / "zz_restart.ipynb")
    page = LabPage(browser, server)
    p = page.page
    try:
        page.open("zz_restart.ipynb")
        page.run_all()
        root = p.wait_for_selector(".jp-NotebookPanel:not(.lm-mod-hidden) .normlab-live", timeout=90000)
        slider = root.query_selector("[data-i='0']") or root.query_selector("input[type=range]")
        assert slider is not None
        slider.focus()
        assert root.evaluate("r => r.contains(document.activeElement)")    # usable before the restart
        p.evaluate("""async () => { const k = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
            await k.restart(); const t0 = Date.now();
            while (k.status !== 'idle' && Date.now() - t0 < 30000) await new Promise(r => setTimeout(r, 50)); }""")
        p.wait_for_function("r => r.querySelector('.nl-status').innerText.includes('restarted')", arg=root,
                            timeout=30000)
        state = root.evaluate("""r => ({
            focused: r.contains(document.activeElement),
            enabled: Array.from(r.querySelectorAll('input, select, button')).filter(n => !n.disabled).length,
            reachable: Array.from(r.querySelectorAll('.nl-controls *, .nl-presets *')).filter(n => {
              n.focus(); return document.activeElement === n; }).length,
            key: r.querySelector('img.nl-frame')?.src})""")
        assert state["focused"] is False and state["enabled"] == 0 and state["reachable"] == 0, state
        p.keyboard.press("Tab")
        for key in ("ArrowRight", "End", "Enter", " "):
            p.keyboard.press(key)
        after = root.evaluate("r => ({focused: r.contains(document.activeElement), "
                              "key: r.querySelector('img.nl-frame')?.src})")
        assert after == {"focused": False, "key": state["key"]}, after
        SHOTS.mkdir(exist_ok=True)
        root.scroll_into_view_if_needed()
        p.screenshot(path=str(SHOTS / "lab-after-restart.png"))
    finally:
        page.close_notebook()
        page.close()
