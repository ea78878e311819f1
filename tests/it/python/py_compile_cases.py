"""Random small Python programs that CPython's parser accepts, with what CPython's compiler says
of each (None: it compiles; else the SyntaxError message), as JSON on stdout. The programs nest
functions, async functions, classes, loops, `with` and `try` around statements the compiler
judges by context: return, yield, await, async for / with, break, continue, global, nonlocal...

Usage: python3 py_compile_cases.py SEED COUNT
"""
import ast
import json
import random
import sys

LEAVES = [
    "return", "return 1", "yield", "x = yield 1", "yield from y", "await x",
    "async for a in b:\n    pass", "async with a:\n    pass", "break", "continue", "global x",
    "nonlocal x", "x = 1", "print(x)", "import x", "del x", "r = [a async for a in b]",
    "g = (await z for z in w)", "r = [await z for z in w]", "x += 1", "x: int = 1",
    "from m import *", "lambda: (yield)", "l = lambda: await q", "def h(x):\n    pass", "pass",
]
CONTEXTS = [
    "def f():", "async def f():", "class C:", "for i in y:", "while c:", "with m:", "try:",
    "if c:", "def g(x):", "async def k(x):",
]


def block(rng, depth):
    lines = []
    for _ in range(rng.randint(1, 3)):
        if depth < 4 and rng.random() < 0.45:
            ctx = rng.choice(CONTEXTS)
            lines.append(ctx)
            lines += ["    " + line for line in block(rng, depth + 1)]
            if ctx == "try:":
                lines.append(rng.choice(["except E:", "finally:", "except:"]))
                lines += ["    " + line for line in block(rng, depth + 1)]
            elif ctx in ("for i in y:", "while c:") and rng.random() < 0.3:
                lines.append("else:")
                lines += ["    " + line for line in block(rng, depth + 1)]
        else:
            lines += rng.choice(LEAVES).split("\n")
    return lines


def main():
    rng = random.Random(int(sys.argv[1]))
    count = int(sys.argv[2])
    cases, seen = [], set()
    while len(cases) < count:
        src = "\n".join(block(rng, 0)) + "\n"
        if src in seen:
            continue
        seen.add(src)
        try:
            ast.parse(src)
        except SyntaxError:
            continue
        try:
            compile(src, "t.py", "exec", dont_inherit=True)
            message = None
        except SyntaxError as err:
            message = err.msg
        cases.append({"src": src, "msg": message})
    json.dump(cases, sys.stdout)


main()
