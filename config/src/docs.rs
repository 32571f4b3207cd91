//! The text generated from the rows of [`SETTINGS`]: `sqtt.toml.example` and the settings
//! tables of README.md and docs/settings.md. A test compares the checked-in files with
//! [`GENERATED`]; `SQTT_BLESS=1 cargo test -p sqtt-config` rewrites them.

use crate::setting::{Setting, Toml, SETTINGS};

/// A file (relative to the repository root) and its generated part.
pub struct Generated {
    pub path: &'static str,
    /// `None`: the whole file; else the lines between this marker line and [`END`].
    pub begin: Option<&'static str>,
    pub text: fn() -> String,
}

/// What is generated, and where.
pub const GENERATED: &[Generated] = &[
    Generated {
        path: "sqtt.toml.example",
        begin: None,
        text: toml_example,
    },
    Generated {
        path: "README.md",
        begin: Some(BEGIN),
        text: readme_table,
    },
    Generated {
        path: "docs/settings.md",
        begin: Some(BEGIN),
        text: reference_table,
    },
];

/// The line before a generated table in a Markdown file.
pub const BEGIN: &str =
    "<!-- generated from config/src/setting.rs; SQTT_BLESS=1 cargo test -p sqtt-config -->";
/// The line after it.
pub const END: &str = "<!-- end of generated text -->";

/// How to rewrite the generated files, for a failing comparison.
pub const HOW_TO_REGENERATE: &str =
    "edit the rows in config/src/setting.rs, then run `SQTT_BLESS=1 cargo test -p sqtt-config`";

impl Generated {
    /// The file's text with its generated part replaced by what the rows give now; `None`
    /// when the file lacks the marker lines.
    pub fn apply(&self, file: &str) -> Option<String> {
        let text = (self.text)();
        let Some(begin) = self.begin else {
            return Some(text);
        };
        let start = file.find(&format!("{begin}\n"))? + begin.len() + 1;
        let end = start + file[start..].find(&format!("{END}\n"))?;
        Some(format!("{}{text}{}", &file[..start], &file[end..]))
    }
}

const EXAMPLE_HEADER: &str = "\
# sqtt.toml: settings of sqtt-hipcc. Put it in your project (sqtt-hipcc looks in the working
# directory and every directory above it), or point to it with --sqtt-config=PATH or SQTT_CONFIG.
# Every SQTT_* environment variable of the same name wins over this file, and a plugin option
# (-mllvm -sqtt-marker-...) over both. Values shown are the defaults. docs/settings.md has every
# accepted form.
";

/// `sqtt.toml.example`: every key at its default, with its documentation.
pub fn toml_example() -> String {
    let mut out = String::from(EXAMPLE_HEADER);
    // Rows of a table (`scope.cu`) come after the top-level keys (a test parses the result).
    let mut current = None;
    for row in SETTINGS {
        let (table, bare) = match row.key.split_once('.') {
            Some((t, k)) => (Some(t), k),
            None => (None, row.key),
        };
        if let (Some(t), true) = (table, table != current) {
            out.push_str(&format!("\n[{t}]\n"));
        }
        current = table;
        out.push('\n');
        let names = match row.option {
            Some(o) => format!("Variable: {}. Plugin option: -{o}.", row.var),
            None => format!("Variable: {}.", row.var),
        };
        out.push_str(&comment(&format!("{} {names}", row.doc)));
        out.push_str(&toml_line(row, bare));
    }
    out
}

/// `key = default` in TOML (commented out for a setting unset by default).
fn toml_line(row: &Setting, bare: &str) -> String {
    let text = row.default_text();
    let value = match row.toml {
        _ if text.is_empty() => return format!("# {bare} = \"/path/to/{bare}\"\n"),
        Toml::Bool | Toml::BoolOrPath => (text == "1").to_string(),
        Toml::Int | Toml::IntOrString if text.bytes().all(|b| b.is_ascii_digit()) => text,
        Toml::Mask if text == "0xFFFFFFFF" => "-1".into(),
        _ => format!("{text:?}"),
    };
    format!("{bare} = {value}\n")
}

/// `text` as `# ` comment lines of at most 98 characters.
fn comment(text: &str) -> String {
    let mut out = String::new();
    let mut line = String::from("#");
    for word in text.split_whitespace() {
        if line.len() + 1 + word.len() > 98 && line != "#" {
            out.push_str(&line);
            out.push('\n');
            line = String::from("#");
        }
        line.push(' ');
        line.push_str(word);
    }
    out.push_str(&line);
    out.push('\n');
    out
}

/// A default for a table: the variable's text, `-1` for a full mask, a dash for none.
fn default_cell(row: &Setting) -> String {
    match row.default_text() {
        t if t.is_empty() => "(searched)".into(),
        t if row.toml == Toml::Mask && t == "0xFFFFFFFF" => "`-1` (all)".into(),
        t => format!("`{t}`"),
    }
}

fn key_cell(row: &Setting) -> String {
    match row.key.split_once('.') {
        Some((table, key)) => format!("`{key}` in `[{table}]`"),
        None => format!("`{}`", row.key),
    }
}

/// README.md's table: variable, key, values in short and default.
pub fn readme_table() -> String {
    let mut out =
        String::from("| variable | `sqtt.toml` key | values | default |\n|---|---|---|---|\n");
    for row in SETTINGS {
        let values: Vec<String> = row.values.split('|').map(|v| format!("`{v}`")).collect();
        out.push_str(&format!(
            "| `{}` | {} | {} | {} |\n",
            row.var,
            key_cell(row),
            values.join(", "),
            default_cell(row)
        ));
    }
    out
}

/// docs/settings.md's table: every name of a setting, its default, forms and meaning.
pub fn reference_table() -> String {
    let mut out = String::from(
        "| variable | `sqtt.toml` key | plugin option | default | accepted values | what it does |\n\
         |---|---|---|---|---|---|\n",
    );
    for row in SETTINGS {
        let option = match row.option {
            Some(o) => format!("`-{o}=`"),
            None => "(the wrapper's)".into(),
        };
        out.push_str(&format!(
            "| `{}` | {} | {option} | {} | {} | {} |\n",
            row.var,
            key_cell(row),
            default_cell(row),
            row.forms,
            row.doc
        ));
    }
    out
}
