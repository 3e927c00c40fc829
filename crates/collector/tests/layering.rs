//! The crate's top-level modules import each other without a cycle, and
//! only downwards through the layers of docs/architecture.md; imports are
//! read from the source files' `crate::…` and `super::…` paths.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Graph = BTreeMap<String, BTreeSet<String>>;

fn source_files(folder: &Path, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            source_files(&path, found);
        } else if path.extension().is_some_and(|extension| extension == "rs") {
            found.push(path);
        }
    }
}

/// The module path of a source file under `src`: `receivers/otlp/http.rs`
/// is `[receivers, otlp, http]`, `receivers/mod.rs` is `[receivers]`.
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let relative = file.strip_prefix(src).unwrap_or(file);
    let mut parts: Vec<String> = relative
        .iter()
        .map(|part| part.to_string_lossy().trim_end_matches(".rs").to_owned())
        .collect();
    if parts
        .last()
        .is_some_and(|last| last == "mod" || last == "lib")
    {
        parts.pop();
    }
    parts
}

/// The code of a line without its `//` comment.
fn code(line: &str) -> &str {
    line.find("//").map_or(line, |at| &line[..at])
}

fn identifier_at(text: &str) -> String {
    text.chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// The top-level modules a path starting at `rest` (just after
/// `crate::`) names: one, or those of a `{a, b::c}` group.
fn named_modules(rest: &str) -> Vec<String> {
    if let Some(group) = rest.strip_prefix('{') {
        let end = group.find('}').unwrap_or(group.len());
        return group[..end]
            .split(',')
            .map(|item| identifier_at(item.trim()))
            .filter(|name| !name.is_empty() && name != "self")
            .collect();
    }
    vec![identifier_at(rest)]
}

/// The top-level modules a file's `crate::` and `super::` paths reach,
/// outside its unit tests (a `#[cfg(test)]` module at the end).
fn imports(text: &str, module: &[String]) -> BTreeSet<String> {
    let text = text
        .find("#[cfg(test)]\nmod ")
        .map_or(text, |at| &text[..at]);
    let mut found = BTreeSet::new();
    // Statements may span lines: join them.
    let joined: String = text.lines().map(code).collect::<Vec<_>>().join(" ");
    let mut rest = joined.as_str();
    while let Some(at) = rest.find("crate::") {
        let before = rest[..at].chars().last();
        rest = &rest[at + "crate::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
            continue;
        }
        found.extend(named_modules(rest));
    }
    let mut rest = joined.as_str();
    while let Some(at) = rest.find("super::") {
        let before = rest[..at].chars().last();
        let mut path = &rest[at..];
        rest = &rest[at + "super::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        let mut depth = 0;
        while let Some(after) = path.strip_prefix("super::") {
            depth += 1;
            path = after;
        }
        if depth < module.len() {
            found.extend(module.first().cloned());
        } else if depth == module.len() {
            found.extend(named_modules(path));
        }
    }
    found
}

fn top_level_graph() -> Graph {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    source_files(&src, &mut files);
    let mut top_level = BTreeSet::new();
    for file in &files {
        if let Some(first) = module_path(&src, file).first() {
            top_level.insert(first.clone());
        }
    }
    let mut graph = Graph::new();
    for file in &files {
        let module = module_path(&src, file);
        let Some(from) = module.first() else {
            continue;
        };
        let text = std::fs::read_to_string(file).unwrap_or_default();
        let edges = graph.entry(from.clone()).or_default();
        for to in imports(&text, &module) {
            if &to != from && top_level.contains(&to) {
                edges.insert(to);
            }
        }
    }
    graph
}

/// A cycle through the graph, as the modules in order, first repeated.
fn find_cycle(graph: &Graph) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &Graph,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|seen| seen == node) {
            let mut cycle = path.get(at..).unwrap_or_default().to_vec();
            cycle.push(node.to_owned());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_owned());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, graph, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(node.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|node| visit(node, graph, &mut Vec::new(), &mut done))
}

#[test]
fn top_level_modules_import_each_other_without_a_cycle() {
    let graph = top_level_graph();
    if let Some(cycle) = find_cycle(&graph) {
        panic!(
            "import cycle between top-level modules: {}\nwhole graph: {graph:#?}",
            cycle.join(" → ")
        );
    }
}

/// The crate's layers, lowest first: a module imports only modules of
/// lower layers. The component folders share a layer, so that none
/// imports another.
const LAYERS: &[&[&str]] = &[
    // Option types, the model and its parser; the wire protocols' rules;
    // small shared helpers; profbridge's own CPU sampler.
    &["settings", "protocol", "shared", "sampler"],
    &["telemetry"],
    &["tls"],
    // What servers run; what clients connect with.
    &["net", "client", "descriptors"],
    // Queues, the exporter helper, and the Export and Processor traits;
    // splitting requests within limits.
    &["pipeline", "split"],
    // The factory traits every component implements.
    &["component"],
    &["receivers", "processors", "exporters", "extensions"],
    // The registry: one line per component type.
    &["components"],
    // Loading: the parser with the registry.
    &["config"],
    &["service"],
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&module))
}

#[test]
fn every_module_imports_only_lower_layers() {
    let graph = top_level_graph();
    let mut wrong = Vec::new();
    for (from, targets) in &graph {
        let Some(from_layer) = layer_of(from) else {
            wrong.push(format!("{from} is in no layer: add it to LAYERS"));
            continue;
        };
        for to in targets {
            if layer_of(to).is_none_or(|to_layer| to_layer >= from_layer) {
                wrong.push(format!("{from} imports {to}, which is not below it"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn a_cycle_is_found_and_named() {
    let mut graph = Graph::new();
    graph.entry("a".into()).or_default().insert("b".into());
    graph.entry("b".into()).or_default().insert("c".into());
    graph.entry("c".into()).or_default().insert("a".into());
    assert_eq!(
        find_cycle(&graph),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
    graph.entry("c".into()).or_default().clear();
    assert_eq!(find_cycle(&graph), None);
}

#[test]
fn paths_are_read_from_use_and_super() {
    let module = vec!["receivers".to_owned(), "otlp".to_owned()];
    let found = imports(
        "use crate::{config::Problem, pipeline};\nuse super::super::telemetry::X;\n// crate::service\nuse super::intake;",
        &module,
    );
    let expected: BTreeSet<String> = ["config", "pipeline", "telemetry", "receivers"]
        .into_iter()
        .map(String::from)
        .collect();
    assert_eq!(found, expected);
}

/// The absolute module paths (at most two segments deep) a file's
/// `crate::` and `super::` paths name, outside its unit tests.
fn absolute_imports(text: &str, module: &[String]) -> BTreeSet<Vec<String>> {
    let text = text
        .find("#[cfg(test)]\nmod ")
        .map_or(text, |at| &text[..at]);
    let joined: String = text.lines().map(code).collect::<Vec<_>>().join(" ");
    let mut found = BTreeSet::new();
    for prefix in ["crate::", "super::"] {
        let mut rest = joined.as_str();
        while let Some(at) = rest.find(prefix) {
            let before = rest[..at].chars().last();
            let mut path = &rest[at..];
            rest = &rest[at + prefix.len()..];
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':' || c == '$') {
                continue;
            }
            let mut base: Vec<String> = if prefix == "crate::" {
                path = &path["crate::".len()..];
                Vec::new()
            } else {
                let mut depth = 0;
                while let Some(after) = path.strip_prefix("super::") {
                    depth += 1;
                    path = after;
                }
                if depth > module.len() {
                    continue;
                }
                module
                    .get(..module.len() - depth)
                    .unwrap_or_default()
                    .to_vec()
            };
            // One more named segment for each level below two.
            while base.len() < 2 {
                let names = named_modules(path);
                let [name] = names.as_slice() else {
                    for name in names {
                        let mut item = base.clone();
                        item.push(name);
                        found.insert(item);
                    }
                    base.clear();
                    break;
                };
                if name.is_empty() {
                    break;
                }
                base.push(name.clone());
                match path.find("::") {
                    Some(at) if path[..at] == *name => path = &path[at + 2..],
                    _ => break,
                }
            }
            if !base.is_empty() {
                found.insert(base);
            }
        }
    }
    found
}

/// The component kinds, whose folders hold one component each.
const KINDS: [&str; 4] = ["receivers", "processors", "exporters", "extensions"];

/// A folder of `kind` is a component's when one of its files implements
/// that kind's factory trait.
fn component_folders(src: &Path) -> BTreeSet<(String, String)> {
    let mut folders = BTreeSet::new();
    for kind in KINDS {
        let Ok(entries) = std::fs::read_dir(src.join(kind)) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if !path.is_dir() {
                continue;
            }
            let mut files = Vec::new();
            source_files(&path, &mut files);
            let is_component = files.iter().any(|file| {
                let text = std::fs::read_to_string(file).unwrap_or_default();
                ["Receiver", "Processor", "Exporter", "Extension"]
                    .iter()
                    .any(|trait_name| text.contains(&format!("impl {trait_name}Factory for")))
            });
            if is_component {
                let name = path.file_name().unwrap_or_default().to_string_lossy();
                folders.insert((kind.to_owned(), name.into_owned()));
            }
        }
    }
    folders
}

/// A component's folder is its own: no other file of its kind (another
/// component's, or what the kind's components share) imports from it.
/// What components share stands beside their folders or in a lower layer.
#[test]
fn no_component_folder_imports_another_components() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let folders = component_folders(&src);
    assert!(
        folders.contains(&("receivers".to_owned(), "otlp".to_owned())),
        "component folders not found: {folders:?}"
    );
    let mut files = Vec::new();
    source_files(&src, &mut files);
    let mut wrong = Vec::new();
    for file in &files {
        let module = module_path(&src, file);
        let [kind, own, ..] = module.as_slice() else {
            continue;
        };
        let text = std::fs::read_to_string(file).unwrap_or_default();
        for target in absolute_imports(&text, &module) {
            let [to_kind, to_folder] = target.as_slice() else {
                continue;
            };
            if to_kind == kind
                && to_folder != own
                && folders.contains(&(to_kind.clone(), to_folder.clone()))
            {
                wrong.push(format!(
                    "{} imports {to_kind}::{to_folder}",
                    file.strip_prefix(&src).unwrap_or(file).display()
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn absolute_paths_are_read_from_use_and_super() {
    let module = vec![
        "receivers".to_owned(),
        "pprof".to_owned(),
        "mod_a".to_owned(),
    ];
    let text = "use crate::receivers::otlp::Outcome;\nuse super::super::intake::{a, b};\n\
                use crate::{net, receivers::{file, nop}};\nuse super::config::X;";
    let found = absolute_imports(text, &module);
    let has = |a: &str, b: &str| found.contains(&vec![a.to_owned(), b.to_owned()]);
    assert!(has("receivers", "otlp"), "{found:?}");
    assert!(has("receivers", "intake"), "{found:?}");
    assert!(has("receivers", "pprof"), "{found:?}");
}
