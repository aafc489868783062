//! The core's layering, checked from its sources: `README.md`'s layer table lists every
//! module of `src/`, and no module names one listed below it (`crate::<module>` in code,
//! comments and `#[cfg(test)]` modules aside). Inside `src/executor/`, the files' imports
//! form no cycle. `docs/architecture.md` describes both rules.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use hostrt_testing::rust_files;

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The modules of README.md's layer table, top (used by every other) first.
fn layers() -> Vec<String> {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let table = readme.split("Layering").nth(1).expect("README.md has a Layering section");
    table
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .filter_map(|l| l.strip_prefix("| `")?.split('`').next().map(String::from))
        .collect()
}

/// `path`'s code without comments and without its `#[cfg(test)]` modules (unit tests may
/// reach anything), one string per line.
fn code(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = Vec::new();
    let mut skip_depth: Option<i32> = None;
    let mut depth = 0i32;
    let mut test_attr = false;
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or("");
        let opens = code.matches('{').count() as i32;
        let closes = code.matches('}').count() as i32;
        let trimmed = code.trim();
        if skip_depth.is_none() && trimmed == "#[cfg(test)]" {
            test_attr = true;
            continue;
        }
        if test_attr && skip_depth.is_none() && trimmed.starts_with("mod ") {
            skip_depth = Some(depth);
        }
        test_attr = false;
        depth += opens - closes;
        match skip_depth {
            Some(d) if depth <= d && (opens > 0 || closes > 0) => skip_depth = None,
            Some(_) => {}
            None => lines.push(code.to_string()),
        }
    }
    lines
}

/// The top-level modules `lines` name as `crate::<module>`.
fn crate_refs(lines: &[String]) -> BTreeSet<String> {
    let mut refs = BTreeSet::new();
    for l in lines {
        for (i, _) in l.match_indices("crate::") {
            let before = l[..i].chars().last();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
                continue; // `hostrt_crate::`, `$crate::` (a macro's path, resolved where used)
            }
            let name: String = l[i + 7..].chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            if !name.is_empty() {
                refs.insert(name);
            }
        }
    }
    refs
}

/// The top-level module a file of `src/` belongs to (`None` for `lib.rs`).
fn module_of(path: &Path) -> Option<String> {
    let rel = path.strip_prefix(src()).unwrap();
    let first = rel.components().next()?.as_os_str().to_str()?.to_string();
    (first != "lib.rs").then(|| first.trim_end_matches(".rs").to_string())
}

/// Every import of a module listed below the importer, as `importer -> imported (file)`.
fn violations(layers: &[String]) -> Vec<String> {
    let rank: BTreeMap<&str, usize> = layers.iter().enumerate().map(|(i, m)| (m.as_str(), i)).collect();
    let mut bad = Vec::new();
    for path in rust_files(&src()) {
        // A `tests.rs` is a module's unit tests (`#[cfg(test)] mod tests;`).
        if path.file_name().is_some_and(|n| n == "tests.rs") {
            continue;
        }
        let Some(module) = module_of(&path) else { continue };
        let Some(&mine) = rank.get(module.as_str()) else { continue };
        for used in crate_refs(&code(&path)) {
            if let Some(&theirs) = rank.get(used.as_str())
                && theirs > mine
            {
                let file = path.strip_prefix(src()).unwrap().display();
                bad.push(format!("{module} -> {used} ({file})"));
            }
        }
    }
    bad
}

#[test]
fn the_layer_table_lists_every_module() {
    let layers = layers();
    let listed: BTreeSet<&str> = layers.iter().map(String::as_str).collect();
    assert_eq!(listed.len(), layers.len(), "a module listed twice: {layers:?}");
    let mut modules: BTreeSet<String> = rust_files(&src()).iter().filter_map(|p| module_of(p)).collect();
    modules.remove("testing"); // `#[cfg(test)]` helpers of the unit tests
    let missing: Vec<_> = modules.iter().filter(|m| !listed.contains(m.as_str())).collect();
    assert!(missing.is_empty(), "modules missing from README.md's layer table: {missing:?}");
    let gone: Vec<_> = listed.iter().filter(|m| !modules.contains(**m)).collect();
    assert!(gone.is_empty(), "README.md lists modules src/ lacks: {gone:?}");
}

#[test]
fn no_module_uses_one_below_it() {
    let bad = violations(&layers());
    assert!(bad.is_empty(), "imports against README.md's layering:\n{}", bad.join("\n"));
}

/// The check fails on a wrong import: with `executor` listed above `kernel`, the executor's
/// use of kernels is one.
#[test]
fn a_wrong_order_is_caught() {
    let mut layers = layers();
    let (e, k) = (
        layers.iter().position(|m| m == "executor").unwrap(),
        layers.iter().position(|m| m == "kernel").unwrap(),
    );
    layers.swap(e, k);
    let bad = violations(&layers);
    assert!(bad.iter().any(|v| v.starts_with("executor -> kernel (executor/")), "{bad:?}");
}

/// The files of `src/executor` that `path` imports: `super::<name>` and
/// `crate::executor::<path>` references resolved to files of the directory tree.
fn executor_imports(path: &Path, all: &BTreeSet<PathBuf>) -> BTreeSet<PathBuf> {
    let dir = src().join("executor");
    let mut out = BTreeSet::new();
    // The module directory `path` is in (for `mod.rs`, its own directory's parent counts
    // as `super`).
    let here = if path.file_name().is_some_and(|n| n == "mod.rs") {
        path.parent().unwrap().to_path_buf()
    } else {
        path.with_extension("")
    };
    for l in code(path) {
        let mut refs: Vec<(PathBuf, String)> = Vec::new();
        for (i, _) in l.match_indices("super::") {
            if l[..i].ends_with("super::") {
                continue; // the tail of `super::super::`, resolved below
            }
            let (mut base, mut rest) = (here.parent().unwrap().to_path_buf(), &l[i + 7..]);
            while let Some(r) = rest.strip_prefix("super::") {
                base = base.parent().unwrap().to_path_buf();
                rest = r;
            }
            refs.push((base, rest.to_string()));
        }
        for (i, _) in l.match_indices("crate::executor::") {
            refs.push((dir.clone(), l[i + 17..].to_string()));
        }
        for (base, rest) in refs {
            out.extend(resolve(&base, &rest, all).into_iter().filter(|f| f != path));
        }
    }
    out
}

/// The files of `all` that the path `rest` (`a::b::C`, `a::{B, c::D}`) names from directory
/// `base`: the deepest file each path reaches.
fn resolve(base: &Path, rest: &str, all: &BTreeSet<PathBuf>) -> Vec<PathBuf> {
    let mut at = base.to_path_buf();
    let mut found = None;
    let mut rest = rest;
    loop {
        if let Some(group) = rest.strip_prefix('{') {
            // `{B, c::D}`: each item from here (nested groups are not used in this crate).
            let group = group.split('}').next().unwrap_or("");
            let mut files: Vec<PathBuf> =
                group.split(',').flat_map(|item| resolve(&at, item.trim(), all)).collect();
            if files.is_empty() {
                files.extend(found);
            }
            return files;
        }
        let seg: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        if seg.is_empty() {
            break;
        }
        let (file, module) = (at.join(format!("{seg}.rs")), at.join(&seg).join("mod.rs"));
        if all.contains(&file) {
            found = Some(file);
        } else if all.contains(&module) {
            found = Some(module);
        } else {
            // An item the directory's `mod.rs` re-exports: the file it comes from.
            found = reexported(&at, &seg).filter(|f| all.contains(f)).or(found);
            break;
        }
        at = at.join(&seg);
        match rest[seg.len()..].strip_prefix("::") {
            Some(r) => rest = r,
            None => break,
        }
    }
    found.into_iter().collect()
}

/// The file of directory `dir` whose item `item` `dir/mod.rs` re-exports (`pub use
/// file::{.., item, ..}`), if any.
fn reexported(dir: &Path, item: &str) -> Option<PathBuf> {
    let text = std::fs::read_to_string(dir.join("mod.rs")).ok()?;
    for l in text.lines() {
        let Some(rest) = l.trim().split_once("use ").filter(|(vis, _)| !vis.contains("//")).map(|(_, r)| r)
        else {
            continue;
        };
        let Some((file, items)) = rest.split_once("::") else { continue };
        let names = items.trim_end_matches(';').trim_start_matches('{').trim_end_matches('}');
        if names.split(',').any(|n| n.trim() == item) {
            // A file, or a directory whose own `mod.rs` re-exports it in turn.
            let sub = dir.join(file);
            return if sub.is_dir() {
                reexported(&sub, item).or(Some(sub.join("mod.rs")))
            } else {
                Some(sub.with_extension("rs"))
            };
        }
    }
    None
}

#[test]
fn executor_files_import_each_other_without_a_cycle() {
    let dir = src().join("executor");
    let all: BTreeSet<PathBuf> = rust_files(&dir).into_iter().collect();
    let edges: BTreeMap<PathBuf, BTreeSet<PathBuf>> =
        all.iter().map(|p| (p.clone(), executor_imports(p, &all))).collect();
    // A `mod.rs` declares its children and may re-export them: only its `use` of a file in
    // another directory counts, so edges into a directory's own files from its `mod.rs` go.
    let edges: BTreeMap<PathBuf, BTreeSet<PathBuf>> = edges
        .into_iter()
        .map(|(from, to)| {
            let to = if from.file_name().is_some_and(|n| n == "mod.rs") {
                to.into_iter().filter(|t| !t.starts_with(from.parent().unwrap())).collect()
            } else {
                to
            };
            (from, to)
        })
        .collect();
    let name = |p: &Path| p.strip_prefix(&dir).unwrap().display().to_string();
    // Depth-first search for a back edge.
    fn visit<'a>(
        n: &'a PathBuf,
        edges: &'a BTreeMap<PathBuf, BTreeSet<PathBuf>>,
        state: &mut BTreeMap<&'a PathBuf, u8>,
        stack: &mut Vec<&'a PathBuf>,
    ) -> Option<Vec<&'a PathBuf>> {
        match state.get(n) {
            Some(2) => return None,
            Some(1) => {
                let start = stack.iter().position(|s| *s == n).unwrap();
                return Some(stack[start..].to_vec());
            }
            _ => {}
        }
        state.insert(n, 1);
        stack.push(n);
        for m in &edges[n] {
            if let Some(c) = visit(m, edges, state, stack) {
                return Some(c);
            }
        }
        stack.pop();
        state.insert(n, 2);
        None
    }
    // Printed with --nocapture: the import graph.
    for (from, to) in &edges {
        let to: Vec<String> = to.iter().map(|p| name(p)).collect();
        println!("{} -> {}", name(from), to.join(", "));
    }
    let mut state = BTreeMap::new();
    for n in edges.keys() {
        if let Some(cycle) = visit(n, &edges, &mut state, &mut Vec::new()) {
            let names: Vec<String> = cycle.iter().map(|p| name(p)).collect();
            panic!("executor files import each other in a cycle: {} -> {}", names.join(" -> "), names[0]);
        }
    }
}
