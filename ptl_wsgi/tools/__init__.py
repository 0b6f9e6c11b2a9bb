"""Tools that work on templates: converters, linters, checkers."""
