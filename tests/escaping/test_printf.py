"""escaping.printf: the one reader of ``%`` formats (the twins' run-time cut, the compiler's).

It must read a format as str's own ``%`` does: the same units, so that each is formatted
by str and escaped for where it lands, and the same place to stop.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ptl_wsgi.escaping.printf import scan_percent

formats = st.text(alphabet="%()*.#0- +59sdrhlLax<>", max_size=12)


def test_units_as_written() -> None:
    units, tail, complete = scan_percent("a%(k(1))-5.2hs b%%c%*.*d!")
    assert complete and tail == "!"
    assert [(u.literal, u.source, u.key, u.field, u.stars) for u in units] == [
        ("a", "%(k(1))-5.2hs", "k(1)", "%-5.2hs", 0),
        (" b%c", "%*.*d", None, "%*.*d", 2),
    ]
    first = units[0]
    assert (first.width, first.precision, first.length, first.conversion) == ("5", "2", "h", "s")
    assert (first.start, first.end) == (1, 14)
    assert units[1].precision == "*" and scan_percent("%.s")[0][0].precision == ""


@pytest.mark.parametrize("fmt", ["%", "ab%(", "%(a(b)s", "%-5", "%.3l"])
def test_it_stops_where_str_cannot_read(fmt: str) -> None:
    with pytest.raises(ValueError):
        _ = fmt % {"a": 1}
    units, tail, complete = scan_percent(fmt)
    assert not complete and tail == "" and units == []


@given(formats)
def test_units_and_text_make_the_format_again(fmt: str) -> None:
    units, tail, complete = scan_percent(fmt)
    if not complete:
        return
    again = "".join(u.literal.replace("%", "%%") + u.source for u in units) + tail.replace(
        "%", "%%"
    )
    assert again == fmt
    assert all(fmt[u.start : u.end] == u.source for u in units)


@given(formats)
def test_str_accepts_what_it_reads_as_string_conversions(fmt: str) -> None:
    # Formats whose units are all %s/%r/%a without "*" and without keys: str formats
    # them with one value each exactly when the reader read it all.
    units, _, complete = scan_percent(fmt)
    if not complete or any(u.key or u.stars or u.conversion not in "sra" for u in units):
        return
    expected = "".join(u.literal + (u.source % ("v",)) for u in units)
    assert (fmt % (("v",) * len(units))).startswith(expected)
