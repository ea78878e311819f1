"""Writes the hidden-state dump's Python (the hs_dump package beside this file) into the recipes.

    python3 crates/pysplice-sglang/python/recipe_code.py           # check: exit 1 and a diff if stale
    python3 crates/pysplice-sglang/python/recipe_code.py --write   # rewrite the recipes' code blocks

The recipes stay self-contained TOML (what `pysplice apply --spec FILE` reads and what the
programs compile in): this script puts into their `code = '''...'''` blocks the `dump-helpers`
block (hs_dump.HEADER, then each definition that hs_dump.HELPERS names, exactly as its module
writes it, two blank lines apart) and the bodies of the functions of hs_dump/hooks.py, and leaves
every other byte of the TOML files as it is. Standard library only.
"""

import ast
import difflib
import io
import sys
import tokenize
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGE = HERE / "pysplice_sglang" / "dump"
RECIPES = HERE.parent / "recipes"
# Each recipe file and the hooks whose code this script owns in it.
TARGETS = (
    ("sglang_hs_dump.toml", ("dump-helpers", "init", "capture")),
    ("sglang_hs_dump_models.toml", ("init", "capture")),
)
# A module's own text that is not injected: its docstring, its imports (torch's among them, in a
# try: the fallback for running without PyTorch). Anything else at the top level (an assignment,
# a call) would exist here but not in the patched file, so it is refused.
NOT_INJECTED = (ast.Import, ast.ImportFrom, ast.Try)
QUOTES = "'" * 3


class SourceError(Exception):
    """A package or recipe file this script cannot use; the message names the file and line."""


def where(path, line):
    """path:line for a message, relative to the checkout when it is under it."""
    try:
        path = path.relative_to(HERE.parents[2])
    except ValueError:
        pass
    return "%s:%d" % (path, line)


def literal(tree, name, path):
    """The value of the top-level assignment `name = <literal>` of a module."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == [name]:
            try:
                return ast.literal_eval(node.value)
            except ValueError:
                raise SourceError("%s: %s is not a literal" % (where(path, node.lineno), name)) from None
    raise SourceError("%s: no %s" % (where(path, 1), name))


def parse(path):
    """(lines, tree) of a Python file of the package."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SourceError("%s: cannot be read: %s" % (where(path, 1), exc)) from None
    try:
        tree = ast.parse(text, str(path))
    except SyntaxError as exc:
        raise SourceError("%s: %s" % (where(path, exc.lineno or 1), exc.msg)) from None
    return text.split("\n"), tree


def piece(lines, node):
    """The lines of a top-level definition, from its first decorator to its last line, comments
    at the end of its body included (the syntax tree ends at the last statement)."""
    start = min([d.lineno for d in node.decorator_list] + [node.lineno]) - 1
    end = node.end_lineno
    while end < len(lines) and (not lines[end].strip() or lines[end][:1] in " \t" and lines[end].lstrip()[:1] == "#"):
        end += 1
    while not lines[end - 1].strip():
        end -= 1
    return lines[start:end]


def definitions(path, allowed):
    """{name: (lines, node)} of the top-level definitions of a module; each must be in `allowed`."""
    lines, tree = parse(path)
    out = {}
    for k, node in enumerate(tree.body):
        if k == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # the docstring
        if isinstance(node, NOT_INJECTED):
            continue
        if not isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            raise SourceError(
                "%s: only imports and definitions at the top level (this would not reach the patched file)"
                % where(path, node.lineno)
            )
        if node.name not in allowed:
            raise SourceError("%s: %s is not named in %s" % (where(path, node.lineno), node.name, allowed.name))
        out[node.name] = (lines, node)
    return out


class Names(set):
    """A set of names with the place that lists them, for messages."""

    def __init__(self, names, name):
        super().__init__(names)
        self.name = name


def helpers_code(header, helpers):
    """The dump-helpers block: the header, then the definitions HELPERS names, in its order."""
    modules = {}
    for entry in helpers:
        module, _, name = entry.partition(".")
        modules.setdefault(module, set()).add(name)
    found = {}
    for path in sorted(PACKAGE.glob("*.py")):
        if path.stem in ("__init__", "hooks"):
            continue
        allowed = Names(modules.get(path.stem, ()), "HELPERS (as %s.NAME) of hs_dump/__init__.py" % path.stem)
        for name, value in definitions(path, allowed).items():
            found["%s.%s" % (path.stem, name)] = value
    missing = [entry for entry in helpers if entry not in found]
    if missing:
        raise SourceError("%s: HELPERS names what no module defines: %s" % (where(PACKAGE / "__init__.py", 1), missing))
    if len(set(helpers)) != len(helpers):
        raise SourceError("%s: HELPERS names a definition twice" % where(PACKAGE / "__init__.py", 1))
    pieces = ["\n".join(piece(*found[entry])) for entry in helpers]
    return header + "\n\n" + "\n\n\n".join(pieces) + "\n"


def hook_code(path, lines, node):
    """A function of hooks.py as hook code: its body dedented, each parameter after `self`
    written as the recipe's {param.N} slot."""
    if not isinstance(node, ast.FunctionDef) or not lines[node.lineno - 1].rstrip().endswith(":"):
        raise SourceError("%s: a hook is a function whose signature takes one line" % where(path, node.lineno))
    body = piece(lines, node)[node.lineno - min([d.lineno for d in node.decorator_list] + [node.lineno]) + 1 :]
    out = []
    for k, line in enumerate(body):
        if line.strip() and not line.startswith("    "):
            raise SourceError("%s: not indented by 4 spaces" % where(path, node.lineno + 1 + k))
        out.append(line[4:])
    text = "\n".join(out) + "\n"
    slots = {arg.arg: "{param.%d}" % k for k, arg in enumerate(node.args.args) if k > 0}
    edits, previous = [], None
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.NAME and tok.string in slots and previous != ".":
            edits.append((tok.start, tok.end, slots[tok.string]))
        if tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT):
            previous = tok.string
    rows = text.split("\n")
    for (row, col), (_, end), slot in reversed(edits):
        rows[row - 1] = rows[row - 1][:col] + slot + rows[row - 1][end:]
    return "\n".join(rows)


def codes():
    """{hook id: code} of every hook whose code the package holds."""
    init = PACKAGE / "__init__.py"
    _, tree = parse(init)
    header, helpers, hooks = (literal(tree, name, init) for name in ("HEADER", "HELPERS", "HOOKS"))
    if not isinstance(header, str) or not header.endswith("\n") or not isinstance(helpers, tuple):
        raise SourceError("%s: HEADER is text ending in a newline, HELPERS a tuple" % where(init, 1))
    out = {"dump-helpers": helpers_code(header, helpers)}
    path = PACKAGE / "hooks.py"
    for name, (lines, node) in definitions(path, Names(hooks, "HOOKS of hs_dump/__init__.py")).items():
        out[name] = hook_code(path, lines, node)
    missing = [name for name in hooks if name not in out]
    if missing:
        raise SourceError("%s: no function for the hooks %s" % (where(path, 1), missing))
    for name, code in out.items():
        if QUOTES in code:
            raise SourceError("hook %s: its code holds %s, which ends a TOML literal string" % (name, QUOTES))
    return out


def code_span(text, path, hook):
    """(start, end) of the text of hook `hook`'s `code = '''...'''` block in a recipe."""
    head = '\n[[hook]]\nid = "%s"\n' % hook
    at = text.find(head)
    if at < 0 or text.find(head, at + 1) >= 0:
        raise SourceError("%s: needs exactly one [[hook]] with id = %r" % (where(path, 1), hook))
    stop = text.find("\n[[hook]]", at + 1)
    stop = len(text) if stop < 0 else stop
    opening = "\ncode = " + QUOTES + "\n"
    start = text.find(opening, at, stop)
    if start < 0:
        raise SourceError("%s: hook %s has no code = %s block" % (where(path, text.count("\n", 0, at) + 2), hook, QUOTES))
    start += len(opening)
    end = text.find("\n" + QUOTES + "\n", start - 1, stop)
    if end < 0:
        raise SourceError("%s: hook %s: its code block does not end" % (where(path, text.count("\n", 0, start) + 1), hook))
    return start, end + 1


def recipes():
    """[(path, text now, text with the package's code)] of every recipe this script writes."""
    code = codes()
    out = []
    for name, hooks in TARGETS:
        path = RECIPES / name
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise SourceError("%s: cannot be read: %s" % (where(path, 1), exc)) from None
        new = text
        for hook in hooks:
            start, end = code_span(new, path, hook)
            new = new[:start] + code[hook] + new[end:]
        out.append((path, text, new))
    return out


def main(argv):
    if argv not in ([], ["--write"]):
        sys.stderr.write("usage: recipe_code.py [--write]\n")
        return 2
    try:
        todo = recipes()
    except SourceError as exc:
        sys.stderr.write("recipe_code.py: %s\n" % exc)
        return 2
    stale = [(path, old, new) for path, old, new in todo if old != new]
    if argv == ["--write"]:
        for path, _, new in stale:
            path.write_text(new, encoding="utf-8")
            print("wrote %s" % where(path, 1).rsplit(":", 1)[0])
        return 0
    for path, old, new in stale:
        name = where(path, 1).rsplit(":", 1)[0]
        diff = list(difflib.unified_diff(old.splitlines(True), new.splitlines(True), name, name + " (from hs_dump)"))
        sys.stdout.write("".join(diff[:80]) + ("... (%d more lines)\n" % (len(diff) - 80) if len(diff) > 80 else ""))
    if stale:
        sys.stderr.write("the recipes' code differs from crates/pysplice-sglang/python/pysplice_sglang/dump: run %s --write\n" % sys.argv[0])
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
