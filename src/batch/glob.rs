//! The file globs of a recipe's `files` key: `*` and `?` within one path segment, `**` across
//! segments, and dotted module names.

/// Whether `pattern` (a path glob, or a dotted module name when it has no `/` and does not end
/// in `.py`) names the file at `rel` (its path below the folder run, `/`-separated) whose module
/// is `module`. Neither is anchored at the folder run: `llama/modeling_llama.py` names
/// `models/llama/modeling_llama.py` too, `models.llama.modeling_llama` names
/// `transformers.models.llama.modeling_llama`.
pub(crate) fn names_file(pattern: &str, rel: &str, module: &str) -> bool {
    if is_module_name(pattern) {
        let pattern: Vec<&str> = pattern.split('.').collect();
        let module: Vec<&str> = module.split('.').collect();
        any_tail(&pattern, &module)
    } else {
        let pattern: Vec<&str> = pattern.trim_start_matches("./").split('/').collect();
        let rel: Vec<&str> = rel.split('/').collect();
        any_tail(&pattern, &rel)
    }
}

/// Whether `pattern` is a dotted module name rather than a path glob.
pub(crate) fn is_module_name(pattern: &str) -> bool {
    !pattern.contains('/') && !pattern.ends_with(".py")
}

/// Whether the glob `pattern` matches `parts` or one of its tails (from a segment on).
fn any_tail(pattern: &[&str], parts: &[&str]) -> bool {
    (0..parts.len()).any(|start| segments(pattern, &parts[start..]))
}

/// Whether the segments match, `**` standing for any number of segments.
fn segments(pattern: &[&str], parts: &[&str]) -> bool {
    match pattern.split_first() {
        None => parts.is_empty(),
        Some((&"**", rest)) => (0..=parts.len()).any(|skip| segments(rest, &parts[skip..])),
        Some((first, rest)) => parts
            .split_first()
            .is_some_and(|(part, more)| segment(first.as_bytes(), part.as_bytes()) && segments(rest, more)),
    }
}

/// Whether one segment matches: `*` any run of characters, `?` one.
fn segment(pattern: &[u8], text: &[u8]) -> bool {
    // Iterative with one backtrack point, linear in practice (no exponential blow-up on `*a*a*a`).
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match pattern.get(p) {
            Some(b'*') => {
                star = Some((p, t));
                p += 1;
            }
            Some(&c) if c == b'?' || c == text[t] => {
                p += 1;
                t += 1;
            }
            _ => match star {
                Some((sp, st)) => {
                    p = sp + 1;
                    t = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

#[cfg(test)]
mod tests {
    use super::names_file;

    #[test]
    fn globs_match_paths_at_any_depth() {
        let (rel, module) = (
            "models/llama/modeling_llama.py",
            "transformers.models.llama.modeling_llama",
        );
        for yes in [
            "modeling_llama.py",
            "llama/modeling_llama.py",
            "**/modeling_llama.py",
            "models/*/modeling_*.py",
            "models/**/*.py",
            "modeling_llam?.py",
            "transformers.models.llama.modeling_llama",
            "llama.modeling_llama",
            "models.*.modeling_llama",
            "modeling_llama",
        ] {
            assert!(names_file(yes, rel, module), "{yes}");
        }
        for no in [
            "modeling_llama2.py",
            "llama/*.txt",
            "models/modeling_llama.py",
            "transformers.models.llama",
            "modeling",
            "llama.modeling_llama.x",
        ] {
            assert!(!names_file(no, rel, module), "{no}");
        }
    }

    #[test]
    fn stars_do_not_blow_up() {
        let text = "a".repeat(200);
        assert!(!names_file(
            &format!("{}b.py", "*a".repeat(50)),
            &format!("{text}.py"),
            "m"
        ));
    }
}
