#!/usr/bin/env python3
"""Rewrite ptl_wsgi/escaping/_plans.py: every contextual escaper's plan, as the reference makes it.

    .venv/bin/python tools/escaper_plans.py          # write the file
    .venv/bin/python tools/escaper_plans.py --check  # exit 1 if it is not up to date

Run it after changing an escaper of ptl_wsgi/escaping/ (tests/escaping/test_escaper_plans.py fails
until then): the C twin answers common values from these plans, so that a render imports
none of the reference's modules.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ptl_wsgi._htmltext_py import escape_str  # noqa: E402
from ptl_wsgi.escaping.escapers import plans_source  # noqa: E402

TARGET = ROOT / "ptl_wsgi" / "escaping" / "_plans.py"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only compare, exit 1 if stale")
    args = parser.parse_args(argv)
    source = plans_source(escape_str)
    current = TARGET.read_text() if TARGET.exists() else ""
    if args.check:
        if current != source:
            print(f"{TARGET} is out of date: run tools/escaper_plans.py", file=sys.stderr)
            return 1
        return 0
    if current != source:
        TARGET.write_text(source)
        print(f"wrote {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
