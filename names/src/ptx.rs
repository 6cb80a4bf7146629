//! PTX modules cut into pieces: the kernels of one region (or one kernel alone) and the functions
//! and globals they reach, as the device build assembles them and as the host hands them to the
//! driver when it has to compile PTX itself.
//!
//! 1. [`Module::parse`] splits a module at its top-level items: kernels (`.entry`), functions
//!    (`.func`) and everything else, line by line (directives and globals).
//! 2. [`Module::only`] keeps the kernels a predicate names, the functions they reach (through calls
//!    or function pointers) and the globals those reach; each kept kernel may get a register cap.
//! 3. [`canonical`] renames what the compiler numbers across the whole module (basic-block labels
//!    and local depots, which are local to a function, and anonymous globals) so that a piece's text
//!    depends on its own code only: a change to one region's body leaves every other region's
//!    piece byte for byte the same, and so does its cache key.
//!
//! PTX has no string literals and inline assembly braces come in pairs, so items are found by
//! counting braces, outside comments.

use alloc::collections::{BTreeMap, BTreeSet};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

/// One top-level item of a PTX module.
#[derive(Clone, Copy, Debug)]
enum Item<'a> {
    /// A kernel definition.
    Entry { name: &'a str, text: &'a str },
    /// A function definition or declaration.
    Func { name: &'a str, text: &'a str },
    /// A `.global` or `.const` variable, on one line.
    Global { name: &'a str, text: &'a str },
    /// Anything else (directives, shared-memory declarations), kept whole.
    Other(&'a str),
}

/// A PTX module split into its items.
#[derive(Debug)]
pub struct Module<'a> {
    items: Vec<Item<'a>>,
    /// Function definitions by name.
    funcs: BTreeMap<&'a str, &'a str>,
    /// Global variables by name.
    globals: BTreeMap<&'a str, &'a str>,
}

impl<'a> Module<'a> {
    /// Splits `ptx` at its top-level items.
    pub fn parse(ptx: &'a str) -> Self {
        let mut items = Vec::new();
        let mut funcs = BTreeMap::new();
        let mut globals = BTreeMap::new();
        let mut rest = ptx;
        while !rest.is_empty() {
            let line_end = rest.find('\n').map_or(rest.len(), |i| i + 1);
            let line = &rest[..line_end];
            let code = code(line).trim_start();
            let bare = strip_linkage(code);
            let entry = bare.strip_prefix(".entry");
            let func = bare.strip_prefix(".func");
            if entry.is_none() && func.is_none() {
                match global_name(bare) {
                    Some(name) => {
                        globals.insert(name, line);
                        items.push(Item::Global { name, text: line });
                    }
                    None => items.push(Item::Other(line)),
                }
                rest = &rest[line_end..];
                continue;
            }
            let len = item_len(rest);
            let text = &rest[..len];
            match (entry, func) {
                (Some(tail), _) => items.push(Item::Entry {
                    name: ident(tail.trim_start()),
                    text,
                }),
                (_, Some(tail)) => {
                    let name = func_name(tail);
                    if text.contains('{') {
                        funcs.insert(name, text);
                    }
                    items.push(Item::Func { name, text });
                }
                _ => unreachable!("one of the two matched"),
            }
            rest = &rest[len..];
        }
        Self {
            items,
            funcs,
            globals,
        }
    }

    /// The names of the kernels defined in the module, in order.
    pub fn kernels(&self) -> impl Iterator<Item = &'a str> + '_ {
        self.items.iter().filter_map(|item| match item {
            Item::Entry { name, .. } => Some(*name),
            _ => None,
        })
    }

    /// The text of kernel `name`'s definition.
    pub fn kernel(&self, name: &str) -> Option<&'a str> {
        self.items.iter().find_map(|item| match item {
            Item::Entry { name: n, text } if *n == name => Some(*text),
            _ => None,
        })
    }

    /// The names of the functions (defined or declared) and globals of the module.
    pub fn defined(&self) -> BTreeSet<&'a str> {
        self.definitions().map(|(name, _)| name).collect()
    }

    /// The functions (declarations and definitions) and globals of the module, in order, with
    /// their text.
    pub fn definitions(&self) -> impl Iterator<Item = (&'a str, &'a str)> + '_ {
        self.items.iter().filter_map(|item| match item {
            Item::Func { name, text } | Item::Global { name, text } => Some((*name, *text)),
            _ => None,
        })
    }

    /// The functions kernel `kernel` reaches, through calls or function pointers.
    pub fn reached(&self, kernel: &str) -> BTreeSet<&'a str> {
        let mut reached = BTreeSet::new();
        let mut todo: Vec<&str> = self.kernel(kernel).into_iter().collect();
        while let Some(text) = todo.pop() {
            for word in words(text) {
                if let Some((name, def)) = self.funcs.get_key_value(word)
                    && reached.insert(*name)
                {
                    todo.push(def);
                }
            }
        }
        reached
    }

    /// The module with kernel `kernel` alone and what it reaches, under `.maxnreg cap` when `cap`
    /// is given; `None` if there is no such kernel.
    pub fn alone(&self, kernel: &str, cap: Option<u32>) -> Option<String> {
        self.kernels()
            .any(|name| name == kernel)
            .then(|| self.only(|name| name == kernel, |_| cap))
    }

    /// The module with the kernels that `keep` names, the functions they reach and the globals
    /// those reach, each kept kernel under `.maxnreg cap(name)` where that is `Some` (an earlier
    /// `.maxnreg` is replaced) and with none where it is `None`.
    pub fn only(&self, keep: impl Fn(&str) -> bool, cap: impl Fn(&str) -> Option<u32>) -> String {
        self.cut(keep, |name| Some(cap(name)))
    }

    /// The module with the kernels that `keep` names and what they reach, each kernel as it is
    /// (with the cap it has).
    pub fn with_kernels(&self, keep: impl Fn(&str) -> bool) -> String {
        self.cut(keep, |_| None)
    }

    /// [`Module::only`], where `cap` gives `None` to leave a kernel's cap as it is.
    fn cut(
        &self,
        keep: impl Fn(&str) -> bool,
        cap: impl Fn(&str) -> Option<Option<u32>>,
    ) -> String {
        let bodies: Vec<&str> = self
            .items
            .iter()
            .filter_map(|item| match item {
                Item::Entry { name, text } if keep(name) => Some(*text),
                _ => None,
            })
            .collect();
        let mut reached = BTreeSet::new();
        let mut todo = bodies.clone();
        while let Some(text) = todo.pop() {
            for word in words(text) {
                if let Some((name, def)) = self.funcs.get_key_value(word)
                    && reached.insert(*name)
                {
                    todo.push(def);
                } else if let Some((name, def)) = self.globals.get_key_value(word)
                    && reached.insert(*name)
                {
                    todo.push(def);
                }
            }
        }
        let mut out = String::with_capacity(bodies.iter().map(|b| b.len() * 4).sum());
        for item in &self.items {
            match item {
                Item::Other(text) => out.push_str(text),
                Item::Func { name, text } | Item::Global { name, text }
                    if reached.contains(name) =>
                {
                    out.push_str(text)
                }
                Item::Func { .. } | Item::Global { .. } => {}
                Item::Entry { name, text } if keep(name) => match cap(name) {
                    Some(Some(cap)) => out.push_str(&with_cap(text, cap)),
                    Some(None) => out.push_str(&without_cap(text)),
                    None => out.push_str(text),
                },
                Item::Entry { .. } => {}
            }
        }
        out
    }
}

/// `ptx` with the names the compiler numbers across a whole module renamed in order of their first
/// appearance in it: basic-block labels (`$L__BB<function>_<block>`) and local depots
/// (`__local_depot<function>`), whose first number is the function's index in the module they came
/// from, and anonymous globals (`anon_$_<hash>_$_<n>`). Labels and depots are local to a function,
/// globals are renamed everywhere they appear, so the module means what it meant.
pub fn canonical(ptx: &str) -> String {
    let mut out = String::with_capacity(ptx.len());
    let mut globals: BTreeMap<&str, usize> = BTreeMap::new();
    let mut rest = ptx;
    while !rest.is_empty() {
        let at = rest.find(['$', '_', 'a']).unwrap_or(rest.len());
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        if rest.is_empty() {
            break;
        }
        let word_len = rest
            .find(|c: char| !is_word(c))
            .unwrap_or(rest.len())
            .max(1);
        let word = &rest[..word_len];
        // Only whole words: the character before must not be part of one.
        let starts_word = out.chars().last().is_none_or(|c| !is_word(c));
        if starts_word && let Some(tail) = word.strip_prefix("$L__BB") {
            // `$L__BB<f>_<b>`: keep the block number, drop the function's.
            match tail.split_once('_') {
                Some((f, b)) if f.bytes().all(|d| d.is_ascii_digit()) => {
                    out.push_str("$L__BB0_");
                    out.push_str(b);
                }
                _ => out.push_str(word),
            }
        } else if starts_word
            && let Some(tail) = word.strip_prefix("__local_depot")
            && !tail.is_empty()
            && tail.bytes().all(|d| d.is_ascii_digit())
        {
            out.push_str("__local_depot0");
        } else if starts_word && word.starts_with("anon_$_") && word.contains("_$_") {
            let next = globals.len();
            let k = *globals.entry(word).or_insert(next);
            out.push_str(&format!("tw_anon_{k}"));
        } else {
            out.push_str(word);
        }
        rest = &rest[word_len..];
    }
    out
}

/// Whether `c` belongs to a PTX identifier.
fn is_word(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '$'
}

/// The identifiers (and other runs of identifier characters) of `text`.
fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !is_word(c)).filter(|w| !w.is_empty())
}

/// A line without its comment.
fn code(line: &str) -> &str {
    line.split("//").next().unwrap_or("")
}

/// `text` without a leading `.visible`, `.weak` or `.extern`.
fn strip_linkage(text: &str) -> &str {
    [".visible", ".weak", ".extern"]
        .iter()
        .find_map(|l| text.strip_prefix(l))
        .map_or(text, str::trim_start)
}

/// The name a `.global` or `.const` definition line declares (after its linkage).
fn global_name(bare: &str) -> Option<&str> {
    let rest = bare
        .strip_prefix(".global")
        .or_else(|| bare.strip_prefix(".const"))?;
    // `.global .align 8 .u64 name[3] = {...};`: the last word before `[`, `=` or `;`.
    let decl = &rest[..rest.find(['[', '=', ';']).unwrap_or(rest.len())];
    decl.split_whitespace()
        .last()
        .map(ident)
        .filter(|name| !name.is_empty() && !name.starts_with('.'))
}

/// The identifier at the start of `text`.
fn ident(text: &str) -> &str {
    let end = text.find(|c: char| !is_word(c)).unwrap_or(text.len());
    &text[..end]
}

/// The name of a function from what follows `.func`: an optional return parameter list, then
/// the name.
fn func_name(tail: &str) -> &str {
    let tail = tail.trim_start();
    let tail = match tail.strip_prefix('(') {
        Some(inner) => inner[inner.find(')').map_or(inner.len(), |i| i + 1)..].trim_start(),
        None => tail,
    };
    ident(tail)
}

/// The length of the item (kernel or function) that starts `text`: through its body's closing
/// brace, or through the `;` of a declaration.
fn item_len(text: &str) -> usize {
    let mut depth = 0i32;
    let mut seen_body = false;
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        at += line.len();
        let code = code(line);
        depth += code.matches('{').count() as i32 - code.matches('}').count() as i32;
        seen_body |= code.contains('{');
        if (seen_body && depth == 0) || (!seen_body && code.trim_end().ends_with(';')) {
            return at;
        }
    }
    text.len()
}

/// `kernel` (an entry's text) with `.maxnreg cap` before its body, instead of any it had.
pub fn with_cap(kernel: &str, cap: u32) -> String {
    let mut out = String::with_capacity(kernel.len() + 16);
    let mut done = false;
    for line in kernel.split_inclusive('\n') {
        let trimmed = line.trim_start();
        if trimmed.starts_with(".maxnreg") {
            continue;
        }
        if !done && trimmed.starts_with('{') {
            out.push_str(&format!(".maxnreg {cap}\n"));
            done = true;
        }
        out.push_str(line);
    }
    out
}

/// `kernel` without a `.maxnreg` directive.
fn without_cap(kernel: &str) -> String {
    kernel
        .split_inclusive('\n')
        .filter(|line| !line.trim_start().starts_with(".maxnreg"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = "//\n.version 8.0\n.target sm_90\n.address_size 64\n\
        .global .align 1 .b8 anon_$_aa_$_7[2] = {104, 105};\n\
        .global .align 8 .u64 anon_$_aa_$_9[1] = {generic(anon_$_aa_$_7)};\n\
        .global .align 1 .b8 anon_$_aa_$_8[1] = {0};\n\
        .func  (.param .b32 r) used(\n\t.param .b32 p\n);\n\
        .func unused()\n{\n\tret;\n}\n\
        .func  (.param .b32 r) used(\n\t.param .b32 p\n)\n{\n\t{ // asm\n\t}\n\tcall.uni deep, ();\n\tret;\n}\n\
        .func deep()\n{\n\tmov.u64 %rd1, anon_$_aa_$_9;\n\tret;\n}\n\
        .visible .entry k(\n\t.param .u64 p\n)\n{\n\tcall.uni (r), used, (p);\n$L__BB3_1:\n\tret;\n}\n\
        .visible .entry other(\n)\n.maxntid 64\n{\n\tcall.uni unused, ();\n\tmov.u64 %rd1, anon_$_aa_$_8;\n\tret;\n}\n";

    #[test]
    fn a_kernel_alone_keeps_what_it_reaches_and_its_cap() {
        let module = Module::parse(PTX);
        assert_eq!(module.kernels().collect::<Vec<_>>(), ["k", "other"]);
        let alone = module.alone("k", Some(64)).unwrap();
        assert!(alone.starts_with("//\n.version 8.0\n.target sm_90\n.address_size 64\n"));
        assert_eq!(
            alone.matches("used(").count(),
            2,
            "declaration and definition"
        );
        assert!(alone.contains(".func deep()\n{"));
        assert!(!alone.contains("unused") && !alone.contains("other"));
        assert!(alone.contains(".visible .entry k(\n\t.param .u64 p\n)\n.maxnreg 64\n{\n"));
        // The globals `deep` reaches, through another global too, and not the other kernel's.
        assert!(alone.contains("anon_$_aa_$_9[1]") && alone.contains("anon_$_aa_$_7[2]"));
        assert!(!alone.contains("anon_$_aa_$_8"));
        let other = module.alone("other", Some(80)).unwrap();
        assert!(other.contains(".maxntid 64\n.maxnreg 80\n{\n\tcall.uni unused"));
        assert!(!other.contains("deep") && !other.contains(") used("));
        assert!(module.alone("missing", None).is_none());
        assert_eq!(
            module.reached("k").into_iter().collect::<Vec<_>>(),
            ["deep", "used"]
        );
        assert_eq!(
            module.reached("other").into_iter().collect::<Vec<_>>(),
            ["unused"]
        );
        // Two kernels keep what either reaches, each function once, and their own caps.
        let both = module.only(|name| name == "k" || name == "other", |_| None);
        assert!(both.contains(".func deep()\n{") && both.contains("call.uni unused"));
        assert_eq!(both.matches(".func deep()\n{").count(), 1);
        assert!(both.contains(".maxntid 64\n{\n\tcall.uni unused"));
        assert!(module.only(|_| false, |_| None).matches(".entry").count() == 0);
        let capped = module.alone("k", Some(64)).unwrap();
        assert_eq!(
            with_cap(&capped, 96).matches(".maxnreg").count(),
            1,
            "a new cap replaces the old"
        );
        let uncapped = Module::parse(&capped).only(|_| true, |_| None);
        assert!(!uncapped.contains(".maxnreg"), "no cap removes the old one");
        let kept = Module::parse(&capped).with_kernels(|_| true);
        assert!(kept.contains(".maxnreg 64\n"), "as it is keeps it");
    }

    #[test]
    fn canonical_text_forgets_where_the_piece_was_in_its_module() {
        let a = ".global .b8 anon_$_aa_$_7[1];\n.func f()\n{\n\t.local .b8 __local_depot12[8];\n\
                 $L__BB12_3:\n\tbra.uni $L__BB12_3;\n\tmov.u64 %rd1, anon_$_aa_$_7;\n}\n";
        let b = ".global .b8 anon_$_aa_$_3[1];\n.func f()\n{\n\t.local .b8 __local_depot4[8];\n\
                 $L__BB4_3:\n\tbra.uni $L__BB4_3;\n\tmov.u64 %rd1, anon_$_aa_$_3;\n}\n";
        assert_eq!(canonical(a), canonical(b));
        assert!(canonical(a).contains("$L__BB0_3:") && canonical(a).contains("tw_anon_0"));
        // Other blocks stay apart, and so do other globals.
        let c = b.replace("$L__BB4_3", "$L__BB4_4");
        assert_ne!(canonical(&c), canonical(b));
        // Words that merely contain the patterns are left alone.
        let d = ".func my__local_depot3x()\n{\n\tmov.u64 %rd1, xanon_$_aa_$_1;\n}\n";
        assert_eq!(canonical(d), d);
    }
}
