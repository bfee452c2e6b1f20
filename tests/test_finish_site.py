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


def test_slim_own_assets_strips_comments_and_keeps_the_code(tmp_path):
    static = tmp_path / "_static"
    static.mkdir()
    (static / "normlab-book.js").write_text(
        '/* header\n * comment */\n(function () {\n  // a comment line\n  var url = "http://x"; // kept: after code\n'
        '  return 1;\n})();\n', encoding="utf-8")
    (static / "normlab-book.css").write_text("/* a rule */\n.a { content: \"x\"; }\n", encoding="utf-8")
    saved = finish_site.slim_own_assets(tmp_path)
    js = (static / "normlab-book.js").read_text(encoding="utf-8")
    assert js == '(function () {\n  var url = "http://x"; // kept: after code\n  return 1;\n})();\n'
    assert (static / "normlab-book.css").read_text(encoding="utf-8") == '.a { content: "x"; }\n'
    assert saved > 30 and finish_site.slim_own_assets(tmp_path) == 0
