"""The names of the generated code (all under ``RESERVED_PREFIX``), and ``OPT_OUT``."""

from __future__ import annotations

import ast

#: Every name the compiler generates starts with this; user code may not use it.
RESERVED_PREFIX = "_ptl_"

_RUNTIME_NAMES = (
    ("htmltext", "_ptl_htmltext"),
    ("_template_join", "_ptl_html_join"),
    ("plain_join", "_ptl_plain_join"),
    ("format_field", "_ptl_format_field"),
    ("field_output", "_ptl_field_output"),
    ("percent_output", "_ptl_percent_output"),
    # The same outside text (an attribute value, RCDATA): no nonce slots kept.
    ("outside_text", "_ptl_outside_text"),
    ("field_outside_text", "_ptl_field_outside"),
    ("percent_outside_text", "_ptl_percent_outside"),
    ("loop_output", "_ptl_loop_output"),
    ("first_of", "_ptl_first_of"),
)
_MARKERS = (
    ("mark_html_template", "_ptl_mark_html"),
    ("mark_plain_template", "_ptl_mark_plain"),
)
_MARK = {"html": "_ptl_mark_html", "plain": "_ptl_mark_plain"}
_ESCAPER = "_ptl_esc_"  # + the escaper's name in ptl_wsgi.escapers
# The helpers values in other contexts need before their escaper, from ptl_wsgi.escapers.
_CONTEXT_HELPERS = (
    ("format_value", "_ptl_ctx_format"),
    ("percent_value", "_ptl_ctx_percent"),
    ("percent_field", "_ptl_ctx_field"),
    ("int", "_ptl_int"),
    ("type", "_ptl_type"),
    # A literal's CSP nonce slots, carried by its markup in a nonce scope (an f-string's
    # marked where they are, and taken out again): the nonce goes in when written out.
    ("nonce_used", "_ptl_nonce_used"),
    ("nonced", "_ptl_nonced"),
    ("nonce_mark", "_ptl_nonce_mark"),
    ("nonce_marked", "_ptl_nonce_marked"),
)
# htmltext's %, format() and format_map() escape each value for where it lands in the
# format, parsed on its own from text (ptl_wsgi.escaping.formatting); a literal format of an
# [html] template calls these from ptl_wsgi.html instead, which HTML-escape every value:
# the compiler planned the format where it is output (its values are escaped for it
# already), or the template opted out of contextual escaping.
_HTML_FORMATTERS = (
    ("format_mod_html", "_ptl_html_mod"),
    ("format_html", "_ptl_html_format"),
    ("format_map_html", "_ptl_html_format_map"),
)


def _layerless(escaper: str) -> str:
    for layer in ("_u0", "_q", "_u"):
        if escaper.endswith(layer):
            return escaper[: -len(layer)]
    return escaper


#: A module (at its top level) or a template (among its first statements) that sets
#: this name to False gets plain HTML escaping everywhere: contextual escaping off.
OPT_OUT = "__ptl_contextual__"
_JOIN = {"html": "_ptl_html_join", "plain": "_ptl_plain_join"}
_OUT = "_ptl_out"
_EXTEND = "_ptl_extend"  # _ptl_out.extend, in templates that need it bound


def _opts_out(body: list[ast.stmt]) -> bool:
    """Whether *body* (a module's or template's) sets OPT_OUT to False in its first statements."""
    for statement in body[:8]:
        if (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
            and statement.targets[0].id == OPT_OUT
            and isinstance(statement.value, ast.Constant)
            and statement.value.value is False
        ):
            return True
    return False
