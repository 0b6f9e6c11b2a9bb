"""An app's own Jinja2 filter and test, for the converter's --filters option (see jinja2_corpus)."""


def shout(value: object) -> str:
    """A custom filter."""
    return f"{value}!".upper()


def small(value: int) -> bool:
    """A custom test."""
    return value < 2
