//! What a hook's pattern captured, used in its code as `{$NAME}` / `{$NAME!r}`: rendered match by
//! match, sealed as rendered (a second apply is a no-op, a changed capture an update, revert
//! exact), and a name no pattern binds a spec error naming the hook and the TOML line.

use pysplice::{apply, revert, ErrorKind, PlacementReason, Recipe, SourceFile, SpecReason, Status, StringCapture};

use crate::engine::{assert_invariants, inline_recipe};

const SPEC: &str = r#"[recipe]
id = "cap"
summary = "captures"

[[hook]]
id = "announce"
summary = "Announced every layer"
in = "Block.__init__"
at = { after = "self.$ATTR = nn.$CLS($$$ARGS)", nth = "all" }
code = "print('set', {$ATTR!r}, self.{$ATTR}, dict({$ARGS}))"
"#;

const BLOCK: &str = "class Block:\n    def __init__(self, dim):\n        self.norm = nn.LayerNorm(dim, eps=1e-6)\n        self.proj = nn.Linear(dim, 4 * dim, bias=False)\n";

fn spec() -> Recipe {
    Recipe::from_toml("cap.toml", SPEC).unwrap()
}

#[test]
fn each_match_renders_with_its_own_captures() {
    let patched = apply(&spec(), SourceFile::new("m.py", BLOCK)).unwrap();
    let out = patched.output();
    assert!(
        out.contains("        self.norm = nn.LayerNorm(dim, eps=1e-6)\n        # >>> pysplice cap/announce sha256:"),
        "{out}"
    );
    assert!(
        out.contains("\n        print('set', 'norm', self.norm, dict(dim, eps=1e-6))\n"),
        "{out}"
    );
    assert!(
        out.contains("\n        print('set', 'proj', self.proj, dict(dim, 4 * dim, bias=False))\n"),
        "{out}"
    );
    assert_invariants(&spec(), "m.py", BLOCK, &patched);
}

#[test]
fn a_second_apply_is_already_applied_and_revert_gives_back_every_byte() {
    // CRLF and a multi-line argument list: the capture is sealed as rendered.
    let input = "class Block:\r\n    def __init__(self, dim):\r\n        self.proj = nn.Linear(\r\n            dim,\r\n            4 * dim,\r\n        )\r\n";
    let recipe = spec();
    let patched = apply(&recipe, SourceFile::new("m.py", input)).unwrap();
    assert!(
        patched
            .output()
            .contains("print('set', 'proj', self.proj, dict(dim,\r\n"),
        "{}",
        patched.output()
    );
    let again = apply(&recipe, SourceFile::new("m.py", patched.output())).unwrap();
    assert!(!again.changed());
    assert!(again.outcomes().iter().all(|o| o.status == Status::AlreadyApplied));
    let back = revert(&recipe, SourceFile::new("m.py", patched.output())).unwrap();
    assert_eq!(back.output().as_bytes(), input.as_bytes());
    assert_invariants(&recipe, "m.py", input, &patched);
}

#[test]
fn a_changed_capture_after_an_upstream_change_is_an_update() {
    let recipe = spec();
    let patched = apply(&recipe, SourceFile::new("m.py", BLOCK)).unwrap();
    // Upstream renames the argument the capture holds; the marker and its code stay.
    let upgraded = patched
        .output()
        .replace("nn.LayerNorm(dim, eps=1e-6)", "nn.LayerNorm(dim, eps=1e-5)");
    let updated = apply(&recipe, SourceFile::new("m.py", upgraded.as_str())).unwrap();
    assert_eq!(updated.outcomes()[0].status, Status::Updated);
    assert!(
        updated
            .output()
            .contains("print('set', 'norm', self.norm, dict(dim, eps=1e-5))"),
        "{}",
        updated.output()
    );
    assert!(!updated.output().contains("eps=1e-6"));
    let back = revert(&recipe, SourceFile::new("m.py", updated.output())).unwrap();
    assert_eq!(back.output(), BLOCK.replace("eps=1e-6", "eps=1e-5"));
}

#[test]
fn a_name_the_pattern_does_not_bind_is_a_spec_error_at_its_line() {
    let spec = SPEC.replace("self.{$ATTR}", "self.{$ATRR}");
    let err = Recipe::from_toml("cap.toml", &spec).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::Spec { reason: SpecReason::UnboundCapture { name, bound }, .. }
            if name == "ATRR" && bound == &["ARGS", "ATTR", "CLS"]),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(text.starts_with("cap.toml:10:"), "{text}");
    assert!(
        text.contains("`{$ATRR}` names no metavariable of the hook's patterns (they bind `$ARGS`, `$ATTR`, `$CLS`)"),
        "{text}"
    );
    assert!(text.ends_with("[hook announce]"), "{text}");
}

#[test]
fn a_capture_in_a_hook_without_a_pattern_is_a_spec_error() {
    let text = "[recipe]\nid = \"r\"\nsummary = \"s\"\n\n[[hook]]\nid = \"start\"\nsummary = \"s\"\nin = \"f\"\nat = \"start\"\ncode = \"print({$X})\"\n";
    let err = Recipe::from_toml("r.toml", text).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::Spec { reason: SpecReason::CaptureWithoutPattern { name }, .. } if name == "X"),
        "{err:?}"
    );
    let message = err.to_string();
    assert!(message.starts_with("r.toml:10:"), "{message}");
    assert!(message.ends_with("[hook start]"), "{message}");
    // wrap-returns without `when` has no pattern either; `unless-inside` does not capture.
    let wrap = "[recipe]\nid = \"r\"\nsummary = \"s\"\n\n[[hook]]\nid = \"w\"\nsummary = \"s\"\nin = \"f\"\nwrap-returns = \"g({value}, {$X})\"\nunless-inside = \"if $X: $$$\"\n";
    let err = Recipe::from_toml("r.toml", wrap).unwrap_err();
    assert!(
        matches!(
            err.kind(),
            ErrorKind::Spec {
                reason: SpecReason::CaptureWithoutPattern { .. },
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn when_captures_fill_in_start_code_and_wrapped_returns() {
    let recipe = inline_recipe(
        "[[hook]]\nid = \"start\"\nsummary = \"s\"\nin = \"f\"\nat = \"start\"\nwhen = \"return $R\"\ncode = \"log({$R!r})\"\n\n\
         [[hook]]\nid = \"wrap\"\nsummary = \"w\"\nin = \"f\"\nwhen = \"$OUT = compute($$$)\"\nwrap-returns = \"seen({value}, {$OUT!r})\"\n",
    );
    let input = "def f(x):\n    y = compute(x)\n    return y + 1\n";
    let patched = apply(&recipe, SourceFile::new("m.py", input)).unwrap();
    assert!(patched.output().contains("    log('y + 1')\n"), "{}", patched.output());
    assert!(
        patched.output().contains("    return seen((y + 1), 'y')\n"),
        "{}",
        patched.output()
    );
    assert_invariants(&recipe, "m.py", input, &patched);
    // The wrapped return without its marker line is recognised as this recipe's (not wrapped twice).
    let unmarked: String = patched
        .output()
        .lines()
        .filter(|line| !line.contains("~~~ pysplice"))
        .map(|line| format!("{line}\n"))
        .collect();
    let err = apply(&recipe, SourceFile::new("m.py", unmarked)).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Marker { .. }), "{err}");
}

#[test]
fn the_placements_own_match_wins_over_when() {
    let recipe = inline_recipe(
        "[[hook]]\nid = \"h\"\nsummary = \"s\"\nin = \"f\"\nwhen = \"$X = 1\"\nat = { after = \"$X = 2\", nth = \"all\" }\ncode = \"seen({$X!r})\"\n",
    );
    let input = "def f():\n    a = 1\n    b = 2\n    c = 2\n";
    let out = apply(&recipe, SourceFile::new("m.py", input))
        .unwrap()
        .output()
        .to_string();
    assert!(
        out.contains("    seen('b')\n") && out.contains("    seen('c')\n") && !out.contains("seen('a')"),
        "{out}"
    );
}

#[test]
fn a_capture_that_brings_a_marker_line_is_refused() {
    let recipe = inline_recipe(
        "[[hook]]\nid = \"h\"\nsummary = \"s\"\nin = \"f\"\nat = { after = \"x = $$$V\" }\ncode = \"y = {$V}\"\n",
    );
    let input = "def f():\n    x = g(\n        # >>> pysplice other/h sha256:0\n        1,\n    )\n";
    let err = apply(&recipe, SourceFile::new("m.py", input)).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::Placement { reason: PlacementReason::CapturedMarker { name } } if name == "V"),
        "{err}"
    );
    assert_eq!(err.hook(), Some("h"));
}

#[test]
fn a_captured_expression_keeps_its_meaning_where_the_template_puts_it() {
    let recipe = inline_recipe(
        "[[hook]]\nid = \"h\"\nsummary = \"s\"\nin = \"f\"\nat = { after = \"y = $VAL\", nth = \"all\" }\ncode = \"seen({$VAL} * 2, [{$VAL}], {$VAL!r})\"\n",
    );
    let input = "def f():\n    y = (1 + 2)\n    y = a + b\n    y = g(x)\n";
    let patched = apply(&recipe, SourceFile::new("m.py", input)).unwrap();
    let out = patched.output();
    // Parenthesized where `* 2` would bind into it; as written in a list and in `!r`.
    assert!(out.contains("    seen((1 + 2) * 2, [1 + 2], '1 + 2')\n"), "{out}");
    assert!(out.contains("    seen((a + b) * 2, [a + b], 'a + b')\n"), "{out}");
    assert!(out.contains("    seen(g(x) * 2, [g(x)], 'g(x)')\n"), "{out}");
    assert_invariants(&recipe, "m.py", input, &patched);
    let again = apply(&recipe, SourceFile::new("m.py", patched.output())).unwrap();
    assert!(!again.changed());
    let back = revert(&recipe, SourceFile::new("m.py", patched.output())).unwrap();
    assert_eq!(back.output(), input);
}

/// A hook that prints the source text of what `x = $V` assigns, inside a string literal;
/// `more` (TOML lines) added to the hook.
fn printing_hook(more: &str) -> Recipe {
    inline_recipe(&format!(
        "[[hook]]\nid = \"h\"\nsummary = \"s\"\nin = \"f\"\nat = {{ after = \"x = $V\" }}\ncode = '''print('x is {{$V}}')'''\n{more}"
    ))
}

const QUOTED: &str = "def f():\n    x = dict(a='1', b=\"it's\\n\")\n    return x\n\n\nf()\n";

/// Regression: a capture inside a string literal of the code was inserted as written, so a quote
/// in it ended the literal (a warning only). By default it is escaped for that literal, which
/// then holds the captured text: CPython prints it as written in the file.
#[test]
fn a_capture_inside_a_string_literal_is_escaped_by_default() {
    for recipe in [printing_hook(""), printing_hook("capture-in-string = \"escape\"\n")] {
        assert_eq!(recipe.hooks[0].capture_in_string, StringCapture::Escape);
        assert_eq!(recipe.warnings(), []);
        let patched = apply(&recipe, SourceFile::new("m.py", QUOTED)).unwrap();
        assert_invariants(&recipe, "m.py", QUOTED, &patched);
        let out = patched.output();
        assert!(
            out.contains(r#"    print('x is dict(a=\'1\', b="it\'s\\n")')"#),
            "{out}"
        );
        let python = std::process::Command::new("python3")
            .args(["-c", out])
            .output()
            .expect("python3");
        assert!(python.status.success(), "{}", String::from_utf8_lossy(&python.stderr));
        assert_eq!(
            String::from_utf8_lossy(&python.stdout),
            "x is dict(a='1', b=\"it's\\n\")\n"
        );
        assert_eq!(revert(&recipe, SourceFile::new("m.py", out)).unwrap().output(), QUOTED);
    }
}

/// `capture-in-string = "refuse"`: where the captured text would need escaping, the hook is
/// refused there (a required hook fails, an optional one is skipped); where it would not, it
/// is placed as written.
#[test]
fn a_hook_may_refuse_a_capture_inside_a_string_literal() {
    let recipe = printing_hook("capture-in-string = \"refuse\"\n");
    assert_eq!(recipe.hooks[0].capture_in_string, StringCapture::Refuse);
    let err = apply(&recipe, SourceFile::new("m.py", QUOTED)).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::Placement { reason: PlacementReason::CaptureInString { name } } if name == "V"),
        "{err}"
    );
    assert_eq!(err.hook(), Some("h"));
    let plain = "def f():\n    x = g(1)\n";
    let patched = apply(&recipe, SourceFile::new("m.py", plain)).unwrap();
    assert!(
        patched.output().contains("    print('x is g(1)')\n"),
        "{}",
        patched.output()
    );
    let optional = printing_hook("capture-in-string = \"refuse\"\noptional = true\n");
    let patched = apply(&optional, SourceFile::new("m.py", QUOTED)).unwrap();
    assert!(matches!(patched.outcomes()[0].status, Status::Skipped { .. }));
    assert_eq!(patched.output(), QUOTED);
    // The choice is a value of its own, and the builder says it too.
    let err = Recipe::from_toml(
        "r.toml",
        "[recipe]\nid = \"r\"\nsummary = \"s\"\n[[hook]]\nid = \"h\"\nsummary = \"s\"\nin = \"f\"\nat = \"start\"\ncode = \"pass\"\ncapture-in-string = \"maybe\"\n",
    )
    .unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Spec { .. }), "{err}");
    let built = Recipe::builder("r", "s")
        .hook(
            pysplice::Hook::builder("h", "s")
                .target("f")
                .at(pysplice::Anchor::after(pysplice::Pattern::parse("x = $V").unwrap()))
                .code("print('x is {$V}')")
                .capture_in_string(StringCapture::Refuse),
        )
        .build()
        .unwrap();
    let err = apply(&built, SourceFile::new("m.py", QUOTED)).unwrap_err();
    assert!(
        matches!(
            err.kind(),
            ErrorKind::Placement {
                reason: PlacementReason::CaptureInString { .. }
            }
        ),
        "{err}"
    );
}
