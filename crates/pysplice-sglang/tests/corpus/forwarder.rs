//! The `add-forwarder` placement on the real Kimi-K2.5 wrapper: SGLang 0.5.9's
//! `KimiK25ForConditionalGeneration` lacks `set_eagle3_layers_to_capture`, later releases have it.

use crate::common;

use pysplice::{apply, revert, ParsedFile, Recipe, SourceFile, Status};

const SPEC: &str = r#"
[recipe]
id = "kimi-forward"
summary = "Expose set_eagle3_layers_to_capture on the Kimi-K2.5 wrapper"

[[hook]]
id = "forward-eagle3"
summary = "Forwarded set_eagle3_layers_to_capture to the language model"
in = "KimiK25ForConditionalGeneration"
add-forwarder = "set_eagle3_layers_to_capture"
via = "language_model"
"#;

fn kimi(version: &str) -> SourceFile {
    let path = common::models_dir(version).join("kimi_k25.py");
    let text = std::fs::read_to_string(&path).expect("kimi_k25.py is in the corpus");
    SourceFile::new(path.display().to_string(), text)
}

#[test]
fn forwarder_is_added_where_missing_and_reverts_exactly() {
    let recipe = Recipe::from_toml("kimi.toml", SPEC).unwrap();
    let original = kimi("0.5.9");
    let patched = apply(&recipe, original.clone()).unwrap();
    assert_eq!(
        patched.outcomes()[0].status,
        Status::Applied,
        "{:?}",
        patched.outcomes()
    );
    let parsed = ParsedFile::parse(SourceFile::new("out.py", patched.output())).unwrap();
    let method = parsed
        .locate("KimiK25ForConditionalGeneration.set_eagle3_layers_to_capture")
        .expect("the forwarder is a method of the wrapper");
    assert!(patched
        .output()
        .contains("return self.language_model.set_eagle3_layers_to_capture(*args, **kwargs)"));
    let (first, last) = patched.outcomes()[0].lines.unwrap();
    assert!(
        first < method.line() && method.end_line() < last,
        "the forwarder sits inside its frame"
    );
    let again = apply(&recipe, SourceFile::new("out.py", patched.output())).unwrap();
    assert!(!again.changed());
    assert_eq!(again.outcomes()[0].status, Status::AlreadyApplied);
    let back = revert(&recipe, SourceFile::new("out.py", patched.output())).unwrap();
    assert_eq!(back.output(), original.text());
}

#[test]
fn forwarder_is_skipped_where_the_wrapper_has_the_method() {
    let recipe = Recipe::from_toml("kimi.toml", SPEC).unwrap();
    for version in ["0.5.10", "0.5.14", "0.5.23"] {
        let patched = apply(&recipe, kimi(version)).unwrap();
        assert!(!patched.changed(), "{version}");
        match &patched.outcomes()[0].status {
            Status::Skipped { reason } => assert!(
                matches!(reason.skip(), Some(pysplice::SkipReason::AlreadyPresent { .. })),
                "{version}: {reason}"
            ),
            other => panic!("{version}: {other:?}"),
        }
    }
}
