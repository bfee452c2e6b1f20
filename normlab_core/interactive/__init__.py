"""The interactive mechanism: one pure render function of control values and inputs (Explorable.render), served
as live widgets in JupyterLab (live.py) and as pre-rendered frames in the static book (static.py), with one
frontend (frontend.js, frontend.css) for both. It knows nothing of the book's figures: normlab_core.figures declares
the explorables with it, and normlab_core.display shows them (`show`)."""

from .controls import Choice, Input, Preset, Slider, scalar, vector
from .explorable import Explorable, Frame

__all__ = ["Choice", "Explorable", "Frame", "Input", "Preset", "Slider", "scalar", "vector"]
