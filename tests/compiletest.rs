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
        assert!(
            fence.trim_start().starts_with("```"),
            "no code block after {line}"
        );
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
        "tests/pass/readme-cholesky.rs",
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

/// The string literals inside the error-making calls of one source file: `errors.push(…)`,
/// `Error::new(…)`, `Error::new_spanned(…)` and `….error(…)`.
fn error_literals(source: &str) -> Vec<String> {
    const CALLS: [&str; 4] = [
        "errors.push(",
        "Error::new(",
        "Error::new_spanned(",
        ".error(",
    ];
    let mut literals = Vec::new();
    for call in CALLS {
        for (at, _) in source.match_indices(call) {
            let mut depth = 0;
            let mut chars = source[at + call.len() - 1..].chars();
            while let Some(c) = chars.next() {
                match c {
                    '(' => depth += 1,
                    ')' if depth == 1 => break,
                    ')' => depth -= 1,
                    '"' => {
                        let mut literal = String::new();
                        while let Some(c) = chars.next() {
                            match c {
                                '"' => break,
                                '\\' => literal.extend(chars.next()),
                                c => literal.push(c),
                            }
                        }
                        literals.push(literal);
                    }
                    _ => {}
                }
            }
        }
    }
    literals
}

/// The pieces of a `format!` string between its placeholders, with `{{` and `}}` unescaped.
fn fixed_pieces(format: &str) -> Vec<String> {
    let mut pieces = vec![String::new()];
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                pieces.last_mut().unwrap().push('{');
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                pieces.last_mut().unwrap().push('}');
            }
            '{' => {
                for c in chars.by_ref() {
                    if c == '}' {
                        break;
                    }
                }
                pieces.push(String::new());
            }
            c => pieces.last_mut().unwrap().push(c),
        }
    }
    pieces.retain(|p| p.trim().len() >= 8);
    pieces
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every error the macros can report has a ui case: each message written in `macros/src` appears
/// in some blessed `ui/*.stderr`. A new error branch without a case fails here.
#[test]
fn every_macro_error_has_a_ui_case() {
    // Errors a ui case cannot reach, and where they are tested instead.
    const ELSEWHERE: [(&str, &str); 1] = [(
        "which the device build does not compile",
        "needs the device build's cfg(taskweave_ptx), which trybuild cannot set: \
         macros/src/expand/kernels.rs tests it",
    )];
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut stderr = String::new();
    for entry in std::fs::read_dir(root.join("ui")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "stderr") {
            stderr.push_str(&std::fs::read_to_string(path).unwrap());
        }
    }
    let mut sources = Vec::new();
    rust_files(&root.join("../macros/src"), &mut sources);
    let mut missing = Vec::new();
    let mut seen = 0;
    for source in &sources {
        let text = std::fs::read_to_string(source).unwrap();
        for literal in error_literals(&text) {
            for piece in fixed_pieces(&literal) {
                seen += 1;
                let elsewhere = ELSEWHERE.iter().any(|(text, _)| piece.contains(text));
                if !elsewhere && !stderr.contains(piece.as_str()) {
                    missing.push(format!("{}: {piece:?}", source.display()));
                }
            }
        }
    }
    assert!(seen > 30, "only {seen} messages found: is the scan broken?");
    assert!(
        missing.is_empty(),
        "error messages without a ui case (add tests/ui/<mistake>.rs and bless it):\n{}",
        missing.join("\n")
    );
}
