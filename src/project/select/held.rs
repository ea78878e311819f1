//! Derived selectors: the classes that selected classes hold through their attributes
//! (`self.model = ...`), followed at any depth to the first that assigns a given attribute.

use super::*;

impl Resolver<'_, '_> {
    /// What the holders hold, per the derived selector `s`.
    pub(super) fn held_all(
        &mut self,
        holders: &[(ClassId, String)],
        s: &ClassSelector,
    ) -> Result<Vec<(ClassId, String)>, String> {
        let mut out: Vec<(ClassId, String)> = Vec::new();
        let mut why = Vec::new();
        for (holder, how) in holders {
            match self.held(*holder, how, s) {
                Ok(found) => {
                    for f in found {
                        if !out.iter().any(|(c, _)| *c == f.0) {
                            out.push(f);
                        }
                    }
                }
                Err(reason) => why.push(reason),
            }
        }
        if out.is_empty() {
            Err(why.join("; "))
        } else {
            Ok(out)
        }
    }

    /// Breadth-first through the `via` attributes from `start` (itself included when `assigns`
    /// is given) to the first classes that assign `self.<assigns>`.
    fn held(&mut self, start: ClassId, how: &str, s: &ClassSelector) -> Result<Vec<(ClassId, String)>, String> {
        let mut out = Vec::new();
        let mut notes: Vec<String> = Vec::new();
        let mut queue = VecDeque::from([(start, how.to_string(), 0usize)]);
        let mut seen = HashSet::from([start]);
        while let Some((c, how, depth)) = queue.pop_front() {
            let done = match &s.assigns {
                Some(attr) => self.assigns(c, attr),
                None => depth > 0,
            };
            if done {
                out.push((c, how));
                continue;
            }
            if depth >= 6 {
                continue;
            }
            for (attr, targets, note) in self.holds(c, &s.via) {
                if let Some(note) = note {
                    if !notes.contains(&note) {
                        notes.push(note);
                    }
                }
                for t in targets {
                    if seen.insert(t) {
                        let name = &self.graph.class(t).name;
                        queue.push_back((t, format!("{how} -{attr}-> {name}"), depth + 1));
                    }
                }
            }
        }
        if out.is_empty() {
            let start_name = &self.graph.class(start).name;
            let what = match &s.assigns {
                Some(attr) => format!("no class that assigns `self.{attr}`"),
                None => "no class".to_string(),
            };
            let through = if s.via.is_empty() {
                "its attributes".to_string()
            } else {
                s.via
                    .iter()
                    .map(|v| format!("`self.{v}`"))
                    .collect::<Vec<_>>()
                    .join(" or ")
            };
            let mut message = format!("`{start_name}` holds {what} through {through}");
            if !notes.is_empty() {
                message.push_str(&format!(" ({})", notes.join("; ")));
            }
            return Err(message);
        }
        Ok(out)
    }

    /// Whether `c` or a base assigns `self.<attr>` in some method.
    fn assigns(&self, c: ClassId, attr: &str) -> bool {
        self.graph.mro(c).iter().any(|&k| {
            self.graph
                .facts(k)
                .attributes
                .iter()
                .any(|a| a.name == attr && a.kind == AttributeKind::Instance)
        })
    }

    /// `(attribute, classes, note)` for each `self.<attr> = <value>` in the methods of `c` and
    /// its bases; the note says why a value resolved to no class.
    fn holds(&mut self, c: ClassId, via: &[String]) -> Vec<(String, Vec<ClassId>, Option<String>)> {
        let mut out = Vec::new();
        let mro: Vec<ClassId> = self.graph.mro(c).to_vec();
        for k in mro {
            let file = self.graph.class(k).key.file;
            let class_path = self.graph.class(k).name.clone();
            let Some(parsed) = self.tree(file) else { continue };
            let mut found: Vec<(String, Node, Node)> = Vec::new();
            for def in parsed.definitions() {
                let is_method = def.kind() == DefKind::Method
                    && def
                        .path()
                        .strip_prefix(class_path.as_str())
                        .and_then(|r| r.strip_prefix('.'))
                        == Some(def.name());
                if !is_method {
                    continue;
                }
                let fn_node = parsed.node(def);
                let Some(body) = fn_node.field("body") else { continue };
                for (attr, value) in self_assignments(body) {
                    if via.is_empty() || via.contains(&attr) {
                        found.push((attr, value.clone(), fn_node.clone()));
                    }
                }
            }
            for (attr, value, method) in found {
                let mut notes = Vec::new();
                let classes = self.eval(c, k, &method, &value, &mut notes, 0);
                let note = (classes.is_empty() && !notes.is_empty()).then(|| notes.join("; "));
                out.push((attr, classes, note));
            }
        }
        out
    }
}
