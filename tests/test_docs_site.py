"""The documentation site (mkdocs.yml, built by Read the Docs) serves every rule page at the
address the diagnostics link to (`finding.rule_url`), and a strict build passes."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from cudalint.codes import codes
from cudalint.finding import rule_url

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "mkdocs.yml"
GUIDES = sorted(p.stem for p in (ROOT / "docs").glob("*.md") if p.name != "index.md")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built once for the module, as Read the Docs builds it (strict)."""
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # mkdocs-material's banner, not a warning
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(CONFIG),
         "--site-dir", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, (
        f"mkdocs build --strict failed (is the docs extra installed? pip install -e '.[docs]'):\n"
        f"{done.stdout}\n{done.stderr}"
    )
    return out


def site_url() -> str:
    url = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))["site_url"]
    return url if url.endswith("/") else url + "/"


def test_the_strict_build_passes(site: Path):
    assert (site / "index.html").is_file()
    assert (site / "sitemap.xml").is_file()


def test_every_rule_url_the_tool_emits_is_a_page_of_the_site(site: Path):
    prefix = site_url()
    assert sorted(codes()), "no rule codes"
    for code in sorted(codes()):
        url = rule_url(code)
        assert url.startswith(prefix), f"{url} is not under the site's site_url {prefix}"
        relative = url[len(prefix):]
        assert relative == f"rules/{code}/", relative
        page = site / relative / "index.html"
        assert page.is_file(), f"{url} is not built ({page} missing)"
        html = page.read_text(encoding="utf-8")
        assert re.search(rf"<h1[^>]*>{code} \(", html), f"{code}'s page has no {code} heading"
        assert "<h2" in html and "## What it does" not in html, f"{code}: Markdown not rendered"


def test_every_rule_page_is_reachable_from_the_navigation(site: Path):
    home = (site / "index.html").read_text(encoding="utf-8")
    index = (site / "rules" / "index.html").read_text(encoding="utf-8")
    for code in sorted(codes()):
        assert f'href="rules/{code}/"' in home, f"{code} is missing from the navigation"
        assert f'href="{code}/"' in index, f"{code} is missing from the rules index"


def test_the_guides_and_the_home_page_are_built(site: Path):
    assert GUIDES, "no guides under docs/"
    home = (site / "index.html").read_text(encoding="utf-8")
    for guide in GUIDES:
        page = site / guide / "index.html"
        assert page.is_file(), f"docs/{guide}.md is not built"
        assert "<h1" in page.read_text(encoding="utf-8"), guide
        assert f'href="{guide}/"' in home, f"{guide} is not linked from the home page"
    assert 'href="rules/"' in home
    # font: false in mkdocs.yml: the pages fetch nothing from Google Fonts
    assert "fonts.googleapis.com" not in home
