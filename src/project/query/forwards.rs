//! Members and forwarders: what a wrapper exposes of its delegates and which public methods it
//! does not forward; the composition tree of a class.

use super::*;
use crate::project::BaseTarget;

impl ClassGraph<'_> {
    /// The member `name` of class `id` or its bases (first in MRO order): a method, property,
    /// class attribute or instance attribute assigned in a method.
    ///
    /// # Panics
    ///
    /// When `id` is not a class of this graph (not an index into [`ClassGraph::classes`]).
    #[must_use]
    pub fn member(&self, id: ClassId, name: &str) -> Option<Member> {
        for &x in self.mro(id) {
            let facts = self.facts(x);
            if let Some(m) = facts.methods_named(name).next() {
                return Some(Member {
                    name: name.to_string(),
                    class: facts.name.clone(),
                    kind: method_kind_name(m.kind).to_string(),
                    evidence: self.evidence(x, m.line, format!("def {}.{name}", facts.name)),
                });
            }
            if let Some(a) = facts.attributes.iter().find(|a| a.name == name) {
                let kind = match a.kind {
                    AttributeKind::Class => "class attribute",
                    AttributeKind::Instance => "instance attribute",
                };
                return Some(Member {
                    name: name.to_string(),
                    class: facts.name.clone(),
                    kind: kind.to_string(),
                    evidence: self.evidence(x, a.line, format!("{kind} {}.{name}", facts.name)),
                });
            }
        }
        None
    }

    /// Whether instances of `wrapper` expose `name` (a method, property or attribute of the
    /// class or its project bases). What a hook that adds a forwarding method checks first.
    ///
    /// # Panics
    ///
    /// When `wrapper` is not a class of this graph (not an index into [`ClassGraph::classes`]).
    #[must_use]
    pub fn exposes(&self, wrapper: ClassId, name: &str) -> Option<Member> {
        self.member(wrapper, name)
    }

    /// The delegates of `wrapper`: (attribute, delegate class, the composition's evidence),
    /// including compositions inherited from bases.
    ///
    /// # Panics
    ///
    /// When `wrapper` is not a class of this graph (not an index into [`ClassGraph::classes`]).
    #[must_use]
    pub fn delegates(&self, wrapper: ClassId) -> Vec<(String, ClassId, Evidence)> {
        let mut out: Vec<(String, ClassId, Evidence)> = Vec::new();
        for (via, e) in self.compositions_of(wrapper) {
            if out.iter().any(|(a, t, _)| *a == e.attr && *t == e.target) {
                continue;
            }
            out.push((e.attr.clone(), e.target, self.composition_evidence(via, e)));
        }
        out
    }

    /// Public methods (no leading underscore) of `delegate` and its project bases, first
    /// definition in MRO order, sorted by name.
    ///
    /// # Panics
    ///
    /// When `delegate` is not a class of this graph (not an index into [`ClassGraph::classes`]).
    #[must_use]
    pub fn public_methods(&self, delegate: ClassId) -> Vec<Member> {
        let mut out: Vec<Member> = Vec::new();
        for &x in self.mro(delegate) {
            let facts = self.facts(x);
            for m in &facts.methods {
                if m.name.starts_with('_') || out.iter().any(|o| o.name == m.name) {
                    continue;
                }
                out.push(Member {
                    name: m.name.clone(),
                    class: facts.name.clone(),
                    kind: method_kind_name(m.kind).to_string(),
                    evidence: self.evidence(x, m.line, format!("def {}.{}", facts.name, m.name)),
                });
            }
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }

    /// Whether `wrapper` needs a forwarding method for `method` of what it holds in `attr`: the
    /// question a hook that adds forwarders asks before placing one.
    ///
    /// # Panics
    ///
    /// When `wrapper` is not a class of this graph (not an index into [`ClassGraph::classes`]).
    #[must_use]
    pub fn forwarding_need(&self, wrapper: ClassId, attr: &str, method: &str) -> ForwardNeed {
        if let Some(own) = self.exposes(wrapper, method) {
            return ForwardNeed::Exposed(own);
        }
        for (a, delegate, _) in self.delegates(wrapper) {
            if a != attr {
                continue;
            }
            if let Some(member) = self.member(delegate, method) {
                return ForwardNeed::Missing {
                    delegate: self.class(delegate).name.clone(),
                    member,
                };
            }
        }
        ForwardNeed::Absent
    }

    /// For each delegate of `wrapper` (see [`ClassGraph::delegates`]), the public methods it
    /// does not expose.
    ///
    /// # Panics
    ///
    /// When `wrapper` is not a class of this graph (not an index into [`ClassGraph::classes`]).
    #[must_use]
    pub fn forwards(&self, wrapper: ClassId) -> Vec<Forwarding> {
        let dynamic = self.member(wrapper, "__getattr__").map(|m| m.evidence);
        let mut out = Vec::new();
        for (attr, delegate, composition) in self.delegates(wrapper) {
            if delegate == wrapper {
                continue;
            }
            let (mut missing, mut exposed) = (Vec::new(), Vec::new());
            for m in self.public_methods(delegate) {
                match self.exposes(wrapper, &m.name) {
                    Some(own) => exposed.push(own),
                    None => missing.push(m),
                }
            }
            let mut external_bases = Vec::new();
            for &x in self.mro(delegate) {
                for b in &self.class(x).bases {
                    for t in &b.targets {
                        if let BaseTarget::External(name) = t {
                            if !external_bases.contains(name) {
                                external_bases.push(name.clone());
                            }
                        }
                    }
                }
            }
            let optional = self
                .compositions_of(wrapper)
                .iter()
                .any(|(_, e)| e.attr == attr && e.optional);
            out.push(Forwarding {
                wrapper: self.class(wrapper).name.clone(),
                attr,
                delegate: self.class(delegate).name.clone(),
                delegate_module: self.class(delegate).module.clone(),
                composition,
                optional,
                missing,
                exposed,
                external_bases,
                dynamic: dynamic.clone(),
            });
        }
        out
    }

    /// A text tree of the class `id`: the class with its bases, then one line per composition
    /// (`-attr-> Class ⊂ Bases  class-file:line  (set at file:line)`), recursively to `depth`
    /// levels; classes already shown are marked `(see above)`.
    ///
    /// # Panics
    ///
    /// When `id` is not a class of this graph (not an index into [`ClassGraph::classes`]).
    #[must_use]
    pub fn tree(&self, id: ClassId, depth: usize) -> String {
        let mut out = format!("{}\n", self.tree_label(id));
        let mut shown = vec![id];
        self.tree_into(id, depth, 1, &mut shown, &mut out);
        out
    }

    /// `Class ⊂ Base, Base  file:line [draft]`.
    pub(super) fn tree_label(&self, id: ClassId) -> String {
        let c = self.class(id);
        let mut bases: Vec<String> = Vec::new();
        for b in &c.bases {
            for t in &b.targets {
                bases.push(match t {
                    BaseTarget::Class(b) => self.class(*b).name.clone(),
                    BaseTarget::External(e) => e.clone(),
                    BaseTarget::Unresolved(_) => format!("{}?", b.text),
                });
            }
        }
        let bases = if bases.is_empty() {
            String::new()
        } else {
            format!(" ⊂ {}", bases.join(", "))
        };
        let draft = if c.draft { " [draft]" } else { "" };
        format!("{}{bases}  {}:{}{draft}", c.name, c.file, c.line)
    }

    pub(super) fn tree_into(
        &self,
        id: ClassId,
        depth: usize,
        level: usize,
        shown: &mut Vec<ClassId>,
        out: &mut String,
    ) {
        if level > depth {
            return;
        }
        let pad = "  ".repeat(level);
        for (via, e) in self.compositions_of(id) {
            let inherited = if via == id {
                String::new()
            } else {
                format!(" in {}", self.class(via).name)
            };
            let nested = if e.direct { "" } else { ", inside the value" };
            let set_at = format!("(set at {}:{}{inherited}{nested})", self.class(via).file, e.line);
            if shown.contains(&e.target) {
                let name = &self.class(e.target).name;
                out.push_str(&format!("{pad}-{}-> {name} (see above)  {set_at}\n", e.attr));
                continue;
            }
            shown.push(e.target);
            out.push_str(&format!("{pad}-{}-> {}  {set_at}\n", e.attr, self.tree_label(e.target)));
            self.tree_into(e.target, depth, level + 1, shown, out);
        }
    }
}
