"""Showing things in a notebook: library source, static figures, and the static/live switch."""

from __future__ import annotations

import base64
import html
import inspect
import os

from .style import figure_png

STATIC_ENV = "NORMLAB_STATIC"


def static_mode() -> bool:
    """True while the book is being built (NORMLAB_STATIC=1): show HTML that needs no kernel."""
    return os.environ.get(STATIC_ENV) == "1"


def show_source(*objs) -> None:
    """Display the source of functions/classes from normlab_core as a highlighted code block."""
    from IPython.display import Markdown, display

    code = "\n\n".join(inspect.getsource(o).rstrip() for o in objs)
    display(Markdown(f"```python\n{code}\n```"))


def show_figure(fig, alt: str, caption: str = "") -> None:
    """Display a finished matplotlib Figure as PNG, with alt text (and an optional caption) in the book."""
    from IPython.display import HTML, Image, display

    png = figure_png(fig)
    if static_mode():
        src = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
        cap = f"<figcaption>{html.escape(caption)}</figcaption>" if caption else ""
        display(HTML(f"<figure class='normlab-figure'><img src='{src}' alt='{html.escape(alt)}' "
                     f"style='max-width:100%'>{cap}</figure>"))
    else:
        display(Image(png, alt=alt))


def fmt_vector(v, spec: str = "+.4f") -> str:
    """A vector as the reference programs print it: fmt_vector(y, "+.4f") -> "[-0.2928, +0.8783, ...]"."""
    return "[" + ", ".join(format(float(a), spec) for a in v) + "]"
