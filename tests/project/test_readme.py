"""The README's first example runs as shown (its template is defined, its output is true)."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

from ptl_helpers import REPO, import_sandbox


def test_the_first_example_runs(tmp_path: Path) -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    module = re.search(r"```python\n# (pages\.ptl)\n(.*?)```", readme, re.S)
    session = re.search(r"```pycon\n(>>> import ptl_wsgi.*?)```", readme, re.S)
    assert module is not None and session is not None
    (tmp_path / module.group(1)).write_text(module.group(2), encoding="utf-8")
    with import_sandbox(tmp_path):
        test = doctest.DocTestParser().get_doctest(session.group(1), {}, "README", "README.md", 0)
        runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
        runner.run(test)
    assert runner.summarize(verbose=False).failed == 0
