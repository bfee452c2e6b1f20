"""The targets that read the built site (`make pdf`, `make screenshots`, `make bench`) rebuild it first when one of
its sources is newer than the site's stamp, and only then: asked of make itself with --dry-run (nothing runs), with
the stamp kept in a temporary folder so that the real _build is never touched."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BUILD = "jupyter-book build"


def planned(target: str, stamp: Path, *newer: str) -> str:
    """What `make TARGET` would run with the site's stamp at `stamp`, the files `newer` taken as just changed."""
    what_if = [arg for name in newer for arg in ("-W", name)]
    out = subprocess.run(["make", "--dry-run", "--no-print-directory", *what_if, target, f"SITE_STAMP={stamp}"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120, check=True)
    return out.stdout


@pytest.fixture
def fresh_stamp(tmp_path) -> Path:
    stamp = tmp_path / "site-built"
    stamp.touch()
    later = time.time() + 3600  # newer than every file of the checkout, however it was made
    os.utime(stamp, (later, later))
    return stamp


@pytest.mark.parametrize("target", ["pdf", "screenshots", "bench"])
def test_a_site_newer_than_its_sources_is_used_as_it_is(target, fresh_stamp):
    assert BUILD not in planned(target, fresh_stamp)


@pytest.mark.parametrize("changed", ["notebooks/04_layer_norm.ipynb", "book/glossary.md", "_toc.yml",
                                     "normlab_core/norms/layernorm.py", "scripts/finish_site.py"])
def test_a_changed_source_rebuilds_the_site_before_the_pdf(changed, fresh_stamp):
    plan = planned("pdf", fresh_stamp, changed)
    assert BUILD in plan, f"make pdf would print the old site after {changed} changed"
    assert plan.index(BUILD) < plan.index("scripts.make_pdf")


def test_a_site_never_built_is_built(tmp_path):
    assert BUILD in planned("pdf", tmp_path / "missing")
