"""SOL-ExecBench axis expressions and constraints, evaluated safely (no eval()).

`expr` axes use `+ - * / // % **`, parentheses and unary +/- (benchmark-formats.md §1.2).
"""
from __future__ import annotations

import ast
import operator
from typing import Any

from forge.errors import ForgeInputError

_BIN = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
        ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
        ast.Pow: operator.pow}
_UN = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_CMP = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
        ast.Gt: operator.gt, ast.GtE: operator.ge}


class UnknownName(KeyError):
    """The expression names something that is not an axis (e.g. a tensor in a constraint)."""


def evaluate(expression: str, names: dict[str, Any], field: str = "expression", *, refs: bool = False) -> Any:
    """Value of an axis expression; with `refs`, tensor references (x[-1].item()) raise UnknownName
    so a constraint that needs tensor data is left to the benchmark's own harness."""
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError as exc:
        raise ForgeInputError(field, f"cannot parse {expression!r}: {exc.msg}") from None
    return _eval(tree.body, names, field, expression, refs)


def _eval(node: ast.AST, names: dict[str, Any], field: str, text: str, refs: bool = False) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in names:
            raise UnknownName(node.id)
        return names[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _BIN:
        return _BIN[type(node.op)](_eval(node.left, names, field, text, refs), _eval(node.right, names, field, text, refs))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UN:
        return _UN[type(node.op)](_eval(node.operand, names, field, text, refs))
    if isinstance(node, ast.Compare) and all(type(o) in _CMP for o in node.ops):
        left = _eval(node.left, names, field, text, refs)
        for op, right_node in zip(node.ops, node.comparators):
            right = _eval(right_node, names, field, text, refs)
            if not _CMP[type(op)](left, right):
                return False
            left = right
        return True
    if refs and isinstance(node, (ast.Subscript, ast.Call, ast.Attribute)):
        raise UnknownName(ast.unparse(node))
    raise ForgeInputError(field, f"unsupported syntax {type(node).__name__} in {text!r}; "
                                 "allowed: + - * / // % **, parentheses, unary +/-")


def resolve_axes(axes: dict[str, dict[str, Any]], given: dict[str, Any], where: str) -> dict[str, int]:
    """Values of every axis: const from the definition, var from the workload, expr computed."""
    values: dict[str, int] = {}
    exprs: dict[str, str] = {}
    for name, ax in axes.items():
        kind = ax.get("type")
        if kind == "const":
            v = ax.get("value")
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise ForgeInputError(f"{where}.axes.{name}.value", f"const axis needs an integer >= 0, got {v!r}")
            values[name] = v
        elif kind == "var":
            if name not in given:
                raise ForgeInputError(f"{where}.axes.{name}", "var axis has no value in the workload")
            v = given[name]
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise ForgeInputError(f"{where}.axes.{name}", f"var axis value must be an integer >= 0, got {v!r}")
            values[name] = v
        elif kind == "expr":
            if not isinstance(ax.get("expression"), str):
                raise ForgeInputError(f"{where}.axes.{name}.expression", "expr axis needs an expression string")
            exprs[name] = ax["expression"]
        else:
            raise ForgeInputError(f"{where}.axes.{name}.type", f"{kind!r}; allowed: const, var, expr")
    extra = set(given) - set(axes)
    if extra:
        raise ForgeInputError(f"{where}.axes.{sorted(extra)[0]}", "workload sets an axis the definition does not have")
    # expr axes may depend on each other: evaluate until nothing changes.
    while exprs:
        done = []
        for name, text in exprs.items():
            try:
                v = evaluate(text, values, f"{where}.axes.{name}.expression")
            except UnknownName:
                continue
            if isinstance(v, float):
                if not v.is_integer():
                    raise ForgeInputError(f"{where}.axes.{name}", f"{text!r} = {v} is not an integer")
                v = int(v)
            values[name] = v
            done.append(name)
        if not done:
            name = next(iter(exprs))
            raise ForgeInputError(f"{where}.axes.{name}.expression",
                                  f"{exprs[name]!r} names an unknown axis (or a cycle); axes: {', '.join(axes)}")
        for name in done:
            exprs.pop(name)
    return values
