"""Which browser the PDF edition, the benches and the tests drive (scripts/browser.py, driven_browser):
$NORMLAB_CHROMIUM when set, else Debian's chromium-headless-shell, else its chromium, else none (the tests then
skip, or fail under NORMLAB_REQUIRE_BROWSER=1)."""

from __future__ import annotations

import browser_support
import pytest

from scripts import browser


def _executable(path, mode=0o755):
    path.write_text("#!/bin/sh\n")
    path.chmod(mode)
    return path


@pytest.fixture
def machine(tmp_path, monkeypatch):
    shell, chromium = tmp_path / "chromium-headless-shell", tmp_path / "chromium"
    for module in (browser, browser_support):   # browser_support's names are the ones its messages quote
        monkeypatch.setattr(module, "HEADLESS_SHELL", shell)
        monkeypatch.setattr(module, "CHROMIUM", chromium)
    monkeypatch.delenv("NORMLAB_CHROMIUM", raising=False)
    return shell, chromium


def test_the_headless_shell_comes_first_then_chromium_then_none(machine):
    shell, chromium = machine
    assert browser.driven_browser() is None
    _executable(chromium)
    assert browser.driven_browser() == chromium
    _executable(shell)
    assert browser.driven_browser() == shell
    shell.chmod(0o644)   # present but not executable: passed over
    assert browser.driven_browser() == chromium


def test_normlab_chromium_names_the_browser_and_nothing_else_is_tried(machine, monkeypatch, tmp_path):
    shell, chromium = machine
    _executable(shell)
    _executable(chromium)
    own = _executable(tmp_path / "my-chromium")
    monkeypatch.setenv("NORMLAB_CHROMIUM", str(own))
    assert browser.driven_browser() == own
    monkeypatch.setenv("NORMLAB_CHROMIUM", str(tmp_path / "missing"))
    assert browser.driven_browser() is None


def test_without_a_browser_the_tests_skip_or_fail_when_one_is_required(machine, monkeypatch):
    monkeypatch.delenv("NORMLAB_REQUIRE_BROWSER", raising=False)
    with pytest.raises(pytest.skip.Exception, match="apt-get install"):
        browser_support.chromium_or_skip()
    monkeypatch.setenv("NORMLAB_REQUIRE_BROWSER", "1")
    with pytest.raises(pytest.fail.Exception, match="NORMLAB_REQUIRE_BROWSER=1"):
        browser_support.chromium_or_skip()


@pytest.mark.browser
def test_confine_lets_the_site_through_and_stops_and_reports_every_other_host(browser, tmp_path):
    """What every driven page relies on (scripts/browser.confine): the served site, data: and blob: load; any
    other address, one that only holds the site's address included, is aborted and reported, once."""
    from PIL import Image

    Image.new("RGB", (3, 2), "white").save(tmp_path / "here.png")
    with browser_support.SiteServer(tmp_path) as server:
        away = ["http://198.51.100.7/away.png", "http://198.51.100.7/to?" + server.base, "https://example.invalid/f"]
        (tmp_path / "page.html").write_text(
            "<!doctype html><img id=here src='here.png'>"
            "<img id=data src='data:image/gif;base64,R0lGODlhAQABAIAAAP///wAAACH5BAEAAAAALAAAAAABAAEAAAICRAEAOw=='>"
            f"<img src='{away[0]}'><img src='{away[1]}'>"
            f"<script>fetch('{away[2]}').catch(() => {{}});"
            "const b = URL.createObjectURL(new Blob(['x']));"
            "fetch(b).then(r => r.text()).then(t => { window.blob = t; });"
            "</script>", encoding="utf-8")
        page, problems = browser.new_page(), []
        try:
            browser_support.confine(page, (server.base,), problems)
            page.goto(server.base + "page.html", wait_until="load")
            page.wait_for_function("window.blob === 'x'")
            page.wait_for_timeout(200)
            assert page.evaluate("[here.naturalWidth, data.naturalWidth]") == [3, 1]
            assert sorted(problems) == sorted(f"blocked request to another host: {url}" for url in away)
        finally:
            page.close()
