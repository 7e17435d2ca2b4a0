//! The TypeScript twins of the payloads: `ui/src/generated/payloads.ts`, one
//! declaration per type, laid out as a person would write it.

use super::*;

/// The payloads the page reads and sends; every type they use comes along.
fn roots(cfg: &ts_rs::Config, out: &mut Declarations) {
    out.add::<GraphList>(cfg);
    out.add::<LevelData<'static>>(cfg);
    out.add::<SearchAnswer<'static>>(cfg);
    out.add::<NeighbourhoodAnswer<'static>>(cfg);
    out.add::<StepAnswer>(cfg);
    out.add::<ActivityAnswer<'static>>(cfg);
    out.add::<RecallAnswer>(cfg);
    out.add::<UndoAnswer>(cfg);
    out.add::<NodePutAnswer>(cfg);
    out.add::<NodeDeleteAnswer>(cfg);
    out.add::<EdgePutAnswer>(cfg);
    out.add::<EdgeDeleteAnswer>(cfg);
    out.add::<LiveMessage<'static>>(cfg);
    out.add::<StoredNode>(cfg);
    out.add::<StoredEdge>(cfg);
    // What the page sends, and sync's answers.
    out.add::<StepBody>(cfg);
    out.add::<UndoBody>(cfg);
    out.add::<SyncAnswer>(cfg);
    out.add::<SyncRepo>(cfg);
    out.add::<SyncNowAnswer>(cfg);
}

/// Declarations by name (so the file's order is stable), each type once.
#[derive(Debug, Default)]
struct Declarations(std::collections::BTreeMap<String, (TypeId, String)>);

impl Declarations {
    fn add<T: TS + 'static + ?Sized>(&mut self, cfg: &ts_rs::Config) {
        let name = T::ident(cfg);
        if let Some((id, _)) = self.0.get(&name) {
            // One TypeScript name for two Rust types would drop one of them.
            assert!(
                *id == TypeId::of::<T>(),
                "two payload types are named {name}"
            );
            return;
        }
        let docs = T::docs().unwrap_or_default();
        let decl = layout(&T::decl(cfg));
        let text = format!("{docs}export {decl}\n");
        self.0.insert(name, (TypeId::of::<T>(), text));
        T::visit_dependencies(&mut Visit { cfg, out: self });
    }
}

struct Visit<'a> {
    cfg: &'a ts_rs::Config,
    out: &'a mut Declarations,
}

impl ts_rs::TypeVisitor for Visit<'_> {
    fn visit<T: TS + 'static + ?Sized>(&mut self) {
        // Primitives and containers have no declaration of their own.
        if T::output_path().is_some() {
            self.out.add::<T>(self.cfg);
        }
    }
}

/// Lays a ts-rs declaration out one member per line, as a person would write it:
/// ts-rs writes an object on one line, with its field docs wedged in between.
fn layout(decl: &str) -> String {
    // A union of objects (`LiveMessage`) puts each member on its own `| ` line.
    let union = decl.contains("} | {");
    let base = usize::from(union);
    let mut out = String::with_capacity(decl.len() * 2);
    let newline = |out: &mut String, depth: usize| {
        out.truncate(out.trim_end().len());
        out.push('\n');
        out.push_str(&"  ".repeat(depth));
    };
    let (mut depth, mut angle) = (0usize, 0usize);
    let mut rest = decl;
    while let Some(c) = rest.chars().next() {
        rest = &rest[c.len_utf8()..];
        match c {
            '"' => {
                let end = rest.find('"').map_or(rest.len(), |i| i + 1);
                out.push('"');
                out.push_str(&rest[..end]);
                rest = &rest[end..];
            }
            '/' if rest.starts_with("**") => {
                let end = rest.find("*/").map_or(rest.len(), |i| i + 2);
                let comment = &rest[..end];
                rest = &rest[end..];
                newline(&mut out, depth + base);
                out.push('/');
                for (i, line) in comment.lines().map(str::trim).enumerate() {
                    if i > 0 {
                        newline(&mut out, depth + base);
                        out.push(' ');
                    }
                    out.push_str(line);
                }
                newline(&mut out, depth + base);
            }
            '{' => {
                depth += 1;
                out.push('{');
                newline(&mut out, depth + base);
            }
            '}' => {
                depth = depth.saturating_sub(1);
                out.truncate(out.trim_end().len());
                if !out.ends_with(',') {
                    out.push(',');
                }
                newline(&mut out, depth + base);
                out.push('}');
            }
            '<' | '>' => {
                angle = if c == '<' {
                    angle + 1
                } else {
                    angle.saturating_sub(1)
                };
                out.push(c);
            }
            ',' if depth > 0 && angle == 0 => {
                out.push(',');
                newline(&mut out, depth + base);
            }
            '|' if union && depth == 0 => {
                newline(&mut out, base);
                out.push('|');
            }
            '=' if union && depth == 0 => {
                out.push('=');
                newline(&mut out, base);
                out.push_str("| ");
                rest = rest.trim_start();
            }
            '\n' => {}
            ' ' if out.ends_with([' ', '\n']) => {}
            _ => out.push(c),
        }
    }
    out
}

/// The text of `ui/src/generated/payloads.ts`.
pub fn typescript() -> String {
    // Every integer here fits a JavaScript number.
    let cfg = ts_rs::Config::new().with_large_int("number");
    let mut declarations = Declarations::default();
    roots(&cfg, &mut declarations);
    let mut text = String::from(
        "// Generated from crates/kg-server/src/payload/ by ts-rs: do not edit.\n\
         // Regenerate: KG_UPDATE_TS=1 cargo test -p kg-server --lib payload\n",
    );
    for (_, declaration) in declarations.0.values() {
        text.push('\n');
        text.push_str(declaration);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// The generated file, from the workspace root.
    const TYPESCRIPT_FILE: &str = "ui/src/generated/payloads.ts";

    #[test]
    fn the_committed_typescript_matches_the_payload_types() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join(TYPESCRIPT_FILE);
        let generated = typescript();
        if std::env::var_os("KG_UPDATE_TS").is_some_and(|v| v == "1") {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &generated).unwrap();
            return;
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        if committed != generated {
            // The fresh text goes to a temporary file, for a diff against the committed one.
            let fresh = std::env::temp_dir().join("kg-payloads.ts");
            let _ = std::fs::write(&fresh, &generated);
            let line = committed
                .lines()
                .zip(generated.lines())
                .position(|(a, b)| a != b)
                .unwrap_or_else(|| committed.lines().count().min(generated.lines().count()))
                + 1;
            panic!(
                "{TYPESCRIPT_FILE} is out of date with crates/kg-server/src/payload/ \
                 (first difference at line {line}; the fresh text is in {}).\n\
                 Run `KG_UPDATE_TS=1 cargo test -p kg-server --lib payload` to update it, \
                 then `cd ui && npm run build`.",
                fresh.display()
            );
        }
    }
}
