"""Loop fusion: consecutive output statements joined, output loops made one C call."""

from __future__ import annotations

import ast
from collections import Counter

from ptl_wsgi.compiler.contextual import _ContextualWalk
from ptl_wsgi.compiler.names import _ESCAPER, _OUT
from ptl_wsgi.compiler.nodes import _is_none, _located, _name, _target_name

# Calls that output a fused loop's item (besides the escapers).
_ITEM_OUTPUTS = frozenset(
    {
        "_ptl_field_output",
        "_ptl_percent_output",
        "_ptl_outside_text",
        "_ptl_field_outside",
        "_ptl_percent_outside",
    }
)
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

        The variable may be output as it is, through an output function or an
        escaper, or be read from: its attributes and items (``a.url``,
        ``row["name"][0]``), each read made by loop_output() at the place the
        body makes it, into a slot that the body's later parts output.  The loop
        variable must be used nowhere else in the template (after the loop it is
        not bound).  The call spans the loop's lines, and is made after its parts
        are evaluated, at the ``for`` line: a tracer sees the ``for`` line, each
        body line once, then the ``for`` line again, as for a loop that ran; an
        error in a read or an escaper is reported at the ``for`` line.
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
        texts = {_target_name(assign): text for text, assign in self.literals.items()}
        pattern = _Pattern(target.id, set(texts))
        if not all(pattern.output(item) for item in _output_items(call)):
            return loop
        # (The compiler's temporaries, pattern.slots, live within one output call.)
        if self.name_uses[target.id] != pattern.uses:
            return loop
        parts = pattern.parts
        args = [_name(_OUT, loop), loop.iter, _located(ast.Tuple(parts, ast.Load()), call)]
        first, last = parts[0], parts[-1]
        if len(parts) > 1 and isinstance(first, ast.Name) and isinstance(last, ast.Name):
            # Between items the last text and the first are one piece.
            joint = _located(ast.Constant(texts[last.id] + texts[first.id]), last)
            args.append(_name(self.hoist(joint), last))
        fused = ast.Call(_name("_ptl_loop_output", loop), args, [])
        fused.lineno, fused.col_offset = loop.lineno, loop.col_offset
        fused.end_lineno, fused.end_col_offset = call.end_lineno, call.end_col_offset
        statement = ast.Expr(fused)
        ast.copy_location(statement, fused)
        return statement


def _is_output_function(func: ast.expr) -> bool:
    return isinstance(func, ast.Name) and (func.id in _ITEM_OUTPUTS or func.id.startswith(_ESCAPER))


def _key(node: ast.expr) -> bool:
    """Whether *node* is an item's key loop_output() can take: a constant, not a str."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
        return isinstance(node, ast.Constant) and type(node.value) in (int, float, complex)
    # (A str would read as an attribute's name: a template's str literals are hoisted.)
    return isinstance(node, ast.Constant) and type(node.value) is not str


class _Pattern:
    """The parts of loop_output()'s pattern for one loop body, in its order of evaluation.

    Slot 0 is the loop variable; a value read from it (``a.url``, ``row[0]``) gets
    the next slot, and the compiler's temporaries that hold a value (``_ptl_v1 :=
    a.title`` in ``first_of``, the int check's) name its slot.
    """

    def __init__(self, variable: str, texts: set[str]) -> None:
        self.variable, self.texts = variable, texts
        self.parts: list[ast.expr] = []
        self.slots: dict[str, int] = {}  # temporary -> slot
        self.next_slot = 1
        self.uses = 1  # the for statement's own

    def output(self, item: ast.expr) -> bool:
        """Add the parts that output *item* (a piece of the body's output call)."""
        if isinstance(item, ast.Name) and item.id in self.texts:
            self.parts.append(item)
            return True
        if isinstance(item, ast.IfExp):
            # v if type(v := value) is int else escaper(v): the escaper outputs an int
            # as it is, so loop_output() calls it on every value.
            test, held = item.test, None
            if (
                isinstance(test, ast.Compare)
                and isinstance(test.left, ast.Call)
                and _is_name(test.left.func, "_ptl_type")
                and len(test.left.args) == 1
                and isinstance(held := test.left.args[0], ast.NamedExpr)
                and [type(op) for op in test.ops] == [ast.Is]
                and _is_name(test.comparators[0], "_ptl_int")
                and _is_name(item.body, held.target.id)
                and isinstance(item.orelse, ast.Call)
                and isinstance(item.orelse.func, ast.Name)
                and item.orelse.func.id.startswith(_ESCAPER)
                and item.orelse.args
                and _is_name(item.orelse.args[0], held.target.id)
            ):
                slot = self.value(held)
                return slot is not None and self.call(item.orelse, slot)
            return False
        if isinstance(item, ast.Call) and _is_output_function(item.func):
            slot = self.value(item.args[0]) if item.args else None
            return slot is not None and self.call(item, slot)
        slot = self.value(item)
        if slot is None:
            return False
        self.parts.append(
            _located(ast.Constant(None), item) if slot == 0 else _slot_part(slot, [], item)
        )
        return True

    def call(self, call: ast.Call, slot: int) -> bool:
        """Add the part ``f(value in slot, *extra)`` of *call*, if its extras are text."""
        extras = call.args[1:]
        if call.keywords or len(extras) > 3:
            return False
        if not all((isinstance(a, ast.Name) and a.id in self.texts) or _is_none(a) for a in extras):
            return False
        if slot == 0:
            self.parts.append(_located(ast.Tuple([call.func, *extras], ast.Load()), call))
        else:
            self.parts.append(_located(_slot_part(slot, [call.func, *extras], call), call))
        return True

    def value(self, node: ast.expr) -> int | None:
        """The slot that holds *node*'s value, after the parts that read it; None if none can."""
        if isinstance(node, ast.Name):
            if node.id == self.variable:
                self.uses += 1
                return 0
            return self.slots.get(node.id)
        if isinstance(node, ast.NamedExpr):
            name = node.target.id
            if not name.startswith(_TEMPORARY) or name in self.slots:
                return None
            slot = self.value(node.value)
            if slot is not None:
                self.slots[name] = slot
            return slot
        if isinstance(node, ast.Call) and _is_name(node.func, "_ptl_first_of"):
            # first_of(a, (t := b), ...): every argument evaluated, in order; a is the value.
            if node.keywords or not node.args:
                return None
            slots = [self.value(arg) for arg in node.args]
            return None if None in slots else slots[0]
        read = node
        steps: list[ast.expr] = []
        while isinstance(node, (ast.Attribute, ast.Subscript)):
            if isinstance(node, ast.Attribute):
                if node.attr.startswith("__") and not node.attr.endswith("__"):
                    return None  # in a class, Python reads a mangled name (_Cls__x)
                steps.append(_located(ast.Constant(node.attr), node))
            elif _key(node.slice) or (
                isinstance(node.slice, ast.Name) and node.slice.id in self.texts
            ):
                steps.append(node.slice)
            else:
                return None
            node = node.value
        if not steps or not _is_name(node, self.variable) or self.next_slot >= _SLOTS:
            return None
        self.uses += 1
        slot, self.next_slot = self.next_slot, self.next_slot + 1
        self.parts.append(_slot_part(slot, [ast.Tuple(steps[::-1], ast.Load())], read))
        return slot


# loop_output()'s slots: the item's and 31 for values read from it.
_SLOTS = 32
_TEMPORARY = "_ptl_v"


def _is_name(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _slot_part(slot: int, rest: list[ast.expr], ref: ast.AST) -> ast.Tuple:
    return _located(ast.Tuple([ast.Constant(slot), *rest], ast.Load()), ref)
