"""The live face's kernel side on the toy explorable, without a browser (tests/test_lab.py drives it in JupyterLab):
the first frame, a request by state key (free values too) drawn by the worker, states drawn ahead and sent as
binary messages, errors shown on the figure, the fallback figure a reopened notebook shows, and show()'s checks."""

from __future__ import annotations

import base64
from pathlib import Path

import numpy as np
import pytest
from explorable_support import toy

from normlab_core.interactive import live


def receive(view, content: dict) -> None:
    """A message from the browser, as the kernel hands it to the widget's comm (anywidget's `model.send`)."""
    view.comm.handle_msg({"content": {"data": {"method": "custom", "content": content}}, "buffers": []})


@pytest.fixture
def view():
    v = live.LiveView(toy(), x=[0.0, 4.0, 1.0])
    sent = []
    v.send = lambda content, buffers=None: sent.append((content, buffers))
    v.sent = sent
    yield v
    v.close()


def test_state_keys_name_stops_by_index_and_typed_values_by_value():
    exp = toy()
    assert live.LiveView(exp, scale=2.5, kind="band").spec["start"] == ["=2.5", 2, 1]
    assert live.key_values(exp, "=2.5,2,1") == {"scale": 2.5, "count": 4, "kind": "band"}
    with pytest.raises(ValueError, match="scale takes one of the stops"):
        live.key_values(exp, "=11,2,1")
    with pytest.raises(ValueError, match="does not name 3 controls"):
        live.key_values(exp, "1,2")


def test_the_first_frame_is_the_learners_data_at_the_start(view):
    f = view.frame
    assert f["key"] == "1,2,0" and f["layout"] == "wide" and f["by"] == ""
    own = toy().render(x=[0.0, 4.0, 1.0])
    assert f["png"] == own.png and f["alt"] == own.alt and f["rows"] == [list(r) for r in own.readouts.items()]
    assert f["labels"] == ["1", "4", "plain"]
    s = view.spec
    assert s["start"] == [1, 2, 0] and s["controls"][0]["free"] == [0.0, 10.0, False] and s["keep"] == live.KEEP
    assert view in live.views()


def test_a_request_is_drawn_and_goes_to_every_view_with_who_asked(view):
    receive(view, {"want": "=2.5,1,1", "layout": "narrow", "view": "tab-a"})
    assert view.wait()
    f = view.frame
    assert (f["key"], f["layout"], f["by"], f["labels"]) == ("=2.5,1,1", "narrow", "tab-a", ["2.5", "2", "band"])
    assert f["png"] == toy().render(narrow=True, scale=2.5, count=2, kind="band", x=[0.0, 4.0, 1.0]).png
    assert view.drawn == {"scale": 2.5, "count": 2, "kind": "band"} and view.draws == 1


def test_states_asked_for_ahead_are_drawn_and_sent_with_the_png_as_binary(view):
    receive(view, {"ahead": ["2,2,0", "3,2,0"], "layout": "wide"})
    assert view.wait()
    keys = [c["key"] for c, _ in view.sent]
    assert keys == ["2,2,0", "3,2,0"] and all(c["ahead"] and c["png"] is None for c, _ in view.sent)
    content, buffers = view.sent[1]
    assert buffers[0] == toy().render(scale=4.0, x=[0.0, 4.0, 1.0]).png and content["labels"] == ["4", "4", "plain"]
    assert view.frame["key"] == "1,2,0", "drawing ahead does not change what is shown"


def test_a_request_beats_the_states_ahead_and_a_burst_draws_the_latest(view):
    receive(view, {"ahead": ["0,0,0", "0,1,0", "0,2,0"], "layout": "wide"})
    for key in ("2,2,0", "3,2,0", "3,3,1"):
        receive(view, {"want": key, "layout": "wide", "view": "a"})
    assert view.wait()
    assert view.frame["key"] == "3,3,1" and view.draws <= 2


def test_a_state_that_cannot_be_drawn_is_explained_on_the_figure(view):
    receive(view, {"want": "=99,2,0", "layout": "wide", "view": "a"})
    assert view.wait()
    assert view.frame["key"] == "=99,2,0" and "scale=99 is not allowed; scale takes" in view.frame["error"]


def test_the_output_carries_a_figure_for_where_the_widget_cannot_be_shown(view, monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj, **kw: shown.append((obj, kw)))
    view._ipython_display_()
    (fallback, kw1), (widget, kw2) = shown
    assert kw1["raw"] and kw2["raw"] and "application/vnd.jupyter.widget-view+json" in widget
    html = fallback["text/html"]
    assert base64.b64encode(view.first.png).decode("ascii") in html
    assert "run the notebook (Run > Run All Cells)" in fallback["text/plain"]
    assert "nl-fallback" in html and ":has(.normlab-live)" in html and f"alt='{view.first.alt}'" in html


def test_show_checks_the_learners_inputs_before_it_shows_anything(monkeypatch):
    from normlab_core import display, figures

    monkeypatch.setattr(figures, "get", lambda name: toy())
    monkeypatch.delenv("NORMLAB_STATIC", raising=False)
    with pytest.raises(TypeError, match=r"x must be a 1-D list or array of 2 to 64 finite numbers; got dict"):
        display.show("toy", x={"a": 1})
    with pytest.raises(ValueError, match="no control or input named"):
        display.show("toy", y=np.zeros(3))


EXIT_WHILE_DRAWING = r"""
import atexit, sys, threading, time
sys.path.insert(0, {tests!r})
sent, log = [], []

def after_the_library():   # registered before normlab_core is imported, so it runs after the library's handler
    n = len(sent)
    time.sleep(0.6)   # three more slow frames' time: a worker still drawing ahead would send again
    workers = [t.name for t in threading.enumerate() if t.name.startswith("normlab-")]
    print("EXIT", n, len(sent), workers, log[-1] if log else "none", flush=True)

atexit.register(after_the_library)
from explorable_support import toy
from normlab_core.interactive import live

exp = toy()
render = exp.render
def slow(**kw):
    log.append("drawing")
    time.sleep(0.2)
    out = render(**kw)
    log.append("drawn")
    return out
exp.render = slow
view = live.LiveView(exp, x=[0.0, 4.0, 1.0])
view.send = lambda content, buffers=None: sent.append(content["key"])
view.comm.handle_msg({{"content": {{"data": {{"method": "custom", "content":
    {{"ahead": ["0,0,0", "0,1,0", "0,2,0", "1,0,0", "1,1,0", "2,0,0"], "layout": "wide"}}}}}}, "buffers": []}})
time.sleep(0.3)   # the worker is inside its second frame ahead
sys.exit(0)
"""


def test_a_kernel_that_exits_while_frames_are_drawn_ahead_sends_nothing_after_the_library_stops():
    """At exit (a notebook closed, a kernel shut down) the library's handler runs before the kernel's and pyzmq's:
    it lets the frame in progress finish and be sent, then no view draws or sends again. (A frame handed to the
    kernel's IOPub thread after pyzmq had closed its garbage collector printed a traceback in the server log.)"""
    import subprocess
    import sys
    from pathlib import Path

    code = EXIT_WHILE_DRAWING.format(tests=str(Path(__file__).parent))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={"MPLBACKEND": "Agg", "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    line = [ln for ln in out.stdout.splitlines() if ln.startswith("EXIT")]
    assert line, out.stdout + out.stderr
    _, at_stop, later, workers, last = line[0].split(" ", 4)
    assert 1 <= int(at_stop) < 6, line      # some frames ahead went out, not all six
    assert later == at_stop, f"{int(later) - int(at_stop)} frames sent after the library stopped: {line}"
    assert workers == "[]" and last == "drawn", line    # the worker ended, after finishing its frame


def test_save_png_writes_the_frame_the_figure_shows(view, tmp_path):
    receive(view, {"want": "3,1,1", "layout": "wide", "view": "a"})
    assert view.wait()
    out = view.save_png(tmp_path / "shown.png")
    assert out.read_bytes() == toy().render(scale=4.0, count=2, kind="band", x=[0.0, 4.0, 1.0]).png
    with pytest.raises(TypeError, match="path must be a file name"):
        view.save_png(3)


def _notebook_with_a_quoted_number(data: dict):
    import nbformat

    md = nbformat.v4.new_markdown_cell("The input has {eval}`n` numbers.")
    # as JupyterLab 4 saves a Markdown cell whose expression it evaluated: `trusted: false`, the result beside it
    md.metadata.update(trusted=False, user_expressions=[{"expression": "n", "result": {"status": "ok",
                                                                                        "data": data}}])
    code = nbformat.v4.new_code_cell("n = 4", outputs=[nbformat.v4.new_output(
        "display_data", {"text/html": "<b>4</b>", "text/plain": "4"})])
    code.metadata["trusted"] = True
    return nbformat.v4.new_notebook(cells=[code, md])


def test_the_learners_notary_signs_a_run_notebook_whose_quoted_numbers_are_plain_text(tmp_path):
    """A notebook run and saved in `make lab` opens trusted again (so its live views come back): the learners'
    server signs it although JupyterLab marks its Markdown cells untrusted; a quoted result in HTML still needs the
    cell's own trust. Fix in lab/normlab_notary.py."""
    import sys

    import nbformat

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "lab"))
    from normlab_notary import NormlabNotary

    notary = NormlabNotary(data_dir=str(tmp_path))
    nb = _notebook_with_a_quoted_number({"text/plain": "4"})
    assert notary.check_cells(nb)
    notary.sign(nb)
    reread = nbformat.reads(nbformat.writes(nb), 4)   # as saved to disk and opened again
    assert notary.check_signature(reread)
    assert not notary.check_cells(_notebook_with_a_quoted_number({"text/html": "<b>4</b>", "text/plain": "4"}))
