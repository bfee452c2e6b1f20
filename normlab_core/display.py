"""Showing things in a notebook, the layer the notebooks import from: library source, static figures, the
static/live switch, and explorables (`show`, live in a kernel and pre-rendered in the book) with their "Try this"
lists. It sits above normlab_core.figures and normlab_core.interactive, which it imports where it shows them."""

from __future__ import annotations

import base64
import hashlib
import html
import inspect
import os
import textwrap
from pathlib import Path

from .blas_threads import single_blas_thread
from .canvas import DPI, FIGURE_SHARPNESS, NARROW_SHARPNESS, figure_png, palette_png
from .formatting import fmt_vector, ratio  # noqa: F401  (the notebooks take them from here)

STATIC_ENV = "NORMLAB_STATIC"
NARROW_FIGURES = "_figures"   # the folder, among the staged explorable frames, of static figures' narrow drawings


def static_mode() -> bool:
    """True while the book is being built (NORMLAB_STATIC=1): show HTML that needs no kernel."""
    return os.environ.get(STATIC_ENV) == "1"


_SHOWN: set[str] = set()   # qualified names show_source has displayed in this kernel session (this notebook)


def called_helpers(objs) -> tuple[list, list]:
    """The normlab_core functions the source of objs calls and does not itself include, one level deep:
    (maths helpers, input checks from _checks.py), each in order of first use."""
    import ast
    import types

    shown = {id(o) for o in objs}
    shown |= {id(f) for o in objs if inspect.ismodule(o) for f in vars(o).values()
              if getattr(f, "__module__", None) == o.__name__}                       # a module shows its own
    maths, checks = [], []
    for obj in objs:
        tree = ast.parse(textwrap.dedent(inspect.getsource(obj)))
        scope = getattr(obj, "__globals__", None) or vars(inspect.getmodule(obj))
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                fn = scope.get(node.id)
                if (isinstance(fn, types.FunctionType) and fn.__module__.startswith("normlab_core.")
                        and id(fn) not in shown):
                    shown.add(id(fn))
                    (checks if _is_check(fn) else maths).append(fn)
    return maths, checks


def _is_check(fn) -> bool:
    """An input check: from _checks.py, or a helper whose docstring says it validates or checks its inputs."""
    doc = (inspect.getdoc(fn) or "").split(" ", 1)[0]
    return fn.__module__.endswith("._checks") or doc in ("Check", "Validate")


def _qualname(obj) -> str:
    if inspect.ismodule(obj):        # a whole module, such as one norm's plain formulas (normlab_core/norms/)
        return obj.__name__
    return f"{obj.__module__}.{obj.__qualname__}"


def show_source(*objs) -> None:
    """Display the source of functions/classes/modules from normlab_core as one highlighted code block, then the
    library helpers they call: maths helpers in full (or a pointer, if this notebook showed them already), input
    checks by their one-line description."""
    from IPython.display import Markdown, display

    import normlab_core

    maths, checks = called_helpers(objs)
    public = [fn for fn in maths if fn.__name__ in normlab_core.__all__]
    new = [fn for fn in maths if _qualname(fn) not in _SHOWN and fn not in public]
    code = "\n\n".join(inspect.getsource(o).rstrip() for o in (*objs, *new))
    seen = [fn.__name__ for fn in maths if fn not in new and fn not in public]
    if public:
        code += ("\n\n# Also called above, normlab_core's public functions (each shown in its own section): "
                 + ", ".join(fn.__name__ for fn in public))
    if seen:
        code += "\n\n# Also called above, and shown earlier in this notebook: " + ", ".join(seen)
    if checks:
        lines = [f"#   {fn.__name__}: {inspect.getdoc(fn).splitlines()[0]}" for fn in checks]
        code += "\n\n# Input checks called above (normlab_core/_checks.py, _check_*/_options):\n" + "\n".join(lines)
    _SHOWN.update(_qualname(o) for o in (*objs, *new))
    display(Markdown(f"```python\n{code}\n```"))


@single_blas_thread
def show_figure(fig, *args, alt: str | None = None, caption: str = "", **kwargs) -> None:
    """Display a figure as PNG: a finished matplotlib Figure, or a function that draws one from `args` and
    `kwargs` and takes `narrow=True` for phones. Without alt, a plain image: the book takes its caption and alt
    text from the cell's metadata (myst-nb `mystnb.figure.caption`, `mystnb.image.alt`).

    While the book is built, a function's narrow drawing is staged beside the explorables' frames, named by the
    wide PNG's digest; scripts/place_frames.py then offers it to screens up to 600 px wide."""
    from IPython.display import HTML, Image, display

    draw = fig if callable(fig) else None
    if draw is None and (args or kwargs):
        raise TypeError("show_figure: arguments are for a drawing function; got a finished Figure as well")
    book = static_mode()
    figure = draw(*args, **kwargs) if draw else fig
    # the book draws at FIGURE_SHARPNESS x and gives the image its CSS size (sharp screens, 240 ppi in print)
    # in 256 colours: a figure at that density would otherwise weigh three times as much
    png = palette_png(figure_png(figure, dpi=DPI * FIGURE_SHARPNESS)) if book else figure_png(figure)
    width = round(figure.get_figwidth() * DPI)
    if book and draw is not None:
        stage_narrow(png, palette_png(figure_png(draw(*args, narrow=True, **kwargs), dpi=DPI * NARROW_SHARPNESS)))
    if book and alt is not None:
        src = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
        cap = f"<figcaption>{html.escape(caption)}</figcaption>" if caption else ""
        display(HTML(f"<figure class='normlab-figure'><img src='{src}' alt='{html.escape(alt)}' width='{width}' "
                     f"style='max-width:100%;height:auto'>{cap}</figure>"))
    elif book:
        display(Image(png, alt=alt, width=width))
    else:
        display(Image(png, alt=alt))


def stage_narrow(wide: bytes, narrow: bytes) -> Path:
    """Stage the narrow PNG of the figure whose wide PNG is `wide`, as <frames>/_figures/<sha256 of wide>.png."""
    from .interactive.static import frames_root

    path = frames_root() / NARROW_FIGURES / f"{hashlib.sha256(wide).hexdigest()}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(narrow)
    return path


def below_bound(err, bound: float, spec: str = "g") -> str:
    """A check's verdict as stored outputs print it: "below <bound>" when err < bound (the error itself is round-off,
    whose last digits change with the CPU), else the error and "ABOVE <bound>" (nan is above every bound)."""
    return f"below {bound:{spec}}" if err < bound else f"{float(err):.1e}, ABOVE {bound:{spec}}"


def try_this_markdown(exp, printable: bool = True) -> str:
    """The "Try this" list of an explorable's presets, as Markdown; `printable`: its first line also worded for
    print (the book's stylesheet shows one or the other; JupyterLab would show both, so it gets the screen's)."""
    screen = "Each button after <em>Try:</em> above the figure sets one of these states:"
    paper = "In the online book and in JupyterLab a button above the figure sets each of these states:"
    first = (f"<span class='nl-screen-only'>{screen}</span><span class='nl-print-only' hidden>{paper}</span>"
             if printable else screen)
    return "\n".join([f"**Try this.** {first}", ""] + [f"- **{label}**: {p.notice.strip()}"
                                                       for label, p in exp.presets.items()])


def try_this(name: str, **values_and_inputs):
    """The "Try this" list of explorable `name`, as IPython Markdown, its notices computed from the values and
    inputs given to show() (pass the same ones)."""
    from IPython.display import Markdown

    from .figures import get

    return Markdown(try_this_markdown(get(name).at(**values_and_inputs), printable=static_mode()))


def show(name: str, **values_and_inputs):
    """Display explorable `name`: live in a kernel, drawn from the inputs given (for example x=my_vector);
    pre-rendered over its stops while the book is built (NORMLAB_STATIC=1). It starts from the values given (or
    those its inputs call for), which become stops of its sliders (Explorable.at)."""
    from IPython.display import HTML, display

    from .figures import get
    from .interactive.live import LiveView
    from .interactive.static import static_html

    exp = get(name).at(**values_and_inputs)
    display(HTML(static_html(exp)) if static_mode() else LiveView(exp))
