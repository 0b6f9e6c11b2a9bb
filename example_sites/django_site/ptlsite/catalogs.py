"""Compile the site's ``.po`` catalogs to the ``.mo`` files Django reads.

Only the ``.po`` sources are in the repository: a binary catalog would drift
from them unseen. They are compiled when the site starts (``PtlsiteConfig.ready``),
with Babel where it is installed, else with GNU ``msgfmt``; a ``.mo`` newer than
its ``.po`` is kept. Without either tool the site stays in English and says so.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

log = logging.getLogger(__name__)


def compile_catalogs(locale_dir: Path) -> list[Path]:
    """Compile every ``*.po`` under *locale_dir* whose ``.mo`` is missing or older."""
    written = []
    for po in sorted(locale_dir.glob("*/LC_MESSAGES/*.po")):
        mo = po.with_suffix(".mo")
        if mo.exists() and mo.stat().st_mtime >= po.stat().st_mtime:
            continue
        if _compile(po, mo):
            written.append(mo)
    return written


def _compile(po: Path, mo: Path) -> bool:
    # Written beside the target and renamed over it: a process that starts at the
    # same moment reads the old catalog or the new one, never half of one.
    fd, tmp = tempfile.mkstemp(dir=mo.parent, prefix=".", suffix=".mo")
    os.close(fd)
    try:
        if _with_babel(po, Path(tmp)) or _with_msgfmt(po, Path(tmp)):
            os.replace(tmp, mo)
            return True
        log.warning("%s not compiled: install Babel or GNU gettext (msgfmt)", po)
        return False
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _with_babel(po: Path, mo: Path) -> bool:
    try:
        from babel.messages.mofile import write_mo
        from babel.messages.pofile import read_po
    except ImportError:
        return False
    with po.open("rb") as source:
        catalog = read_po(source)
    with mo.open("wb") as target:
        write_mo(target, catalog)
    return True


def _with_msgfmt(po: Path, mo: Path) -> bool:
    msgfmt = shutil.which("msgfmt")
    if msgfmt is None:
        return False
    subprocess.run([msgfmt, "--check", "-o", str(mo), str(po)], check=True)
    return True
