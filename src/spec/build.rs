//! Recipes built in code ([`Recipe::builder`], [`Hook::builder`]): the same fields as a TOML
//! recipe, checked by the same rules when [`RecipeBuilder::build`] compiles them.

use toml::Spanned;

use crate::error::Error;
use crate::pattern::Depth;
use crate::source::SourceFile;

use super::raw::{RawAnchor, RawAt, RawHook, RawIn, RawSpec};
use super::{Hook, Nth, Recipe};

/// A recipe being built in code; [`RecipeBuilder::build`] checks it.
#[derive(Debug)]
#[must_use]
pub struct RecipeBuilder {
    raw: RawSpec,
}

/// A hook being built in code, for [`RecipeBuilder::hook`]. Its fields are those of a
/// `[[hook]]` table, named the same (`in` is [`HookBuilder::target`]).
#[derive(Debug)]
#[must_use]
pub struct HookBuilder {
    raw: RawHook,
}

impl Recipe {
    /// A recipe built in code, with the id written into every marker and a one-line summary.
    ///
    /// ```
    /// use pysplice::{apply, Hook, Recipe, SourceFile};
    ///
    /// let recipe = Recipe::builder("demo", "Count calls")
    ///     .var("attr", "calls")
    ///     .hook(
    ///         Hook::builder("count", "Counted calls of Model.forward")
    ///             .target("Model.forward")
    ///             .at("start")
    ///             .code("self.{attr} = getattr(self, '{attr}', 0) + 1"),
    ///     )
    ///     .build()?;
    /// let file = SourceFile::new("m.py", "class Model:\n    def forward(self, x):\n        return x\n");
    /// let patched = apply(&recipe, file)?;
    /// assert!(patched.output().contains("        self.calls = getattr(self, 'calls', 0) + 1\n"));
    ///
    /// // The rules of a TOML recipe hold: a hook needs exactly one placement.
    /// let err = Recipe::builder("demo", "Nothing").hook(Hook::builder("idle", "Idle")).build();
    /// assert!(err.unwrap_err().to_string().contains("a hook needs exactly one of"));
    /// # Ok::<(), pysplice::Error>(())
    /// ```
    pub fn builder(id: &str, summary: &str) -> RecipeBuilder {
        let mut raw = RawSpec::default();
        raw.recipe.id = id.to_string();
        raw.recipe.summary = summary.to_string();
        RecipeBuilder { raw }
    }
}

impl RecipeBuilder {
    /// Adds a note for the user (`notes` in TOML).
    pub fn note(mut self, note: &str) -> RecipeBuilder {
        self.raw.recipe.notes.push(note.to_string());
        self
    }

    /// Sets the template variable `name` (`[vars]` in TOML).
    pub fn var(mut self, name: &str, value: &str) -> RecipeBuilder {
        self.raw.vars.insert(name.to_string(), value.to_string());
        self
    }

    /// Adds a hook after those added so far.
    pub fn hook(mut self, hook: HookBuilder) -> RecipeBuilder {
        self.raw.hooks.push(Spanned::new(0..0, hook.raw));
        self
    }

    /// The recipe, checked as [`Recipe::from_toml`] checks a TOML recipe.
    ///
    /// # Errors
    /// [`ErrorKind::Spec`](crate::ErrorKind::Spec) naming the hook, at line 1 of a file named
    /// `<recipe ID>`, for what the TOML reader refuses too (see [`Recipe::from_toml`]).
    pub fn build(self) -> Result<Recipe, Error> {
        let file = SourceFile::new(format!("<recipe {}>", self.raw.recipe.id), "");
        Recipe::compile(&file, self.raw, true)
    }
}

impl Hook {
    /// A hook built in code, with its id (unique in the recipe) and a one-line summary; give it
    /// exactly one placement (`at`, `before`, `after`, `replace`, `wrap_returns`,
    /// `ensure_imports`, `add_forwarder`).
    pub fn builder(id: &str, summary: &str) -> HookBuilder {
        HookBuilder {
            raw: RawHook {
                id: id.to_string(),
                summary: summary.to_string(),
                ..RawHook::default()
            },
        }
    }
}

impl HookBuilder {
    /// The definition the hook works in (`in = "Class.method"`); the module when not given.
    pub fn target(mut self, path: &str) -> HookBuilder {
        self.raw.target = Some(RawIn::Path(path.to_string()));
        self
    }

    /// Inserts `code` at a named anchor: `start`, `end` or `after-imports` (`at = "start"`).
    pub fn at(mut self, anchor: &str) -> HookBuilder {
        self.raw.at = Some(RawAt::Named(anchor.to_string()));
        self
    }

    /// Inserts `code` before the statements matching `pattern` (`at = { before = ... }`).
    pub fn before(mut self, pattern: &str) -> HookBuilder {
        self.raw.at = Some(RawAt::Anchor(RawAnchor {
            before: Some(pattern.to_string()),
            ..RawAnchor::default()
        }));
        self
    }

    /// Inserts `code` after the statements matching `pattern` (`at = { after = ... }`).
    pub fn after(mut self, pattern: &str) -> HookBuilder {
        self.raw.at = Some(RawAt::Anchor(RawAnchor {
            after: Some(pattern.to_string()),
            ..RawAnchor::default()
        }));
        self
    }

    /// Replaces the statements matching `pattern` by `code`.
    pub fn replace(mut self, pattern: &str) -> HookBuilder {
        self.raw.replace = Some(pattern.to_string());
        self
    }

    /// Which matches of the `before`, `after` or `replace` pattern are used (call it after
    /// that one).
    pub fn nth(mut self, nth: Nth) -> HookBuilder {
        match &mut self.raw.at {
            Some(RawAt::Anchor(anchor)) => anchor.nth = nth,
            _ => self.raw.nth = Some(nth),
        }
        self
    }

    /// How deep the `before`, `after` or `replace` pattern looks (call it after that one).
    pub fn depth(mut self, depth: Depth) -> HookBuilder {
        match &mut self.raw.at {
            Some(RawAt::Anchor(anchor)) => anchor.depth = depth,
            _ => self.raw.depth = Some(depth),
        }
        self
    }

    /// The code an `at`, `before`, `after` or `replace` hook writes (a template over the
    /// recipe's variables and `{param.N}`).
    pub fn code(mut self, code: &str) -> HookBuilder {
        self.raw.code = Some(code.to_string());
        self
    }

    /// Makes sure the module has these imports (`os`, `numpy as np`, `from a import b`).
    pub fn ensure_imports<I: IntoIterator<Item = S>, S: Into<String>>(mut self, imports: I) -> HookBuilder {
        self.raw.ensure_imports = Some(imports.into_iter().map(Into::into).collect());
        self
    }

    /// Wraps the value of every return of the target in `template` (around `{value}`).
    pub fn wrap_returns(mut self, template: &str) -> HookBuilder {
        self.raw.wrap_returns = Some(template.to_string());
        self
    }

    /// Leaves alone the returns inside statements matching `pattern` (with `wrap_returns`).
    pub fn unless_inside(mut self, pattern: &str) -> HookBuilder {
        self.raw.unless_inside = Some(pattern.to_string());
        self
    }

    /// Adds method `method` to the target class, forwarding to `self.<via>.<method>`.
    pub fn add_forwarder(mut self, method: &str, via: &str) -> HookBuilder {
        self.raw.add_forwarder = Some(method.to_string());
        self.raw.via = Some(via.to_string());
        self
    }

    /// Skips the hook (with the reason) instead of failing where it cannot be placed.
    pub fn optional(mut self) -> HookBuilder {
        self.raw.optional = true;
        self
    }

    /// Applies the hook only where the target holds a match of `pattern`.
    pub fn when(mut self, pattern: &str) -> HookBuilder {
        self.raw.when = Some(pattern.to_string());
        self
    }

    /// Skips the hook in files that do not define `path`.
    pub fn requires(mut self, path: &str) -> HookBuilder {
        self.raw.requires.push(path.to_string());
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOML: &str = r#"
[recipe]
id = "r"
summary = "s"
notes = ["n"]

[vars]
name = "x"

[[hook]]
id = "imports"
summary = "i"
ensure-imports = ["os", "numpy as np"]

[[hook]]
id = "log"
summary = "l"
in = "Model.forward"
at = { after = "h = self.norm(h)", nth = "last" }
code = "print({name})"
optional = true
when = "h = self.norm(h)"
requires = ["Model"]

[[hook]]
id = "wrap"
summary = "w"
in = "Model.forward"
wrap-returns = "g({value})"
unless-inside = "if x: pass"

[[hook]]
id = "fwd"
summary = "f"
in = "Wrapper"
add-forwarder = "forward"
via = "inner"
"#;

    fn built() -> RecipeBuilder {
        Recipe::builder("r", "s")
            .note("n")
            .var("name", "x")
            .hook(Hook::builder("imports", "i").ensure_imports(["os", "numpy as np"]))
            .hook(
                Hook::builder("log", "l")
                    .target("Model.forward")
                    .after("h = self.norm(h)")
                    .nth(Nth::Last)
                    .code("print({name})")
                    .optional()
                    .when("h = self.norm(h)")
                    .requires("Model"),
            )
            .hook(
                Hook::builder("wrap", "w")
                    .target("Model.forward")
                    .wrap_returns("g({value})")
                    .unless_inside("if x: pass"),
            )
            .hook(
                Hook::builder("fwd", "f")
                    .target("Wrapper")
                    .add_forwarder("forward", "inner"),
            )
    }

    #[test]
    fn a_built_recipe_is_the_toml_recipe() {
        let from_toml = Recipe::from_toml("r.toml", TOML).unwrap();
        let built = built().build().unwrap();
        // Compiled hooks hold patterns and templates without equality: compare what they show.
        let shape = |r: &Recipe| {
            let hooks: Vec<String> = r
                .hooks
                .iter()
                .map(|h| {
                    format!(
                        "{} {} {:?} {:?} {} {:?}",
                        h.id, h.summary, h.target, h.action, h.optional, h.requires
                    )
                })
                .collect();
            (r.id.clone(), r.summary.clone(), r.notes.clone(), r.vars.clone(), hooks)
        };
        assert_eq!(shape(&built), shape(&from_toml));
    }

    #[test]
    fn a_built_recipe_is_checked_like_toml() {
        let err = built()
            .hook(
                Hook::builder("bad", "b")
                    .target("Model.forward")
                    .at("start")
                    .code("x = ("),
            )
            .build()
            .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("<recipe r>:1:1: bad spec: code does not parse"),
            "{err}"
        );
        assert_eq!(err.hook(), Some("bad"));
        let err = built()
            .hook(Hook::builder("log", "again").at("end").code("pass"))
            .build()
            .unwrap_err();
        assert!(err.to_string().contains("duplicate hook id"), "{err}");
        let err = Recipe::builder("bad id", "s").build().unwrap_err();
        assert!(err.to_string().contains("id `bad id` must be"), "{err}");
    }
}
