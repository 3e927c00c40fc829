//! No library code returns `Result<_, String>`: errors are typed (thiserror
//! enums with sources), so callers can tell them apart. Scans every
//! `crates/*/src/**/*.rs` of the workspace, leaving out `#[cfg(test)]` items
//! and the files of `#[cfg(test)] mod name;`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::collections::HashSet;
use std::path::{Path, PathBuf};

#[test]
fn library_code_returns_no_string_errors() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for entry in std::fs::read_dir(&crates).unwrap() {
        let src = entry.unwrap().path().join("src");
        if src.is_dir() {
            rust_files(&src, &mut files);
        }
    }
    files.sort();
    assert!(
        files.len() > 100,
        "found only {} source files under {}",
        files.len(),
        crates.display()
    );
    let mut test_files = HashSet::new();
    let mut found = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let code = Code::of(&text);
        for name in code.test_module_files() {
            test_files.extend(child_module_files(file, &name));
        }
        for line in code.string_error_lines() {
            found.push((file.clone(), line));
        }
    }
    let found: Vec<String> = found
        .into_iter()
        .filter(|(file, _)| !test_files.contains(file))
        .map(|(file, line)| {
            let shown = file.strip_prefix(&crates).unwrap_or(&file);
            format!("crates/{}:{line}", shown.display())
        })
        .collect();
    assert!(
        found.is_empty(),
        "{} `Result<_, String>` in library code (use a thiserror type):\n{}",
        found.len(),
        found.join("\n")
    );
}

fn rust_files(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

/// Where `mod name;` declared in `parent` lives.
fn child_module_files(parent: &Path, name: &str) -> Vec<PathBuf> {
    let dir = parent.parent().unwrap_or(Path::new(""));
    let stem = parent.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    let base = if matches!(stem, "mod" | "lib" | "main") {
        dir.to_path_buf()
    } else {
        dir.join(stem)
    };
    vec![
        base.join(format!("{name}.rs")),
        base.join(name).join("mod.rs"),
    ]
}

/// A source file with comments, string and character literals blanked
/// out (newlines kept, so line numbers stay) and `#[cfg(test)]` items
/// removed.
struct Code {
    chars: Vec<char>,
    test_modules: Vec<String>,
}

impl Code {
    fn of(text: &str) -> Self {
        let chars = blank_comments_and_literals(text);
        let (chars, test_modules) = without_test_items(chars);
        Self {
            chars,
            test_modules,
        }
    }

    fn test_module_files(&self) -> Vec<String> {
        self.test_modules.clone()
    }

    /// The line of each `Result<…, String>`.
    fn string_error_lines(&self) -> Vec<usize> {
        let c = &self.chars;
        let mut lines = Vec::new();
        let mut i = 0;
        while i < c.len() {
            if starts_word(c, i, "Result") && c.get(i + 6) == Some(&'<') {
                if let Some(arguments) = generic_arguments(c, i + 7) {
                    if arguments.len() == 2
                        && matches!(
                            arguments[1].as_str(),
                            "String" | "std::string::String" | "::std::string::String"
                        )
                    {
                        lines.push(1 + c[..i].iter().filter(|&&ch| ch == '\n').count());
                    }
                }
            }
            i += 1;
        }
        lines
    }
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn starts_word(c: &[char], at: usize, word: &str) -> bool {
    let before_ok = at == 0 || !is_ident(c[at - 1]);
    let matches = word
        .chars()
        .enumerate()
        .all(|(k, w)| c.get(at + k) == Some(&w));
    let after_ok = c.get(at + word.len()).is_none_or(|&n| !is_ident(n));
    before_ok && matches && after_ok
}

/// The top-level arguments of the generic list that opens just before
/// `from`, whitespace removed; `None` if it does not close.
fn generic_arguments(c: &[char], from: usize) -> Option<Vec<String>> {
    let mut depth = 0usize;
    let mut arguments = vec![String::new()];
    let mut i = from;
    while let Some(&ch) = c.get(i) {
        match ch {
            '-' | '=' if c.get(i + 1) == Some(&'>') => {
                arguments.last_mut()?.push(ch);
                arguments.last_mut()?.push('>');
                i += 1;
            }
            '<' | '(' | '[' => {
                depth += 1;
                arguments.last_mut()?.push(ch);
            }
            '>' | ')' | ']' if depth == 0 => {
                if arguments.last().is_some_and(String::is_empty) {
                    arguments.pop();
                }
                return Some(arguments);
            }
            '>' | ')' | ']' => {
                depth -= 1;
                arguments.last_mut()?.push(ch);
            }
            ',' if depth == 0 => arguments.push(String::new()),
            '{' | '}' | ';' => return None,
            ch if ch.is_whitespace() => {}
            ch => arguments.last_mut()?.push(ch),
        }
        i += 1;
    }
    None
}

fn blank_comments_and_literals(text: &str) -> Vec<char> {
    let c: Vec<char> = text.chars().collect();
    let mut out = c.clone();
    let blank = |out: &mut Vec<char>, from: usize, to: usize| {
        for ch in &mut out[from..to.min(c.len())] {
            if *ch != '\n' {
                *ch = ' ';
            }
        }
    };
    let mut i = 0;
    while i < c.len() {
        let next = c.get(i + 1).copied();
        if c[i] == '/' && next == Some('/') {
            let end = (i..c.len()).find(|&k| c[k] == '\n').unwrap_or(c.len());
            blank(&mut out, i, end);
            i = end;
        } else if c[i] == '/' && next == Some('*') {
            let mut depth = 0usize;
            let mut k = i;
            while k < c.len() {
                if c[k] == '/' && c.get(k + 1) == Some(&'*') {
                    depth += 1;
                    k += 2;
                } else if c[k] == '*' && c.get(k + 1) == Some(&'/') {
                    depth -= 1;
                    k += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    k += 1;
                }
            }
            blank(&mut out, i, k);
            i = k;
        } else if c[i] == 'r'
            && (i == 0 || !is_ident(c[i - 1]))
            && matches!(next, Some('#') | Some('"'))
        {
            let hashes = c[i + 1..].iter().take_while(|&&ch| ch == '#').count();
            if c.get(i + 1 + hashes) != Some(&'"') {
                i += 1;
                continue;
            }
            let mut k = i + 2 + hashes;
            while k < c.len() {
                if c[k] == '"' && (1..=hashes).all(|h| c.get(k + h) == Some(&'#')) {
                    k += 1 + hashes;
                    break;
                }
                k += 1;
            }
            blank(&mut out, i, k);
            i = k;
        } else if c[i] == '"' {
            let mut k = i + 1;
            while k < c.len() && c[k] != '"' {
                k += if c[k] == '\\' { 2 } else { 1 };
            }
            blank(&mut out, i, k + 1);
            i = k + 1;
        } else if c[i] == '\'' {
            // A character literal ('x', '\n', '\u{..}'), not a lifetime.
            let end = if next == Some('\\') {
                (i + 2..c.len()).find(|&k| c[k] == '\'')
            } else if c.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            match end {
                Some(end) => {
                    blank(&mut out, i, end + 1);
                    i = end + 1;
                }
                None => i += 1,
            }
        } else {
            i += 1;
        }
    }
    out
}

/// Removes every item that follows `#[cfg(test)]`; returns the names of
/// `#[cfg(test)] mod name;` declarations, whose files are tests too.
fn without_test_items(mut c: Vec<char>) -> (Vec<char>, Vec<String>) {
    const MARK: &str = "#[cfg(test)]";
    let mark: Vec<char> = MARK.chars().collect();
    let mut modules = Vec::new();
    let mut i = 0;
    while i + mark.len() <= c.len() {
        if c[i..i + mark.len()] != mark[..] {
            i += 1;
            continue;
        }
        let start = i;
        let mut k = i + mark.len();
        let mut depth = 0usize;
        let mut end = c.len();
        while k < c.len() {
            match c[k] {
                '{' => depth += 1,
                '}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        end = k + 1;
                        break;
                    }
                }
                ';' if depth == 0 => {
                    end = k + 1;
                    break;
                }
                _ => {}
            }
            k += 1;
        }
        let item: String = c[start + mark.len()..end].iter().collect();
        let words: Vec<&str> = item
            .split(|ch: char| !is_ident(ch))
            .filter(|w| !w.is_empty())
            .collect();
        if item.trim_end().ends_with(';') {
            if let Some(at) = words.iter().position(|&w| w == "mod") {
                if let Some(name) = words.get(at + 1) {
                    modules.push((*name).to_owned());
                }
            }
        }
        for ch in &mut c[start..end] {
            if *ch != '\n' {
                *ch = ' ';
            }
        }
        i = end;
    }
    (c, modules)
}

#[test]
fn the_scanner_finds_string_errors_outside_tests_only() {
    let text = r##"
fn a() -> Result<u8, String> { todo!() }
fn b() -> Result<u8, Error> { todo!() }
type Loader<T> = Box<dyn Fn() -> Result<T, String> + Send>;
fn c() -> Result<
    Vec<u8>,
    String,
> { todo!() }
// fn d() -> Result<u8, String>
fn e() -> &'static str { "Result<u8, String>" }
fn f() -> Result<String> { todo!() }
fn g() -> Result<HashMap<String, String>, io::Error> { todo!() }
#[cfg(test)]
mod tests {
    fn h() -> Result<u8, String> { todo!() }
}
#[cfg(test)]
mod more;
fn i() -> Result<(), String> { let c = '{'; todo!() }
"##;
    let code = Code::of(text);
    assert_eq!(code.string_error_lines(), [2, 4, 5, 19]);
    assert_eq!(code.test_module_files(), ["more"]);
    assert_eq!(
        child_module_files(Path::new("src/to_pprof/rows.rs"), "tests"),
        [
            PathBuf::from("src/to_pprof/rows/tests.rs"),
            PathBuf::from("src/to_pprof/rows/tests/mod.rs")
        ]
    );
}
