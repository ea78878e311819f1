//! Facts about one module, read off the crate's syntax tree once and kept instead of the tree:
//! the import table and other top-level bindings, every class (bases, methods, attributes,
//! compositions, delegation uses) and the entry list (see [`super::Conventions`]).

mod class_walk;
mod module_walk;
mod names;

pub(crate) use module_walk::extract;
pub(crate) use names::{dotted, ModuleContext};

/// One import statement's binding, as written and resolved to an absolute module.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, schemars::JsonSchema))]
#[non_exhaustive]
pub struct Import {
    /// 1-based line of the statement.
    pub line: usize,
    /// The module as written (`os.path`, `.deepseek_v2`, `..`).
    pub written: String,
    /// The absolute module name (relative imports resolved); empty when a relative import climbs
    /// above the top-level package.
    pub module: String,
    /// For `from m import name`: the imported name; `None` for `import m`.
    pub name: Option<String>,
    /// The name bound in the importing module (`*` for a star import).
    pub local: String,
    /// Whether the statement sits inside an `if`, `try`, `with` or loop at module level.
    pub conditional: bool,
}

/// What a top-level name is bound to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Binding {
    /// A class of this module (index into [`ModuleFacts::classes`]).
    Class(usize),
    /// A module (`import a.b as c`, `import a`).
    Module(String),
    /// `from module import name`.
    From { module: String, name: String },
    /// `X = a.b.Y`: another (dotted) name of this module's scope.
    Alias(String),
    /// Anything else (functions, other values): shadows earlier bindings, resolves to nothing.
    Opaque,
}

/// A name bound at module level (or in a method, for method-local imports and aliases).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct NameBinding {
    pub name: String,
    pub binding: Binding,
    pub conditional: bool,
}

/// How a method is defined.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, schemars::JsonSchema))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
pub enum MethodKind {
    /// A plain `def`.
    Method,
    /// Decorated with `@property`, `@cached_property` or `@x.setter` / `@x.deleter`.
    Property,
    /// `@classmethod`.
    Classmethod,
    /// `@staticmethod`.
    Staticmethod,
}

/// One `def` in a class body.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct MethodFacts {
    /// The method's name.
    pub name: String,
    /// 1-based line of the `def`.
    pub line: usize,
    /// Plain method, property, classmethod or staticmethod.
    pub kind: MethodKind,
    /// Methods called through `super().m(...)` / `super(C, self).m(...)`.
    pub super_calls: Vec<String>,
    /// Explicit base calls `Base.m(self, ...)`: (dotted base, method).
    pub explicit_calls: Vec<(String, String)>,
    pub(crate) locals: Vec<NameBinding>,
}

/// Where an attribute name of a class comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, schemars::JsonSchema))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
pub enum AttributeKind {
    /// Assigned in the class body (`x = ...`).
    Class,
    /// Assigned on the instance in a method (`self.x = ...`).
    Instance,
}

/// A name assigned on a class or its instances.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct AttributeFacts {
    /// The attribute name.
    pub name: String,
    /// 1-based line of the assignment.
    pub line: usize,
    /// Class body or instance.
    pub kind: AttributeKind,
    /// The method assigning it (instance attributes).
    pub method: Option<String>,
    /// Whether the value assigned is the constant `None`.
    pub is_none: bool,
}

/// `self.<attr> = <Class>(...)` (or a class constructed anywhere inside the assigned value).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CompositionFacts {
    /// The instance attribute.
    pub attr: String,
    /// The callee as written, dotted (`DeepseekV3ForCausalLM`, `deepseek_v2.DeepseekV2Model`),
    /// local class aliases substituted.
    pub callee: String,
    /// 1-based line of the assignment.
    pub line: usize,
    /// The method holding the assignment.
    pub method: String,
    /// Whether the call is the assigned value itself (or a branch of `a if c else b`, `a or b`),
    /// rather than a call nested inside it (`nn.ModuleList([A(...) for ...])`, lambdas).
    pub direct: bool,
    /// Whether the assignment sits in a branch, loop, `try` or `with` block of the method.
    pub conditional: bool,
    /// The identifiers this callee may denote (last segment; the original name of a
    /// method-local `from m import A as B`): what a text prefilter must look for.
    pub names: Vec<String>,
}

/// How a class uses one of its instance attributes.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, schemars::JsonSchema))]
#[cfg_attr(feature = "serde", serde(tag = "kind", rename_all = "snake_case"))]
pub enum UseKind {
    /// `self.attr(...)`.
    Call,
    /// `self.attr.method(...)`.
    MethodCall {
        /// The method called on the attribute.
        method: String,
    },
    /// `self.attr` passed to a call, positionally or by keyword.
    Argument {
        /// The callee, dotted when it is a plain name (`general_mm_embed_routine`), `?` otherwise.
        callee: String,
        /// The keyword, when passed by keyword.
        keyword: Option<String>,
    },
    /// `return self.attr` (a property or accessor handing the attribute out).
    Returned,
}

/// One delegation use of an instance attribute.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct UseFacts {
    /// The instance attribute, `x` in `self.x`.
    pub attr: String,
    /// How it is used: called, a method called on it, passed on, or returned.
    pub kind: UseKind,
    /// 1-based line.
    pub line: usize,
    /// The method where it happens.
    pub method: String,
}

/// One base class expression.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct BaseFacts {
    /// The expression as a dotted name (`nn.Module`; `Generic` for `Generic[T]`), or the source
    /// text when it is no name.
    pub text: String,
    /// Whether `text` is a dotted name that can be resolved.
    pub is_name: bool,
    /// 1-based line.
    pub line: usize,
}

/// One class of a module.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClassFacts {
    /// Qualified name within the module (`Outer.Inner`).
    pub name: String,
    /// 1-based line of the `class` keyword.
    pub line: usize,
    /// 1-based last line.
    pub end_line: usize,
    /// Base class expressions, in order.
    pub bases: Vec<BaseFacts>,
    /// Methods defined in the body (also under `if` in the body), in source order.
    pub methods: Vec<MethodFacts>,
    /// Class-level and instance attributes.
    pub attributes: Vec<AttributeFacts>,
    /// Instance attributes holding constructed objects.
    pub compositions: Vec<CompositionFacts>,
    /// Delegation uses of instance attributes.
    pub uses: Vec<UseFacts>,
}

impl ClassFacts {
    /// A class named `name` with no facts yet (line 0: not read from a file).
    pub(crate) fn empty(name: String) -> ClassFacts {
        ClassFacts {
            name,
            line: 0,
            end_line: 0,
            bases: Vec::new(),
            methods: Vec::new(),
            attributes: Vec::new(),
            compositions: Vec::new(),
            uses: Vec::new(),
        }
    }

    /// The simple name (last segment of [`ClassFacts::name`]).
    #[must_use]
    pub fn simple_name(&self) -> &str {
        self.name.rsplit('.').next().unwrap_or(&self.name)
    }

    /// The definitions of method `name` (several when defined in different branches).
    pub fn methods_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a MethodFacts> + 'a {
        self.methods.iter().filter(move |m| m.name == name)
    }

    /// Whether the class body defines method `name`.
    #[must_use]
    pub fn defines(&self, name: &str) -> bool {
        self.methods.iter().any(|m| m.name == name)
    }
}

/// Everything the project keeps of one parsed module.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ModuleFacts {
    /// The import table, module-level imports in source order.
    pub imports: Vec<Import>,
    /// Classes at module level (also in `if`/`try` blocks) and nested in class bodies.
    pub classes: Vec<ClassFacts>,
    /// The entry list's items ([`super::Conventions::entry_list`]) as dotted names with their
    /// lines.
    pub entry_classes: Vec<(String, usize)>,
    /// `__all__`, when it is a literal list of strings.
    pub all: Option<Vec<String>>,
    pub(crate) bindings: Vec<NameBinding>,
    pub(crate) stars: Vec<String>,
    /// Per bound name, its positions in `bindings`, in order: a lookup is not a pass over every
    /// binding (a module of N classes resolving N bases would cost N²).
    pub(crate) by_name: std::collections::HashMap<String, Vec<usize>>,
}

impl ModuleFacts {
    /// The bindings a lookup of `name` may produce: the last unconditional binding and every
    /// conditional one after it (Python's later-binding-wins, with both branches of an `if`).
    pub(crate) fn candidates(&self, name: &str) -> Vec<&Binding> {
        let mut out = Vec::new();
        for &i in self.by_name.get(name).map_or(&[][..], Vec::as_slice) {
            let b = &self.bindings[i];
            if !b.conditional {
                out.clear();
            }
            out.push(&b.binding);
        }
        out
    }
}

/// Later bindings shadow earlier ones; conditional ones add to the set.
pub(crate) fn latest_bindings<'a>(bindings: &'a [NameBinding], name: &str) -> Vec<&'a Binding> {
    let mut out = Vec::new();
    for b in bindings.iter().filter(|b| b.name == name) {
        if !b.conditional {
            out.clear();
        }
        out.push(&b.binding);
    }
    out
}
