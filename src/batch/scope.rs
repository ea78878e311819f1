//! Which files of a folder run a recipe is for: its `files` globs, a cheap text prefilter (the
//! file defines a name a target starts with, or carries the recipe's markers), then the parsed
//! file's definitions.

use memchr::memmem;

use super::glob;
use crate::locate::Target;
use crate::outline::ParsedFile;
use crate::spec::{Hook, Recipe};

/// A recipe's targeting, worked out once for every file of a run.
pub(crate) struct Scope<'r> {
    recipe: &'r Recipe,
    /// Per targeted hook (in recipe order, by index): the names one of which a file must define
    /// (`class NAME` or `def NAME`) to hold a target; `None` when the text cannot tell (a
    /// selector chooses the classes).
    needles: Vec<(usize, Option<Vec<String>>)>,
    /// What every marker line of the recipe holds.
    marker: String,
}

impl<'r> Scope<'r> {
    /// The scope of `recipe`.
    pub(crate) fn new(recipe: &'r Recipe) -> Scope<'r> {
        let needles = recipe
            .hooks
            .iter()
            .enumerate()
            .filter(|(_, hook)| is_targeted(hook))
            .map(|(i, hook)| (i, first_names(&hook.target)))
            .collect();
        Scope {
            recipe,
            needles,
            marker: format!(" pysplice {}/", recipe.id),
        }
    }

    /// The recipe.
    pub(crate) fn recipe(&self) -> &'r Recipe {
        self.recipe
    }

    /// Whether the recipe's `files` key takes in the file at `rel` (module `module`).
    pub(crate) fn takes(&self, rel: &str, module: &str) -> bool {
        self.recipe.files.is_empty() || self.recipe.files.iter().any(|g| glob::names_file(g, rel, module))
    }

    /// Whether the recipe has hooks with targets; one without (imports, module helpers only)
    /// is for every file it takes.
    pub(crate) fn has_targets(&self) -> bool {
        !self.needles.is_empty()
    }

    /// Whether the text carries this recipe's markers.
    pub(crate) fn marked(&self, text: &str) -> bool {
        memmem::find(text.as_bytes(), self.marker.as_bytes()).is_some()
    }

    /// Whether `text` may hold a target (cheap; no parse): a file for which this is false holds
    /// none.
    pub(crate) fn may_hold_target(&self, text: &str) -> bool {
        self.needles.iter().any(|(_, names)| match names {
            None => true,
            Some(names) => names.iter().any(|name| defines(text, name)),
        })
    }

    /// The targeted hooks (indexes into the recipe's hooks) whose targets `file` holds.
    pub(crate) fn hooks_here(&self, file: &ParsedFile) -> Vec<usize> {
        self.needles
            .iter()
            .map(|&(i, _)| i)
            .filter(|&i| target_here(self.recipe, &self.recipe.hooks[i], file))
            .collect()
    }

    /// The targeted hooks, by index.
    pub(crate) fn targeted(&self) -> impl Iterator<Item = usize> + '_ {
        self.needles.iter().map(|&(i, _)| i)
    }

    /// The recipe for one file: the targeted hooks whose targets it does not hold are optional
    /// there (skipped, saying why), so that one file without a target fails nothing.
    pub(crate) fn for_file(&self, here: &[usize]) -> Recipe {
        let mut recipe = self.recipe.clone();
        for i in self.targeted() {
            if !here.contains(&i) {
                recipe.hooks[i].optional = true;
            }
        }
        recipe
    }
}

/// Whether a hook has a target of its own (not the module: imports, module-level code).
pub(crate) fn is_targeted(hook: &Hook) -> bool {
    !matches!(hook.target, Target::Module)
}

/// A target as a recipe writes it, for messages.
pub(crate) fn describe(target: &Target) -> String {
    match target {
        Target::Module => "module".to_string(),
        Target::Definition { path, ordinal: None } => path.clone(),
        Target::Definition { path, ordinal: Some(n) } => format!("{path}#{n}"),
        Target::Paths(paths) => paths.join("`, `"),
        Target::Select { selector, method: None } => format!("a class of [select.{selector}]"),
        Target::Select {
            selector,
            method: Some(m),
        } => format!("{m} of a class of [select.{selector}]"),
    }
}

/// The names of a target's outermost definitions, for the prefilter.
fn first_names(target: &Target) -> Option<Vec<String>> {
    let first = |path: &str| path.split(['.', '#']).next().unwrap_or(path).to_string();
    match target {
        Target::Module => Some(Vec::new()),
        Target::Definition { path, .. } => Some(vec![first(path)]),
        Target::Paths(paths) => Some(paths.iter().map(|p| first(p)).collect()),
        Target::Select { .. } => None,
    }
}

/// Whether `text` has `class NAME` or `def NAME` followed by what ends a name: a file without
/// it defines no `NAME` (a file with it may still not: the parse decides).
fn defines(text: &str, name: &str) -> bool {
    let bytes = text.as_bytes();
    memmem::find_iter(bytes, name.as_bytes()).any(|at| {
        let after = bytes.get(at + name.len()).copied();
        let ends = !after.is_some_and(|c| c == b'_' || c.is_ascii_alphanumeric() || c >= 0x80);
        let before = &bytes[..at];
        let keyword = before.trim_ascii_end();
        let spaced = keyword.len() < before.len();
        ends && spaced && (keyword.ends_with(b"class") || keyword.ends_with(b"def"))
    })
}

/// Whether the hook's target is in `file`.
fn target_here(recipe: &Recipe, hook: &Hook, file: &ParsedFile) -> bool {
    // `requires` is left to the plan: a hook whose target is here but whose requirement is not
    // is skipped there on purpose, as in a run of one file (and its target was found).
    let exists = |path: &str| !file.find_all(path.split('#').next().unwrap_or(path)).is_empty();
    match &hook.target {
        Target::Module => true,
        Target::Definition { path, .. } => exists(path),
        Target::Paths(paths) => paths.iter().any(|p| exists(p)),
        Target::Select { .. } => {
            crate::project::select::in_file(recipe, file, &hook.id).is_ok_and(|paths| !paths.is_empty())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::defines;

    #[test]
    fn the_prefilter_looks_for_definitions() {
        assert!(defines("class LlamaModel(nn.Module):\n", "LlamaModel"));
        assert!(defines("x = 1\nasync def  forward(self):\n", "forward"));
        assert!(!defines("from m import LlamaModel\n", "LlamaModel"));
        assert!(!defines("class LlamaModelX:\n", "LlamaModel"));
        assert!(!defines("LlamaModel\n", "LlamaModel"));
    }
}
