//! docs/architecture.md against the workspace: its table of crates names every member once, and
//! each row's "depends on" column gives exactly the project's crates the member's Cargo.toml
//! depends on (any kind of dependency), plus outside crates that it does depend on.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use sqtt_e2e::toolchain::repo_root;

/// A workspace member: its directory (as the table names it) and its dependencies' names.
struct Member {
    package: String,
    dependencies: BTreeSet<String>,
}

/// The members by directory, from `cargo metadata`.
fn members() -> BTreeMap<String, Member> {
    let root = repo_root();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(&root)
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut members = BTreeMap::new();
    for p in meta["packages"].as_array().unwrap() {
        let manifest = std::path::Path::new(p["manifest_path"].as_str().unwrap());
        let dir = manifest
            .parent()
            .unwrap()
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let dependencies = p["dependencies"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["name"].as_str().unwrap().to_string())
            .collect();
        let package = p["name"].as_str().unwrap().to_string();
        members.insert(
            dir,
            Member {
                package,
                dependencies,
            },
        );
    }
    members
}

/// The rows of the table under "## Crates": the directory of the first column (`` `config/` ``)
/// and the names of the last.
fn table_rows(text: &str) -> Vec<(String, Vec<String>)> {
    let section = text
        .split("\n## Crates")
        .nth(1)
        .expect("docs/architecture.md has a section \"## Crates\"");
    let section = section.split("\n## ").next().unwrap();
    section
        .lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| {
            let cells: Vec<&str> = l.trim_matches('|').split(" | ").map(str::trim).collect();
            let dir = cells[0]
                .split('`')
                .nth(1)
                .and_then(|d| d.strip_suffix('/'))
                .unwrap_or_else(|| panic!("no `dir/` in the first cell of: {l}"))
                .to_string();
            let deps = cells[cells.len() - 1]
                .split(',')
                .map(str::trim)
                .filter(|d| !d.is_empty() && *d != "—")
                .map(String::from)
                .collect();
            (dir, deps)
        })
        .collect()
}

#[test]
fn the_dependency_table_is_the_cargo_manifests() {
    let members = members();
    let text = std::fs::read_to_string(repo_root().join("docs/architecture.md")).unwrap();
    let rows = table_rows(&text);
    let mut problems = Vec::new();
    let named: Vec<&str> = rows.iter().map(|(d, _)| d.as_str()).collect();
    for dir in members.keys() {
        match named.iter().filter(|n| **n == dir).count() {
            1 => {}
            n => problems.push(format!("{dir}/: {n} rows (one expected)")),
        }
    }
    let package_of_dir: BTreeMap<&str, &str> = members
        .iter()
        .map(|(d, m)| (d.as_str(), m.package.as_str()))
        .collect();
    for (dir, listed) in &rows {
        let Some(member) = members.get(dir) else {
            problems.push(format!("{dir}/: a row, but no workspace member there"));
            continue;
        };
        // The project's crates, as the table names them (by directory).
        let wanted: BTreeSet<&str> = package_of_dir
            .iter()
            .filter(|(_, p)| member.dependencies.contains(**p))
            .map(|(d, _)| *d)
            .collect();
        let project: BTreeSet<&str> = listed
            .iter()
            .map(String::as_str)
            .filter(|n| package_of_dir.contains_key(n))
            .collect();
        if project != wanted {
            problems.push(format!(
                "{dir}/: the table says it depends on {project:?}, its Cargo.toml on {wanted:?}"
            ));
        }
        for other in listed
            .iter()
            .filter(|n| !package_of_dir.contains_key(n.as_str()))
        {
            if !member.dependencies.contains(other) {
                problems.push(format!(
                    "{dir}/: the table names {other}, which its Cargo.toml does not depend on"
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "docs/architecture.md's table of crates and the Cargo.toml files disagree:\n{}",
        problems.join("\n")
    );
}

/// The reader of the table sees what is there (so the test above cannot pass on nothing).
#[test]
fn the_table_is_read() {
    let rows = table_rows(
        "# A\n## Crates (x)\n\n| crate | owns | depends on |\n|---|---|---|\n\
         | `gfx/` (sqtt-gfx) | targets | — |\n| `plugin/` (p) | pass | config, llvm-plugin |\n\
         \n## The plugin\n| `no/` | not | this |\n",
    );
    assert_eq!(
        rows,
        [
            ("gfx".to_string(), vec![]),
            (
                "plugin".to_string(),
                vec!["config".to_string(), "llvm-plugin".to_string()]
            ),
        ]
    );
}

/// The plugin's modules in the order the "## The plugin" listing gives them (`lib.rs` ->
/// `lib`, `registration/` -> `registration`; the C++ shim is not a module).
fn plugin_listing(text: &str) -> Vec<String> {
    let section = text
        .split("\n## The plugin")
        .nth(1)
        .expect("docs/architecture.md has a section \"## The plugin\"");
    let block = section
        .split("```\nplugin/src/\n")
        .nth(1)
        .expect("the plugin section lists plugin/src/ in a code block");
    let block = block.split("```").next().unwrap();
    block
        .lines()
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| !name.starts_with("shim/"))
        .map(|name| {
            name.trim_end_matches('/')
                .trim_end_matches(".rs")
                .to_string()
        })
        .collect()
}

/// The modules a plugin source file calls (`crate::name`, `crate::{a, b}`), leaving out its
/// tests and comments.
fn crate_references(source: &str) -> BTreeSet<String> {
    let code = source.split("#[cfg(test)]").next().unwrap();
    let mut out = BTreeSet::new();
    for line in code.lines().map(str::trim).filter(|l| !l.starts_with("//")) {
        for (i, _) in line.match_indices("crate::") {
            let rest = &line[i + "crate::".len()..];
            let names: Vec<&str> = match rest.strip_prefix('{') {
                Some(group) => group.split('}').next().unwrap().split(',').collect(),
                None => vec![rest],
            };
            for n in names {
                let n: String = n
                    .trim()
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if !n.is_empty() {
                    out.insert(n);
                }
            }
        }
    }
    out
}

/// The plugin's listing in docs/architecture.md is its call order: every module is listed once,
/// and a module calls only modules listed below it (so no module calls back up into `lib.rs`,
/// the pipeline or the late phase for a helper, and the modules have no cycle).
#[test]
fn the_plugin_modules_call_only_down() {
    let text = std::fs::read_to_string(repo_root().join("docs/architecture.md")).unwrap();
    let listing = plugin_listing(&text);
    let src = repo_root().join("plugin/src");
    let mut problems = Vec::new();
    let mut files: Vec<(String, std::path::PathBuf)> = Vec::new();
    for e in std::fs::read_dir(&src).unwrap().flatten() {
        let p = e.path();
        let name = p.file_stem().unwrap().to_string_lossy().into_owned();
        if p.is_dir() {
            for f in std::fs::read_dir(&p).unwrap().flatten() {
                files.push((name.clone(), f.path()));
            }
        } else if p.extension().is_some_and(|x| x == "rs") {
            files.push((name, p));
        }
    }
    let modules: BTreeSet<&str> = files.iter().map(|(m, _)| m.as_str()).collect();
    for m in &modules {
        match listing.iter().filter(|l| l == m).count() {
            1 => {}
            n => problems.push(format!("{m}: listed {n} times (once expected)")),
        }
    }
    let place = |m: &str| listing.iter().position(|l| l == m);
    for (module, path) in &files {
        let source = std::fs::read_to_string(path).unwrap();
        for callee in crate_references(&source) {
            if callee == *module {
                continue;
            }
            match (place(module), place(&callee)) {
                (Some(a), Some(b)) if b > a => {}
                (Some(_), Some(_)) => problems.push(format!(
                    "{}: calls {callee}, which is listed above it",
                    path.strip_prefix(&src).unwrap().display()
                )),
                _ => problems.push(format!(
                    "{}: calls crate::{callee}, which is no module of the listing",
                    path.strip_prefix(&src).unwrap().display()
                )),
            }
        }
    }
    assert!(
        problems.is_empty(),
        "docs/architecture.md's plugin listing and plugin/src disagree:\n{}",
        problems.join("\n")
    );
}

/// The readers behind the test above see what is there.
#[test]
fn the_plugin_listing_and_calls_are_read() {
    let listing = plugin_listing(
        "# A\n## The plugin\n\ntext\n\n```\nplugin/src/\n  lib.rs   a\n  registration/  b\n\
         \x20                 more b\n  late.rs  c\n  shim/shim.cpp  d\n```\n## Next\n",
    );
    assert_eq!(listing, ["lib", "registration", "late"]);
    let calls = crate_references(
        "use crate::tags::is_sqtt_instruction;\nuse crate::{early, late};\n\
         // crate::commented\nlet x = crate::size::above(1, t);\n#[cfg(test)]\nuse crate::plan;\n",
    );
    let calls: Vec<&str> = calls.iter().map(String::as_str).collect();
    assert_eq!(calls, ["early", "late", "size", "tags"]);
}
