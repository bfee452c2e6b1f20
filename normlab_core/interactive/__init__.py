"""The interactive mechanism: one pure render function of control values and inputs (Explorable.render), served
as live widgets in JupyterLab (live.py) and as pre-rendered frames in the static book (static.py), with one
frontend (frontend.js, frontend.css) for both."""

from ..display import show, try_this
from ..figures import catalog, get
from .controls import Choice, Input, Preset, Slider, number, scalar, vector
from .explorable import Explorable, Frame

__all__ = ["Choice", "Explorable", "Frame", "Input", "Preset", "Slider", "catalog", "get", "number", "scalar", "show",
           "try_this", "vector"]
