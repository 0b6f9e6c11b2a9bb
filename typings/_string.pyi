# CPython's _string module (what string.Formatter uses), which typeshed does not cover.
from collections.abc import Iterator

def formatter_parser(
    format_string: str, /
) -> Iterator[tuple[str, str | None, str | None, str | None]]: ...
def formatter_field_name_split(
    field_name: str, /
) -> tuple[int | str, Iterator[tuple[bool, int | str]]]: ...
