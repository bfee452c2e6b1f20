"""The book's figures: the house style (style.py), drawn diagrams (diagrams.py) and one module per section
(sNN_..., one per section notebook that has figures), each with its explorables' setup and update functions and
its catalog entries(). Figures import the interactive mechanism and the layers below it; display.py imports them
to show them (only s11's live trainer still reads display.static_mode)."""

import functools
import importlib
import pkgutil
import re


@functools.cache
def catalog() -> dict:
    """Every explorable of the book by name, from the section modules' entries() (renders nothing)."""
    out = {}
    for mod in sorted(m.name for m in pkgutil.iter_modules(__path__) if re.fullmatch(r"s\d\d_\w+", m.name)):
        for exp in importlib.import_module(f"{__name__}.{mod}").entries():
            if out.setdefault(exp.name, exp) is not exp:
                raise ValueError(f"two explorables are named {exp.name!r}")
    return out


def get(name: str):
    """One explorable by name, with the known names in the error."""
    if name not in catalog():
        raise KeyError(f"no explorable named {name!r}; known: {', '.join(sorted(catalog()))}")
    return catalog()[name]
