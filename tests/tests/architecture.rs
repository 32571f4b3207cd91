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
