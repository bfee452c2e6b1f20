"""scripts/finish_site.py's page rewriting, on a small made-up site (no build needed)."""

from __future__ import annotations

import base64
import importlib.util
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("finish_site", ROOT / "scripts" / "finish_site.py")
finish_site = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(finish_site)


def tiny_png() -> bytes:
    """A valid 1x1 PNG, built here (signature, IHDR, IDAT, IEND)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return len(data).to_bytes(4, "big") + kind + data + zlib.crc32(kind + data).to_bytes(4, "big")
    ihdr = (1).to_bytes(4, "big") * 2 + bytes([8, 2, 0, 0, 0])
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00")) \
        + chunk(b"IEND", b"")


def test_light_images_moves_data_uris_to_files_and_marks_figures_lazy(tmp_path):
    png = tiny_png()
    uri = "data:image/png;base64," + base64.b64encode(png).decode()
    page = tmp_path / "notebooks" / "07.html"
    page.parent.mkdir()
    page.write_text(
        f"<img src='../_static/logo.png' alt='logo'>\n"
        f"<figure><img src='{uri}' alt='a figure' style='max-width:100%'></figure>\n"
        f'<img class="nl-frame" src="nl-frames/x/1.png" width="648" height="297" alt="a frame">\n'
        f"<script>var t = '<img>';</script>\n", encoding="utf-8")
    moved, marked = finish_site.light_images(tmp_path)
    assert (moved, marked) == (1, 2)
    text = page.read_text(encoding="utf-8")
    assert "data:image" not in text
    files = list((tmp_path / "_images").glob("nl-*.png"))
    assert len(files) == 1 and files[0].read_bytes() == png
    assert f"src='../_images/{files[0].name}' alt='a figure' style='max-width:100%' loading=\"lazy\"" in text
    assert 'alt="a frame" loading="lazy" decoding="async">' in text
    assert "<img src='../_static/logo.png' alt='logo'>" in text  # theme chrome stays eager
    assert "'<img>'" in text  # markup inside scripts without a src is left alone
    assert finish_site.light_images(tmp_path) == (0, 0)
    assert page.read_text(encoding="utf-8") == text
