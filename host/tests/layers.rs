//! The modules of `host/src` form layers: no import cycle.
//!
//! Every file is a node; a path in its code that starts with `crate::`, `super::` or `self::`
//! (in a `use` or anywhere else in the code) is an edge to the module it names, resolved to the
//! deepest module file of the path. Comments, string literals and `#[cfg(test)]` items are left
//! out: tests may reach into any layer. A path through a name the crate root re-exports
//! (`crate::Error`) is followed to the module the root takes it from, and a `#[macro_export]` macro
//! (`crate::with_policies!`) to the module that defines it. Paths relative to a module
//! (its children, named without a prefix) are not edges: a module declares its children.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// A module path, `crate` first: `["crate", "gpu", "kernels"]`.
type Module = Vec<String>;

/// The source with comments and string and character literals blanked out.
fn strip_comments_and_literals(source: &str) -> String {
    let chars: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if c == 'r' && matches!(next, Some('"' | '#')) && !ident_char_before(&chars, i) {
            // A raw string: r"..." or r#"..."#.
            let mut j = i + 1;
            let mut hashes = 0;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                if j >= chars.len() {
                    break;
                }
                if chars[j] == '"' && (0..hashes).all(|h| chars.get(j + 1 + h) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            out.push_str("\"\"");
            i = j;
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == '\'' {
            // A character literal ('x', '\n', '\u{..}'), or a lifetime, which stays.
            let end = if next == Some('\\') {
                (i + 2..chars.len()).find(|&j| chars[j] == '\'')
            } else if chars.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            match end {
                Some(end) => {
                    out.push_str("' '");
                    i = end + 1;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn ident_char_before(chars: &[char], i: usize) -> bool {
    i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_')
}

/// The end (exclusive) of the item starting at `start`: through its `;`, or its `{ … }` block.
fn item_end(code: &[u8], start: usize) -> usize {
    let mut i = start;
    while i < code.len() {
        match code[i] {
            b';' => return i + 1,
            b'{' => {
                let mut depth = 0;
                while i < code.len() {
                    match code[i] {
                        b'{' => depth += 1,
                        b'}' => {
                            depth -= 1;
                            if depth == 0 {
                                return i + 1;
                            }
                        }
                        _ => {}
                    }
                    i += 1;
                }
                return code.len();
            }
            _ => i += 1,
        }
    }
    code.len()
}

/// `code` without its test-only items (under `#[cfg(test)]`, or a `#[cfg(all(…))]` of which
/// `test` is one condition), and the names of the child modules declared so (test-only files).
fn strip_test_items(code: &str) -> (String, Vec<String>) {
    const CFG: &str = "#[cfg(";
    let bytes = code.as_bytes();
    let mut out = String::new();
    let mut test_children = Vec::new();
    let mut at = 0;
    while let Some(found) = code[at..].find(CFG) {
        let start = at + found;
        // The attribute runs to the `]` that closes it.
        let mut depth = 0;
        let mut attr_end = start;
        for (i, b) in bytes[start..].iter().enumerate() {
            match b {
                b'[' | b'(' => depth += 1,
                b']' | b')' => depth -= 1,
                _ => {}
            }
            if depth == 0 && *b == b']' {
                attr_end = start + i + 1;
                break;
            }
        }
        let cond = code[start + CFG.len()..attr_end.saturating_sub(2)].replace(' ', "");
        let test_only = cond == "test"
            || cond
                .strip_prefix("all(")
                .and_then(|c| c.strip_suffix(')'))
                .is_some_and(|c| c.split(',').any(|part| part == "test"));
        if !test_only || attr_end == start {
            out.push_str(&code[at..start + CFG.len()]);
            at = start + CFG.len();
            continue;
        }
        out.push_str(&code[at..start]);
        let end = item_end(bytes, attr_end);
        let item = code[attr_end..end].trim();
        if let Some(rest) = item.strip_prefix("mod ")
            && let Some(name) = rest.strip_suffix(';')
        {
            test_children.push(name.trim().to_owned());
        }
        at = end;
    }
    out.push_str(&code[at..]);
    (out, test_children)
}

/// Expands a use tree (`a::{b, c::{d, self}}`) into full paths.
fn expand_use_tree(tree: &str) -> Vec<String> {
    // One space between words (`a as b`), none around punctuation.
    let mut tree = tree.split_whitespace().collect::<Vec<_>>().join(" ");
    for p in ["::", "{", "}", ","] {
        tree = tree
            .replace(&format!(" {p}"), p)
            .replace(&format!("{p} "), p);
    }
    let Some(open) = tree.find('{') else {
        return vec![tree.split(" as ").next().unwrap_or(&tree).to_owned()];
    };
    let prefix = tree[..open].trim_end_matches("::");
    let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let mut parts = Vec::new();
    let (mut depth, mut from) = (0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[from..i]);
                from = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[from..]);
    parts
        .into_iter()
        .filter(|p| !p.is_empty())
        .flat_map(|p| {
            expand_use_tree(p).into_iter().map(move |rest| {
                if rest == "self" {
                    prefix.to_owned()
                } else {
                    format!("{prefix}::{rest}")
                }
            })
        })
        .collect()
}

/// Every path in `code` that starts with `crate`, `super` or `self`, as segments.
fn paths(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    let is_ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    // `use` trees first (they may hold braces); then every other path.
    let mut rest = String::with_capacity(code.len());
    let mut at = 0;
    while let Some(found) = code[at..].find("use ") {
        let start = at + found;
        let boundary = start == 0 || !is_ident(bytes[start - 1]);
        if !boundary {
            rest.push_str(&code[at..start + 4]);
            at = start + 4;
            continue;
        }
        rest.push_str(&code[at..start]);
        let end = code[start..].find(';').map_or(code.len(), |e| start + e);
        for path in expand_use_tree(&code[start + 4..end]) {
            let path = path.trim_start_matches("::");
            out.push(path.split("::").map(str::to_owned).collect());
        }
        at = end;
    }
    rest.push_str(&code[at..]);
    let bytes = rest.as_bytes();
    for root in ["crate::", "super::", "self::"] {
        let mut at = 0;
        while let Some(found) = rest[at..].find(root) {
            let start = at + found;
            at = start + root.len();
            if start > 0 && (is_ident(bytes[start - 1]) || bytes[start - 1] == b':') {
                continue;
            }
            let mut end = start;
            while end < bytes.len() && (is_ident(bytes[end]) || rest[end..].starts_with("::")) {
                end += if bytes[end] == b':' { 2 } else { 1 };
            }
            out.push(
                rest[start..end]
                    .trim_end_matches("::")
                    .split("::")
                    .map(str::to_owned)
                    .collect(),
            );
        }
    }
    out.retain(|p: &Vec<String>| matches!(p[0].as_str(), "crate" | "super" | "self"));
    out
}

/// `code` split into its own part and the inline modules it holds (`mod name { … }`), each with
/// its path below the file's module: `(vec![], own code)`, `(vec!["private"], its code)`, ….
fn inline_modules(code: &str) -> Vec<(Vec<String>, String)> {
    let bytes = code.as_bytes();
    let is_ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut own = String::new();
    let mut inner = Vec::new();
    let mut at = 0;
    let mut search = 0;
    while let Some(found) = code[search..].find("mod ") {
        let start = search + found;
        search = start + 4;
        if start > 0 && is_ident(bytes[start - 1]) {
            continue;
        }
        let name_end = (start + 4..bytes.len())
            .find(|&i| !is_ident(bytes[i]))
            .unwrap_or(bytes.len());
        let name = code[start + 4..name_end].to_owned();
        let brace = code[name_end..].trim_start();
        if name.is_empty() || !brace.starts_with('{') {
            continue;
        }
        let open = code.len() - brace.len();
        let end = item_end(bytes, open);
        own.push_str(&code[at..start]);
        for (path, body) in inline_modules(&code[open + 1..end - 1]) {
            let mut full = vec![name.clone()];
            full.extend(path);
            inner.push((full, body));
        }
        at = end;
        search = end;
    }
    own.push_str(&code[at..]);
    let mut out = vec![(Vec::new(), own)];
    out.extend(inner);
    out
}

/// The crate's modules, from its source files under `src`: each with its code.
fn modules(src: &Path) -> BTreeMap<Module, String> {
    fn walk(dir: &Path, module: &[String], out: &mut BTreeMap<Module, String>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .expect("a source directory")
            .map(|e| e.expect("a directory entry").path())
            .collect();
        entries.sort();
        for path in entries {
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                let mut child = module.to_vec();
                child.push(name);
                walk(&path, &child, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let mut m = module.to_vec();
                if name != "mod" && name != "lib" {
                    m.push(name);
                }
                out.insert(m, std::fs::read_to_string(&path).expect("a source file"));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(src, &["crate".to_owned()], &mut out);
    out
}

/// The import edges between `modules` (code by module path), as module → modules it uses.
fn edges(modules: &BTreeMap<Module, String>) -> BTreeMap<Module, BTreeSet<Module>> {
    let root: Module = vec!["crate".to_owned()];
    let mut codes = BTreeMap::new();
    let mut test_only = BTreeSet::new();
    for (module, source) in modules {
        let (code, test_children) = strip_test_items(&strip_comments_and_literals(source));
        for child in test_children {
            let mut m = module.clone();
            m.push(child);
            test_only.insert(m);
        }
        codes.insert(module.clone(), code);
    }
    // What the root re-exports: `pub use error::{Error, TaskRef}` sends `crate::Error` to
    // `crate::error`.
    let mut reexports: BTreeMap<String, Module> = BTreeMap::new();
    for path in paths(&codes[&root].replace("pub use ", "use crate::")) {
        if let Some((name, module)) = path.split_last() {
            reexports.insert(name.clone(), module.to_vec());
        }
    }
    // A `#[macro_export]` macro lives at the root by name: `crate::with_policies!` is a path to
    // the module that defines it.
    for (module, code) in &codes {
        let mut rest = code.as_str();
        while let Some(at) = rest.find("#[macro_export]") {
            rest = &rest[at + "#[macro_export]".len()..];
            if let Some(name) = rest
                .find("macro_rules!")
                .map(|m| &rest[m + "macro_rules!".len()..])
                .and_then(|after| {
                    after
                        .split(|c: char| !c.is_alphanumeric() && c != '_')
                        .find(|s| !s.is_empty())
                })
            {
                reexports.insert(name.to_owned(), module.clone());
            }
        }
    }
    let known: BTreeSet<&Module> = modules.keys().collect();
    let mut edges: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    for (module, code) in &codes {
        if test_only.iter().any(|t| module.starts_with(t)) {
            continue;
        }
        let uses = edges.entry(module.clone()).or_default();
        for (inline, path) in inline_modules(code)
            .into_iter()
            .flat_map(|(inline, code)| paths(&code).into_iter().map(move |p| (inline.clone(), p)))
        {
            let mut here = module.clone();
            here.extend(inline);
            let mut base = match path[0].as_str() {
                "crate" => root.clone(),
                _ => here,
            };
            let mut rest = &path[1..];
            if path[0] == "super" {
                base.pop();
                while rest.first().is_some_and(|s| s == "super") {
                    base.pop();
                    rest = &rest[1..];
                }
            }
            // The deepest module the path names.
            let mut target = base.clone();
            for segment in rest {
                let mut deeper = target.clone();
                deeper.push(segment.clone());
                if !known.contains(&deeper) {
                    break;
                }
                target = deeper;
            }
            if target == root && module != &root {
                let name = rest.first().unwrap_or_else(|| {
                    panic!("{}: a path to the crate root itself", module.join("::"))
                });
                target = reexports.get(name).cloned().unwrap_or_else(|| {
                    panic!(
                        "{}: `crate::{name}` is neither a module nor re-exported by the root",
                        module.join("::")
                    )
                });
            }
            if &target != module && known.contains(&target) {
                uses.insert(target);
            }
        }
    }
    edges
}

/// A cycle of `edges`, if there is one, as the modules along it (the first one repeated last).
fn find_cycle(edges: &BTreeMap<Module, BTreeSet<Module>>) -> Option<Vec<Module>> {
    #[derive(Clone, Copy, PartialEq)]
    enum State {
        Open,
        Done,
    }
    fn visit(
        m: &Module,
        edges: &BTreeMap<Module, BTreeSet<Module>>,
        state: &mut BTreeMap<Module, State>,
        stack: &mut Vec<Module>,
    ) -> Option<Vec<Module>> {
        match state.get(m) {
            Some(State::Done) => return None,
            Some(State::Open) => {
                let from = stack.iter().position(|s| s == m).expect("on the stack");
                let mut cycle = stack[from..].to_vec();
                cycle.push(m.clone());
                return Some(cycle);
            }
            None => {}
        }
        state.insert(m.clone(), State::Open);
        stack.push(m.clone());
        for next in edges.get(m).into_iter().flatten() {
            if let Some(cycle) = visit(next, edges, state, stack) {
                return Some(cycle);
            }
        }
        stack.pop();
        state.insert(m.clone(), State::Done);
        None
    }
    let mut state = BTreeMap::new();
    edges
        .keys()
        .find_map(|m| visit(m, edges, &mut state, &mut Vec::new()))
}

fn source(files: &[(&str, &str)]) -> BTreeMap<Module, String> {
    files
        .iter()
        .map(|(module, code)| {
            let mut m = vec!["crate".to_owned()];
            m.extend(
                module
                    .split("::")
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned),
            );
            (m, (*code).to_owned())
        })
        .collect()
}

fn names(cycle: &[Module]) -> Vec<String> {
    cycle.iter().map(|m| m.join("::")).collect()
}

#[test]
fn host_src_has_no_import_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let modules = modules(&src);
    assert!(modules.len() > 20, "found only {} modules", modules.len());
    let edges = edges(&modules);
    // The layers the crate docs describe: a few edges that must be there.
    let has = |from: &str, to: &str| {
        let m = |s: &str| s.split("::").map(str::to_owned).collect::<Module>();
        edges.get(&m(from)).is_some_and(|e| e.contains(&m(to)))
    };
    assert!(has("crate::region", "crate::runtime"));
    assert!(has("crate::backend::persistent", "crate::gpu"));
    assert!(has("crate::backend::persistent", "crate::backend::stage"));
    assert!(has("crate::runtime", "crate::backend"));
    if let Some(cycle) = find_cycle(&edges) {
        panic!("import cycle in host/src: {}", names(&cycle).join(" -> "));
    }
}

/// Every cycle of a crate's modules, each once, for the message.
fn all_cycles(edges: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<Vec<String>> {
    let mut edges = edges.clone();
    let mut found = Vec::new();
    while let Some(cycle) = find_cycle(&edges) {
        // Drop the cycle's last edge and look again.
        let (from, to) = (&cycle[cycle.len() - 2], &cycle[cycle.len() - 1]);
        if let Some(out) = edges.get_mut(from) {
            out.remove(to);
        }
        found.push(names(&cycle));
    }
    found
}

/// The device crates (the scheduler's `taskweave-device`, and the tile library) form layers
/// too: no import cycle in their `src`.
#[test]
fn the_device_crates_have_no_import_cycle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for krate in ["device", "tile"] {
        let modules = modules(&root.join(krate).join("src"));
        assert!(
            modules.len() > 10,
            "{krate}: found only {} modules",
            modules.len()
        );
        let cycles = all_cycles(&edges(&modules));
        assert!(
            cycles.is_empty(),
            "import cycles in {krate}/src:\n{}",
            cycles
                .iter()
                .map(|c| c.join(" -> "))
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}

#[test]
fn a_cycle_through_use_lines_is_found() {
    let modules = source(&[
        ("", "mod a; mod b; pub use b::Thing;"),
        ("a", "use crate::{b::Thing, c};\nfn f() {}"),
        (
            "b",
            "//! uses crate::a in a comment only\npub struct Thing;\nuse super::a::f;",
        ),
        ("c", "pub fn g() {}"),
    ]);
    let cycle = find_cycle(&edges(&modules)).expect("a and b use each other");
    assert_eq!(names(&cycle), ["crate::a", "crate::b", "crate::a"]);
}

#[test]
fn a_cycle_through_inline_paths_and_root_reexports_is_found() {
    let modules = source(&[
        ("", "mod x; mod y; pub use y::Y;"),
        ("x", "fn f() -> crate::Y { todo!() }"),
        (
            "y",
            "pub struct Y; fn g() { let s = \"crate::x\"; crate::x::f(); }",
        ),
    ]);
    let cycle = find_cycle(&edges(&modules)).expect("x and y use each other");
    assert_eq!(names(&cycle), ["crate::x", "crate::y", "crate::x"]);
}

#[test]
fn comments_strings_and_test_modules_are_not_edges() {
    let modules = source(&[
        ("", "mod p; mod q;"),
        (
            "p",
            "/// [`Q`](crate::q::Q)\nconst S: &str = \"crate::q\";\nconst C: char = 'q';\n\
             #[cfg(test)]\nmod tests { use crate::q::Q; }",
        ),
        ("q", "use crate::p::S;\npub struct Q<'a>(&'a str);"),
    ]);
    assert_eq!(find_cycle(&edges(&modules)), None);
}
