"""The coverage.py plugin, run as users run it: ``coverage run``/``report``/``xml``."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import coverage.version  # a dev dependency: missing must fail the run, not skip it
import pytest
from ptl_helpers import subprocess_env, write_files

PROJECT = {
    ".coveragerc": """\
        [run]
        plugins = ptl_wsgi.tools.coverage
        source = .
        """,
    "pages.ptl": '''\
        """Pages."""

        def page [html] (name, admin=False):
            "<h1>%s</h1>" % name
            if admin:
                "<p>admin</p>"
            items = [
                n.upper()
                for n in name
            ]
            items

        def unused [plain] ():
            "never"
            "called"

        def skipped [html] ():  # pragma: no cover
            "excluded"
        ''',
    "never.ptl": """\
        def other [html] ():
            "not imported"
        """,
    "main.py": """\
        import ptl_wsgi
        ptl_wsgi.install()
        import pages
        print(pages.page("ab"))
        """,
}


def coverage(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, "-m", "coverage", *args],
        capture_output=True,
        text=True,
        cwd=root,
        env=subprocess_env(),
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("covered")
    write_files(root, PROJECT)
    coverage(root, "run", "main.py")
    return root


def test_report_lists_ptl_files_with_their_missed_lines(project: Path) -> None:
    report = coverage(project, "report", "-m").stdout
    rows = {line.split()[0]: line.split()[1:] for line in report.splitlines() if ".ptl" in line}
    # Statements: 3 4 5 6 7(-10) 11 13 14 15 (14: a template's first string is output,
    # not a docstring); the template at line 17 is excluded.
    assert rows["pages.ptl"] == ["9", "3", "67%", "6,", "14-15"]
    assert rows["never.ptl"] == ["2", "2", "0%", "1-2"]


def test_xml_has_exact_line_hits(project: Path) -> None:
    coverage(project, "xml", "-o", "coverage.xml")
    tree = ET.parse(project / "coverage.xml")
    classes = {c.get("filename"): c for c in tree.iter("class")}
    lines = {
        int(line.get("number")): int(line.get("hits")) for line in classes["pages.ptl"].iter("line")
    }
    assert lines == {3: 1, 4: 1, 5: 1, 6: 0, 7: 1, 11: 1, 13: 1, 14: 0, 15: 0}


def test_html_shows_the_ptl_source(project: Path) -> None:
    coverage(project, "html", "-d", "htmlcov")
    pages = [p for p in (project / "htmlcov").glob("*.html") if "pages_ptl" in p.name]
    assert len(pages) == 1
    text = pages[0].read_text(encoding="utf-8")
    marker = '<span class="op">[</span><span class="nam">html</span><span class="op">]</span>'
    assert text.count(marker) == 2 and "67%" in text


BRANCHES = {
    ".coveragerc": """\
        [run]
        branch = True
        plugins = ptl_wsgi.tools.coverage
        source = .

        [report]
        partial_branches =
            no branch
        """,
    "rows.ptl": """\
        def row [html] (cells):
            "<tr>"
            for cell in cells:
                "<td>"
                cell
                "</td>"
            "</tr>"
            if cells:  # no branch
                "<!-- cells -->"

        def maybe [html] (flag):
            if flag:
                "yes"
        """,
    "main.py": """\
        import ptl_wsgi
        ptl_wsgi.install()
        import rows
        print(rows.row([1, 2]), rows.maybe(True))
        """,
}


def test_branch_coverage_of_templates(tmp_path: Path) -> None:
    # The loop in row() is fused (one C call); its arcs are still those of a loop that ran.
    write_files(tmp_path, BRANCHES)
    coverage(tmp_path, "run", "main.py")
    report = coverage(tmp_path, "report", "-m").stdout
    rows = {line.split()[0]: line.split()[1:] for line in report.splitlines() if ".ptl" in line}
    # Statements, missed, branches, partial: maybe()'s "if" never skipped its body; the
    # "if cells" line is excluded from branch reporting by partial_branches.
    assert rows["rows.ptl"] == ["12", "0", "6", "1", "94%", "12->exit"]
