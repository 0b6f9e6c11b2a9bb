"""Loop fusion: consecutive output statements joined, output loops made one C call."""

from __future__ import annotations

import ast
from collections import Counter

from ptl_wsgi.compiler.contextual import _ContextualWalk
from ptl_wsgi.compiler.names import _ESCAPER, _OUT
from ptl_wsgi.compiler.nodes import _is_none, _located, _name, _target_name

# Calls that output a fused loop's item (besides the escapers).
_ITEM_OUTPUTS = frozenset({"_ptl_field_output", "_ptl_percent_output"})
# Names (of builtins or attributes) that can read a template's local variables, which
# fused loops do not bind: a module that mentions one anywhere gets no fused loop.
_FRAME_READERS = frozenset(
    {"locals", "vars", "eval", "exec", "dir", "_getframe", "f_locals", "currentframe"}
)


def _output_items(call: ast.Call) -> list[ast.expr]:
    """The pieces an output statement's call (``append(x)`` or ``extend((x, y))``) adds."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr == "append":
        return list(call.args)
    tuple_ = call.args[0]
    assert isinstance(tuple_, ast.Tuple)  # (output() gives extend a tuple display)
    return list(tuple_.elts)


def _reads_frames(tree: ast.AST) -> bool:
    """Whether *tree* names anything in _FRAME_READERS (as a name, an attribute or a string)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in _FRAME_READERS:
            return True
        if isinstance(node, ast.Attribute) and node.attr in _FRAME_READERS:
            return True
        if isinstance(node, ast.Constant) and node.value in _FRAME_READERS:
            return True  # getattr(builtins, "locals")
    return False


def _name_uses(node: ast.AST) -> Counter[str]:
    """How often each name occurs in *node*; a global or nonlocal name counts twice."""
    uses: Counter[str] = Counter()
    for inner in ast.walk(node):
        if isinstance(inner, ast.Name):
            uses[inner.id] += 1
        elif isinstance(inner, (ast.Global, ast.Nonlocal)):
            uses.update(inner.names * 2)
    return uses


class _LoopFusion(_ContextualWalk):
    """Consecutive output statements joined; output loops fused into one call."""

    def join_outputs(self, statements: list[ast.stmt]) -> list[ast.stmt]:
        """Join consecutive output statements of one block into one call, in every block."""
        joined: list[ast.stmt] = []
        run: list[ast.stmt] = []

        def end_run() -> None:
            if len(run) == 1:
                joined.append(run[0])
            elif run:
                # Emitted again from the pieces of all, so that text meeting text is one literal.
                # (ignore: visit_Expr sets _ptl_pieces on the output statements it makes.)
                pieces = [p for s in run for p in s._ptl_pieces]  # type: ignore[attr-defined]
                joined.append(self.output(pieces, run[0], run[-1]))
            run.clear()

        for statement in statements:
            if not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                for field in ("body", "orelse", "finalbody"):
                    block = getattr(statement, field, None)
                    if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                        setattr(statement, field, self.join_outputs(block))
                for inner in getattr(statement, "handlers", ()) or getattr(statement, "cases", ()):
                    inner.body = self.join_outputs(inner.body)
            if self.fusing and isinstance(statement, ast.For):
                statement = self.fused_loop(statement)
            if hasattr(statement, "_ptl_pieces"):
                run.append(statement)
            else:
                end_run()
                joined.append(statement)
        end_run()
        return joined

    def fused_loop(self, loop: ast.For) -> ast.stmt:
        """*loop* as one loop_output() call, if it only outputs text and its own variable.

        The loop variable must be used nowhere else in the template (after the loop it
        is not bound).  The call spans the loop's lines, and is made after its parts
        are evaluated, at the ``for`` line: a tracer sees the ``for`` line, each body
        line once, then the ``for`` line again, as for a loop that ran.
        """
        target, body = loop.target, loop.body
        if (
            loop.orelse
            or not isinstance(target, ast.Name)
            or len(body) != 1
            or not hasattr(body[0], "_ptl_pieces")
            or not isinstance(body[0], ast.Expr)
            or not isinstance(call := body[0].value, ast.Call)
        ):
            return loop
        items = _output_items(call)
        texts = {_target_name(assign): text for text, assign in self.literals.items()}
        pattern: list[ast.expr] = []
        uses = 1
        for item in items:
            if isinstance(item, ast.Name) and item.id in texts:
                pattern.append(item)
            elif isinstance(item, ast.Name) and item.id == target.id:
                pattern.append(_located(ast.Constant(None), item))
                uses += 1
            elif (
                isinstance(item, ast.Call)
                and isinstance(item.func, ast.Name)
                and (item.func.id in _ITEM_OUTPUTS or item.func.id.startswith(_ESCAPER))
                and not item.keywords
                and item.args
                and isinstance(first := item.args[0], ast.Name)
                and first.id == target.id
                and all(
                    (isinstance(a, ast.Name) and a.id in texts) or _is_none(a)
                    for a in item.args[1:]
                )
            ):
                pattern.append(_located(ast.Tuple([item.func, *item.args[1:]], ast.Load()), item))
                uses += 1
            else:
                return loop
        if self.name_uses[target.id] != uses:
            return loop
        args = [_name(_OUT, loop), loop.iter, _located(ast.Tuple(pattern, ast.Load()), call)]
        first, last = pattern[0], pattern[-1]
        if len(pattern) > 1 and isinstance(first, ast.Name) and isinstance(last, ast.Name):
            # Between items the last text and the first are one piece.
            joint = _located(ast.Constant(texts[last.id] + texts[first.id]), last)
            args.append(_name(self.hoist(joint), last))
        fused = ast.Call(_name("_ptl_loop_output", loop), args, [])
        fused.lineno, fused.col_offset = loop.lineno, loop.col_offset
        fused.end_lineno, fused.end_col_offset = call.end_lineno, call.end_col_offset
        statement = ast.Expr(fused)
        ast.copy_location(statement, fused)
        return statement
