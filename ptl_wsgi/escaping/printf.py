"""The one reader of printf-style (``%``) formats: literal text and conversion units.

It reads a format as str's own ``%`` does (a ``%(key)`` with nested parentheses,
flags, ``*`` or digits for the width and the precision, length modifiers, then one
conversion character) and stops where str could not read on.  It checks nothing
else: whether the conversion character is one str knows, and whether the values
fit, are str's to say.  The htmltext twins cut formats with it at run time
(``_htmltext_py``), the compiler reads the literal formats of templates with it.
"""

from __future__ import annotations

__all__ = ["PercentUnit", "scan_percent"]


class PercentUnit:
    """One conversion of a format, as written: ``%(a)-5.2s`` is one unit."""

    __slots__ = (
        "conversion",
        "end",
        "field",
        "key",
        "length",
        "literal",
        "precision",
        "source",
        "stars",
        "start",
        "width",
    )

    def __init__(
        self,
        fmt: str,
        literal: str,
        start: int,
        end: int,
        key: str | None,
        width: str,
        precision: str | None,
        length: str,
    ) -> None:
        self.literal = literal  # the text before the unit, "%%" already made "%"
        self.start = start  # where the unit starts in the format (its "%")
        self.end = end  # where it ends
        self.source = fmt[start:end]  # the unit as written, its key included: "%(a)-5s"
        self.key = key
        self.width = width  # "", "*" or digits
        self.precision = precision  # None without a ".", else "", "*" or digits
        self.length = length  # the length modifiers ("h", "l", "L"), which str ignores
        self.conversion = fmt[end - 1]
        # How many "*" take a width or precision from the values.
        self.stars = (width == "*") + (precision == "*")
        # The conversion without its key: "%-5s".
        self.field = self.source if key is None else "%" + self.source[len(key) + 3 :]


def scan_percent(fmt: str) -> tuple[list[PercentUnit], str, bool]:
    """*fmt*'s units, the literal text after the last, and whether all of it was read.

    Only an immediate ``%%`` is a literal percent.  Reading stops at what str
    cannot read (``%(`` without its ``)``, a unit without a conversion
    character): then the units are those before it, the text ``""`` and the
    flag False.
    """
    units: list[PercentUnit] = []
    literal: list[str] = []
    literal_start = i = 0
    n = len(fmt)
    while (i := fmt.find("%", i)) >= 0:
        literal.append(fmt[literal_start:i])
        start = i
        i += 1
        if i < n and fmt[i] == "%":
            literal.append("%")
            i += 1
            literal_start = i
            continue
        key = None
        if i < n and fmt[i] == "(":
            depth = 1
            j = i + 1
            while j < n and depth:
                depth += {"(": 1, ")": -1}.get(fmt[j], 0)
                j += 1
            if depth:
                return units, "", False
            key = fmt[i + 1 : j - 1]
            i = j
        while i < n and fmt[i] in "#0- +":
            i += 1
        width_start = i
        if i < n and fmt[i] == "*":
            i += 1
        else:
            while i < n and "0" <= fmt[i] <= "9":
                i += 1
        width = fmt[width_start:i]
        precision = None
        if i < n and fmt[i] == ".":
            i += 1
            precision_start = i
            if i < n and fmt[i] == "*":
                i += 1
            else:
                while i < n and "0" <= fmt[i] <= "9":
                    i += 1
            precision = fmt[precision_start:i]
        length_start = i
        while i < n and fmt[i] in "hlL":
            i += 1
        length = fmt[length_start:i]
        if i >= n:
            return units, "", False
        i += 1
        units.append(PercentUnit(fmt, "".join(literal), start, i, key, width, precision, length))
        literal = []
        literal_start = i
    literal.append(fmt[literal_start:])
    return units, "".join(literal), True
