"""An app's own Jinja2 filter, test and global, for the converter's --filters option."""


def shout(value: object) -> str:
    """A custom filter."""
    return f"{value}!".upper()


def small(value: int) -> bool:
    """A custom test."""
    return value < 2


SITE_NAME = "<Site>"
