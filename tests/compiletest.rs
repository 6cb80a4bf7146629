//! Compile-fail cases of the DSL (`ui/`, one mistake each, with the blessed compiler output) and
//! programs that must compile and run (`pass/`); and the README's code, which is those programs.
//!
//! Bless changed messages with `TRYBUILD=overwrite cargo test -p taskweave-tests --test compiletest`
//! and read every `.stderr` it rewrites.

use std::path::Path;

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("ui/*.rs");
    t.pass("pass/*.rs");
}

/// The code blocks of `text` that follow a `<!-- file: PATH -->` line, unindented by their fence's
/// indentation, with their paths.
fn marked_blocks(text: &str) -> Vec<(String, String)> {
    let mut blocks = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let Some(path) = line
            .trim()
            .strip_prefix("<!-- file: ")
            .and_then(|rest| rest.strip_suffix(" -->"))
        else {
            continue;
        };
        let fence = lines.next().unwrap_or_default();
        let indent = fence.len() - fence.trim_start().len();
        assert!(fence.trim_start().starts_with("```"), "no code block after {line}");
        let mut code = String::new();
        for line in lines.by_ref() {
            if line.trim_start().starts_with("```") {
                break;
            }
            code.push_str(line.get(indent..).unwrap_or(""));
            code.push('\n');
        }
        blocks.push((path.to_owned(), code));
    }
    blocks
}

/// Every file the README shows is the file in the repository, which the tests compile and run
/// (`pass/`) or `scripts/test.sh` builds and runs (`examples/quickstart`).
#[test]
fn the_readme_shows_the_files_that_are_tested() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let blocks = marked_blocks(&readme);
    let paths: Vec<&str> = blocks.iter().map(|(path, _)| path.as_str()).collect();
    for expected in [
        "tests/pass/readme-lu.rs",
        "examples/quickstart/build.rs",
        "examples/quickstart/src/lib.rs",
        "examples/quickstart/src/main.rs",
    ] {
        assert!(paths.contains(&expected), "the README shows no {expected}");
    }
    for (path, code) in &blocks {
        let file = std::fs::read_to_string(root.join(path))
            .unwrap_or_else(|e| panic!("the README shows {path}: {e}"));
        assert!(
            file == *code,
            "the README's {path} is not the file's: make them equal\n--- README\n{code}--- file\n{file}"
        );
    }
}
