//! Recipe TOML built as text, for the tests of bounded expansion in the library and through
//! the `pysplice` program: a large variable, and hooks that use it at the module's end.

/// A recipe `grow` with `[vars] big = <big bytes of 'a'>` and `hooks` (TOML text, such as
/// [`hook_at_module_end`] makes) after it.
#[must_use]
pub fn recipe_with_big_var(big: usize, hooks: &str) -> String {
    format!(
        "[recipe]\nid = \"grow\"\nsummary = \"s\"\n\n[vars]\nbig = \"{}\"\n\n{hooks}",
        "a".repeat(big)
    )
}

/// One `[[hook]]` table `id` writing `code` (a TOML literal string: no `'''` in it) at the
/// module's end.
#[must_use]
pub fn hook_at_module_end(id: &str, code: &str) -> String {
    format!("[[hook]]\nid = \"{id}\"\nsummary = \"s\"\nin = \"module\"\nat = \"end\"\ncode = '''{code}'''\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_variable_has_the_size_asked_and_the_hooks_follow_it() {
        let text = recipe_with_big_var(5, &hook_at_module_end("h", "x = 1"));
        assert!(text.contains("big = \"aaaaa\"\n"));
        assert!(text
            .ends_with("[[hook]]\nid = \"h\"\nsummary = \"s\"\nin = \"module\"\nat = \"end\"\ncode = '''x = 1'''\n\n"));
    }
}
