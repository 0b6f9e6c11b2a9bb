"""Which scope each piece of code runs in, by one walker; the rules checked before rewriting.

:class:`_ScopeWalker` decides scopes for the transformer and for :func:`template_scopes`
(the tools' view); :func:`_check` rejects reserved names and ``yield`` in templates.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ptl_wsgi.compiler.names import RESERVED_PREFIX
from ptl_wsgi.compiler.nodes import _as_list
from ptl_wsgi.compiler.source import Spot, Templates, name_location, spot_of, syntax_error


class _ScopeWalker(ast.NodeTransformer):
    """Which scope each piece of code runs in: the one place that decides it.

    ``self.kind`` is the innermost enclosing scope: ``"html"`` or ``"plain"``
    inside a template body, ``None`` in ordinary code (the module, classes,
    ordinary functions and lambdas, even when nested in a template).  A def's
    decorators run in the enclosing scope and its own kind governs its
    defaults; a class (decorators, bases and body) and a lambda are ordinary
    code.  Annotations, ``match`` patterns and ``type`` aliases are never
    visited: their literals stay ``str``.  The compiler's transformer and
    :func:`template_scopes` (for tools) both walk by these rules.
    """

    def __init__(self, templates: Templates) -> None:
        self.templates = templates
        self.kind: str | None = None

    @contextmanager
    def scope(self, kind: str | None) -> Iterator[None]:
        outer, self.kind = self.kind, kind
        try:
            yield
        finally:
            self.kind = outer

    def visit_list(self, nodes: list[Any]) -> list[Any]:
        return [new for node in nodes for new in _as_list(self.visit(node))]

    def visit_in(self, kind: str | None, nodes: list[Any]) -> list[Any]:
        with self.scope(kind):
            return self.visit_list(nodes)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.AST:
        kind = self.templates.get((node.lineno, node.col_offset))
        # Decorators run in the enclosing scope; a def's own kind governs its
        # defaults.  Annotations are left alone: they are types, not output.
        node.decorator_list = self.visit_in(self.kind, node.decorator_list)
        args = node.args
        args.defaults = self.visit_in(kind, args.defaults)
        args.kw_defaults = [
            None if d is None else self.visit_in(kind, [d])[0] for d in args.kw_defaults
        ]
        if kind is None:
            node.body = self.visit_in(kind, node.body)
        else:
            self.visit_template_body(node, kind)
        return node

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_template_body(self, node: ast.FunctionDef | ast.AsyncFunctionDef, kind: str) -> None:
        """Visit a template's body in its own scope (the transformer also rewrites it)."""
        node.body = self.visit_in(kind, node.body)

    def visit_Lambda(self, node: ast.Lambda) -> ast.AST:
        with self.scope(None):
            return self.generic_visit(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        with self.scope(None):
            return self.generic_visit(node)

    # Places where a literal must stay a str: the Python grammar or the meaning
    # of the code needs it (patterns, annotations, type aliases).
    def visit_match_case(self, node: ast.match_case) -> ast.AST:
        if node.guard is not None:
            node.guard = self.visit(node.guard)
        node.body = self.visit_list(node.body)
        return node

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST:
        node.target = self.visit(node.target)
        if node.value is not None:
            node.value = self.visit(node.value)
        return node

    def visit_arg(self, node: ast.arg) -> ast.AST:
        return node

    def visit_TypeAlias(self, node: ast.AST) -> ast.AST:
        return node


# -- scopes for tools: what the compiler would do, without rewriting ----------------------


@dataclass
class TemplateScopes:
    """What :func:`template_scopes` found, in source order; the tree is left as it was.

    Each kind is the scope's by the compiler's rules: ``"html"``, ``"plain"`` or
    ``None`` (ordinary code).  ``literals`` are the ``str`` constants, f-strings
    and t-strings the compiler would see in that kind (in ``"html"`` it makes
    them ``htmltext``); literals that stay ``str`` whatever the scope
    (annotations, ``match`` patterns, ``type`` aliases, format specs' text) and
    the parts of an f-string are not listed.  ``outputs`` are the expression
    statements whose value a template outputs, ``returns`` the ``return``
    statements in template scope.
    """

    templates: list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, str]]
    literals: list[tuple[ast.expr, str | None]]
    outputs: list[tuple[ast.Expr, str]]
    returns: list[tuple[ast.Return, str]]


class _ScopeScan(_ScopeWalker):
    def __init__(self, templates: Templates) -> None:
        super().__init__(templates)
        self.found = TemplateScopes([], [], [], [])

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.AST:
        kind = self.templates.get((node.lineno, node.col_offset))
        if kind is not None:
            self.found.templates.append((node, kind))
        return super().visit_FunctionDef(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Expr(self, node: ast.Expr) -> ast.AST:
        if self.kind is not None:
            self.found.outputs.append((node, self.kind))
        return self.generic_visit(node)

    def visit_Return(self, node: ast.Return) -> ast.AST:
        if self.kind is not None:
            self.found.returns.append((node, self.kind))
        return self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        if type(node.value) is str:
            self.found.literals.append((node, self.kind))
        return node

    def visit_JoinedStr(self, node: ast.expr) -> ast.AST:
        # As the transformer does: field values run in this scope, a spec's text stays str.
        self.found.literals.append((node, self.kind))
        for part in node.values:  # type: ignore[attr-defined]
            if not isinstance(part, ast.Constant):  # FormattedValue, Interpolation
                self.visit_field(part)
        return node

    visit_TemplateStr = visit_JoinedStr

    def visit_field(self, part: ast.AST) -> None:
        self.visit(part.value)  # type: ignore[attr-defined]
        spec = getattr(part, "format_spec", None)
        for inner in spec.values if spec is not None else ():
            if not isinstance(inner, ast.Constant):
                self.visit_field(inner)


def template_scopes(tree: ast.Module, templates: Templates) -> TemplateScopes:
    """The templates, literals, outputs and returns of *tree*, scoped as the compiler scopes.

    *tree* is ordinary Python (:func:`python_view`'s text, parsed; *templates*
    its map) or another dialect whose templates the caller has found, keyed by
    the ``(line, UTF-8 column)`` of each template's ``def`` (or ``async``).
    """
    scan = _ScopeScan(templates)
    scan.visit(tree)
    found = scan.found
    for items in (found.templates, found.literals, found.outputs, found.returns):
        items.sort(key=lambda item: (item[0].lineno, item[0].col_offset))
    return found


# -- rules checked on the parsed tree, before it is rewritten ------------------------------

_TEMPLATE_SCOPE = True  # the code runs in a template's own frame
_OTHER_SCOPE = False


def _check(
    tree: ast.Module, templates: Templates, filename: str, lines: list[str]
) -> tuple[int, Spot | None]:
    """Reject reserved names anywhere and ``yield`` that would run in a template's frame.

    A walk over every node (format specs, annotations and defaults included),
    iterative so that its depth costs no stack.  Each node is visited with
    the scope its code runs in: a def's decorators, defaults and annotations
    and a class's bases run in the enclosing scope; bodies run in their own.
    Returns the tree's depth and its deepest node that has a location.
    """
    best, deepest = 0, None
    stack: list[tuple[ast.AST, bool, int]] = [(tree, _OTHER_SCOPE, 1)]
    while stack:
        node, in_template, depth = stack.pop()
        if depth > best and (spot := spot_of(node)) is not None:
            best, deepest = depth, spot
        for name, ref in _bound_names(node):
            if name.startswith(RESERVED_PREFIX):
                raise syntax_error(
                    f"{name!r}: names starting with {RESERVED_PREFIX!r} are reserved "
                    "for the code the PTL compiler generates",
                    filename,
                    lines,
                    name_location(name, ref, lines),
                )
        if isinstance(node, (ast.Yield, ast.YieldFrom)) and in_template:
            raise syntax_error(
                "'yield' in a template; templates cannot be generators", filename, lines, node
            )
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            own = (node.lineno, node.col_offset) in templates
            body: Sequence[ast.AST] = node.body
        elif isinstance(node, ast.Lambda):
            own, body = _OTHER_SCOPE, [node.body]
        elif isinstance(node, ast.ClassDef):
            own, body = _OTHER_SCOPE, node.body
        else:
            own, body = in_template, []
        inner = {id(child) for child in body}
        # Reversed, so nodes are checked in source order and the first error is reported.
        for child in reversed(list(ast.iter_child_nodes(node))):
            stack.append((child, own if id(child) in inner else in_template, depth + 1))
    return best, deepest


def _bound_names(node: ast.AST) -> list[tuple[str, Spot]]:
    """The identifiers *node* itself names (binds or reads), with the node to locate them by.

    Attribute names and keyword-argument names are left out: they belong to
    another object's namespace, never to the scopes the generated code uses.
    """
    if isinstance(node, ast.Name):
        return [(node.id, node)]
    if isinstance(node, ast.arg):
        return [(node.arg, node)]
    if isinstance(node, ast.alias):
        return [(node.asname or node.name.partition(".")[0], node)]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [(node.name, node)]
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return [(name, node) for name in node.names]
    if isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)):
        return [] if node.name is None else [(node.name, node)]
    if isinstance(node, ast.MatchMapping):
        return [] if node.rest is None else [(node.rest, node)]
    if sys.version_info >= (3, 12) and isinstance(  # PEP 695 type parameters
        node, (ast.TypeVar, ast.ParamSpec, ast.TypeVarTuple)
    ):
        return [(node.name, node)]
    return []
