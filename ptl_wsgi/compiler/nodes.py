"""Building AST nodes located where the source they stand for is."""

from __future__ import annotations

import ast
from typing import TypeVar

_N = TypeVar("_N", bound=ast.AST)


def _located(node: _N, ref: ast.AST) -> _N:
    """Give the generated nodes in *node* (those without a location) *ref*'s location."""
    for child in ast.walk(node):
        if "lineno" in child._attributes and getattr(child, "lineno", None) is None:
            ast.copy_location(child, ref)
    return node


def _name(id: str, ref: ast.AST, ctx: ast.expr_context | None = None) -> ast.Name:
    return _located(ast.Name(id=id, ctx=ctx or ast.Load()), ref)


def _call(func: ast.expr, args: list[ast.expr], ref: ast.AST) -> ast.Call:
    return _located(ast.Call(func=func, args=args, keywords=[]), ref)


def _as_list(result: ast.AST | list[ast.AST] | None) -> list[ast.AST]:
    if result is None:
        return []
    return result if isinstance(result, list) else [result]


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _target_name(assign: ast.Assign) -> str:
    """The name a hoisted literal is assigned to."""
    target = assign.targets[0]
    assert isinstance(target, ast.Name)  # (_Transformer.hoist makes it so)
    return target.id
