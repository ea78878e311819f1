#!/usr/bin/env python3
"""CPython reference outline: python3 tests/it/python/py_outline.py FILE...

Prints one JSON object mapping each FILE (as given) to the list of its
class/def definitions at any depth, in source pre-order:

    {"path": "Outer.Inner.m", "kind": "class"|"function"|"method",
     "line": N, "end_line": N, "decorator_line": N|null, "async": bool}

or to {"error": "..."} when the file does not parse. `path` is what CPython
would put in `__qualname__`; kind is "method" when the enclosing scope is a
class body (even under an `if`/`try` there), "class" for classes, else
"function". Lines are 1-based: `line` is the def/class keyword line,
`decorator_line` the line of the first decorator expression.
"""
import ast
import json
import sys

# Statement-list fields, in source order for every statement that has them
# (Try: body, handlers, orelse, finalbody). Expressions are never walked:
# a def/class can only appear as a statement.
_BLOCKS = ("body", "handlers", "orelse", "finalbody", "cases")
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _stmts(node):
    """Statements directly nested in node's blocks (through handlers/cases)."""
    for field in _BLOCKS:
        for child in getattr(node, field, ()):
            if isinstance(child, (ast.ExceptHandler, ast.match_case)):
                yield from child.body
            else:
                yield child


def _globals(scope):
    """Names declared `global` anywhere in scope's own body (not nested scopes)."""
    names, todo = set(), list(_stmts(scope))
    while todo:
        s = todo.pop()
        if isinstance(s, ast.Global):
            names.update(s.names)
        elif not isinstance(s, _DEFS):
            todo.extend(_stmts(s))
    return names


def outline(tree):
    out = []

    def walk(scope, qual, in_class, in_func):
        # CPython quirk (compile.c compiler_set_qualname): a def whose name is
        # declared `global` in the enclosing function/class gets a bare qualname.
        forced = _globals(scope) if qual else ()
        todo = list(_stmts(scope))
        todo.reverse()
        while todo:  # explicit stack keeps pre-order without deep recursion
            s = todo.pop()
            if isinstance(s, _DEFS):
                if not qual or s.name in forced:
                    path = s.name
                elif in_func:
                    path = qual + ".<locals>." + s.name
                else:
                    path = qual + "." + s.name
                is_class = isinstance(s, ast.ClassDef)
                out.append({
                    "path": path,
                    "kind": "class" if is_class else ("method" if in_class else "function"),
                    "line": s.lineno,
                    "end_line": s.end_lineno,
                    "decorator_line": s.decorator_list[0].lineno if s.decorator_list else None,
                    "async": isinstance(s, ast.AsyncFunctionDef),
                })
                walk(s, path, is_class, not is_class)
            else:
                todo.extend(reversed(list(_stmts(s))))

    walk(tree, "", False, False)
    return out


def main(files):
    result = {}
    for name in files:
        try:
            with open(name, "rb") as f:
                data = f.read()
            # bytes, so the coding cookie / BOM is honoured exactly as CPython does
            result[name] = outline(ast.parse(data, filename=name))
        except (SyntaxError, ValueError, RecursionError, MemoryError, OSError) as e:
            result[name] = {"error": f"{type(e).__name__}: {e}"}
    json.dump(result, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
