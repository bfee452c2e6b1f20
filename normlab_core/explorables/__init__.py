"""The catalog's entries: one module per section (s01_..., s02_...), each with `entries() -> list`.

Modules are discovered, so a section adds its explorables without touching this file.
"""

from __future__ import annotations

import importlib
import pkgutil


def build() -> dict:
    """{name: Explorable} from every section module, in module order (renders nothing)."""
    out = {}
    for mod in sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")):
        for exp in importlib.import_module(f"{__name__}.{mod}").entries():
            if exp.name in out:
                raise ValueError(f"two explorables are named {exp.name!r}")
            out[exp.name] = exp
    return out
