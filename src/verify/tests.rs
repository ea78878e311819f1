use super::*;
use crate::parse::parse_module;
use crate::source::SourceFile;

fn problems_of(text: &str) -> Vec<String> {
    let root = parse_module(&SourceFile::new("t.py", text)).unwrap();
    check(&root, text).problems.into_iter().map(|p| p.message).collect()
}

/// The parser's refusal (its pre-scan enforces CPython's nesting limits before parsing) or, for
/// a text that parses, the checks' problems: either way the same words as CPython's.
fn refusals_of(text: &str) -> Vec<String> {
    match parse_module(&SourceFile::new("t.py", text)) {
        Ok(root) => check(&root, text).problems.into_iter().map(|p| p.message).collect(),
        Err(err) => vec![err.message],
    }
}

/// Each case with the message CPython 3.11's `compile` gives (checked with python3).
#[test]
fn compiler_errors_match_cpython() {
    let cases = [
        (
            "def f():\n    return [x async for x in z]\n",
            "asynchronous comprehension outside of an asynchronous function",
        ),
        (
            "async def f():\n    return lambda: await x\n",
            "'await' outside async function",
        ),
        ("def f():\n    await x\n", "'await' outside async function"),
        ("await x\n", "'await' outside function"),
        (
            "async def f():\n    class A:\n        await x\n",
            "'await' outside function",
        ),
        (
            "def f():\n    return [(yield) for x in z]\n",
            "'yield' inside list comprehension",
        ),
        (
            "async def f():\n    yield from x\n",
            "'yield from' inside async function",
        ),
        ("class A:\n    nonlocal x\n", "no binding for nonlocal 'x' found"),
        ("nonlocal x\n", "nonlocal declaration not allowed at module level"),
        (
            "def f():\n    def g():\n        nonlocal x\n",
            "no binding for nonlocal 'x' found",
        ),
        (
            "def f():\n    global x\n    x = 1\n    def g():\n        nonlocal x\n",
            "no binding for nonlocal 'x' found",
        ),
        (
            "def f():\n    print(x)\n    global x\n",
            "name 'x' is used prior to global declaration",
        ),
        (
            "def f():\n    x = 1\n    global x\n",
            "name 'x' is assigned to before global declaration",
        ),
        ("def f(x):\n    global x\n", "name 'x' is parameter and global"),
        (
            "def f():\n    x = 1\n    def g(x):\n        nonlocal x\n",
            "name 'x' is parameter and nonlocal",
        ),
        (
            "def f():\n    global x\n    x: int = 1\n",
            "annotated name 'x' can't be global",
        ),
        ("break\n", "'break' outside loop"),
        ("for x in y:\n    pass\nelse:\n    break\n", "'break' outside loop"),
        ("def f():\n    continue\n", "'continue' not properly in loop"),
        (
            "import os\nfrom __future__ import annotations\n",
            "from __future__ imports must occur at the beginning of the file",
        ),
        (
            "'''a'''\n'''b'''\nfrom __future__ import annotations\n",
            "from __future__ imports must occur at the beginning of the file",
        ),
        (
            "from __future__ import nothing\n",
            "future feature nothing is not defined",
        ),
        (
            "def f():\n    from os import *\n",
            "import * only allowed at module level",
        ),
        (
            "try:\n    pass\nexcept:\n    pass\nexcept E:\n    pass\n",
            "default 'except:' must be last",
        ),
        (
            "async def f():\n    yield 1\n    return 2\n",
            "'return' with value in async generator",
        ),
        (
            "async def f():\n    yield 1\n    return None\n",
            "'return' with value in async generator",
        ),
        ("__debug__ = 1\n", "cannot assign to __debug__"),
        ("class A:\n    yield 1\n", "'yield' outside function"),
        ("x = yield\n", "'yield' outside function"),
        ("return 1\n", "'return' outside function"),
        (
            "def f():\n    class A:\n        return 1\n",
            "'return' outside function",
        ),
        (
            "def f():\n    async with x:\n        pass\n",
            "'async with' outside async function",
        ),
        (
            "def f():\n    async for x in y:\n        pass\n",
            "'async for' outside async function",
        ),
        (
            "def f():\n    return [[await y for y in x] for x in z]\n",
            "asynchronous comprehension outside of an asynchronous function",
        ),
    ];
    for (text, message) in cases {
        assert_eq!(problems_of(text), [message], "{text}");
    }
}

/// What CPython compiles is never refused.
#[test]
fn valid_code_has_no_problems() {
    for text in [
        "def f():\n    return (await x for y in z)\n",
        "def f():\n    return (x async for x in z)\n",
        "async def f():\n    return [await x for x in z]\n",
        "g = (await x for y in z)\n",
        "def f():\n    x = 1\n    class A:\n        def g(self):\n            nonlocal x\n",
        "def f():\n    x = 1\n    def g():\n        nonlocal x\n        x = 2\n",
        "def f():\n    def g():\n        nonlocal x\n    x = 1\n",
        "for x in y:\n    try:\n        pass\n    finally:\n        continue\n",
        "while x:\n    for y in z:\n        pass\n    else:\n        break\n",
        "f = lambda: (yield)\n",
        "async def f():\n    yield 1\n    return\n",
        "def f():\n    yield 1\n    return 2\n",
        "async def f():\n    return [x for x in (await y for y in z)]\n",
        "'''doc'''\nfrom __future__ import annotations\nfrom __future__ import division\n",
        "def f():\n    global x\n    x = 1\n",
        "async def f():\n    async with a as b, c:\n        async for x in b:\n            await x\n",
        "class A:\n    def f(self):\n        return __class__\n",
        "match p:\n    case Point(x=0, y=yy) as q:\n        pass\n",
        // An import may precede the `global` declaration of its name (CPython 3.11 accepts it).
        "def f():\n    import x\n    global x\n",
        "def f():\n    global x\n    global x\n",
    ] {
        assert_eq!(problems_of(text), Vec::<String>::new(), "{text}");
    }
}

#[test]
fn nesting_limits_are_cpythons() {
    let parens = |n: usize| format!("x = {}1{}\n", "(".repeat(n), ")".repeat(n));
    assert!(refusals_of(&parens(200)).is_empty());
    assert_eq!(refusals_of(&parens(201)), ["too many nested parentheses"]);
    let indented = |n: usize| {
        let mut text = String::new();
        for i in 0..n {
            text.push_str(&format!("{}if x:\n", " ".repeat(i)));
        }
        text.push_str(&format!("{}pass\n", " ".repeat(n)));
        text
    };
    assert!(refusals_of(&indented(99)).is_empty());
    assert_eq!(refusals_of(&indented(100)), ["too many levels of indentation"]);
    let loops = |n: usize| {
        let mut text = String::new();
        for i in 0..n {
            text.push_str(&format!("{}for x in y:\n", " ".repeat(i)));
        }
        text.push_str(&format!("{}pass\n", " ".repeat(n)));
        text
    };
    assert!(refusals_of(&loops(20)).is_empty());
    assert_eq!(refusals_of(&loops(21)), ["too many statically nested blocks"]);
}

fn early(text: &str, inserted: &str) -> Option<String> {
    let root = parse_module(&SourceFile::new("t.py", text)).unwrap();
    let start = text.find(inserted).unwrap();
    let checked = check(&root, text);
    let line_of = |offset: usize| text[..offset].matches('\n').count() + 1;
    let ranges = std::iter::once(start..start + inserted.len()).collect::<Vec<_>>();
    checked
        .early_name_use(&ranges, &line_of)
        .map(|(_, name, line)| crate::error::ErrorKind::EarlyNameUse { name, bound_line: line }.to_string())
}

#[test]
fn inserted_import_time_code_must_not_use_names_bound_later() {
    let message = early("x = os.sep\nimport os\n", "x = os.sep\n").unwrap();
    assert!(message.contains("uses `os` before line 2 binds it"), "{message}");
    assert!(early("class A:\n    y = helper()\ndef helper():\n    pass\n", "y = helper()").is_some());
    assert!(early("@deco\ndef f():\n    pass\ndef deco(f):\n    return f\n", "@deco\n").is_some());
    assert!(early("def f(a=later):\n    pass\nlater = 1\n", "def f(a=later)").is_some());
    // Bound before, used only when called, a builtin, bound by the class itself, star import.
    assert!(early("import os\nx = os.sep\n", "x = os.sep\n").is_none());
    assert!(early("def f():\n    return os.sep\nimport os\n", "return os.sep").is_none());
    assert!(early("x = len([])\n", "x = len([])").is_none());
    assert!(early("class A:\n    os = 1\n    y = os\nimport os\n", "y = os").is_none());
    assert!(early("from m import *\nx = os.sep\nimport os\n", "x = os.sep").is_none());
    assert!(early("y = [os for os in z]\nimport os\n", "y = [os for os in z]").is_none());
    // Annotations are evaluated where they stand, unless `from __future__ import annotations`.
    assert!(early(
        "def f(x: Later):\n    pass\nclass Later:\n    pass\n",
        "def f(x: Later)"
    )
    .is_some());
    let lazy =
        "from __future__ import annotations\ndef f(x: Later) -> Later:\n    y: Later = x\nclass Later:\n    pass\n";
    assert!(early(lazy, "def f(x: Later) -> Later").is_none());
}
