//! The repository stands alone: no tracked file points into a directory beside the checkout,
//! the real captures the decoder tests read are tracked, and every relative link in a tracked
//! Markdown file leads to a tracked file or directory.
//!
//! The file list comes from `git ls-files`. In an unpacked tarball (no `.git`) these checks are
//! skipped with a note on stderr; in a git checkout a missing or failing `git` is an error.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};
use std::process::Command;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests crate sits in the repository root")
        .to_path_buf()
}

/// The tracked files (paths relative to the root, `/`-separated), or `None` outside a git
/// checkout.
fn tracked_files() -> Option<Vec<String>> {
    let root = repo_root();
    // `.git` is a directory in a clone and a file in a worktree.
    if !root.join(".git").exists() {
        eprintln!(
            "note: {} is not a git checkout (no .git): the tracked-file checks are skipped",
            root.display()
        );
        return None;
    }
    let out = Command::new("git")
        .arg("-C")
        .arg(&root)
        .args(["ls-files", "-z"])
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "{} is a git checkout, but `git ls-files` could not run ({e}): install git to \
                 run this test",
                root.display()
            )
        });
    assert!(
        out.status.success(),
        "`git ls-files` failed in {}: {}",
        root.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let files: Vec<String> = out
        .stdout
        .split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect();
    assert!(
        files.len() > 50,
        "`git ls-files` listed only {} files",
        files.len()
    );
    Some(files)
}

/// The paths that would point outside the repository, built from pieces so that this file does
/// not contain them itself.
fn outside_paths() -> Vec<String> {
    let dir = ["sha", "red"].concat();
    vec![
        format!("../{dir}/"),
        format!("{dir}/spec"),
        format!("{dir}/data"),
        format!("{dir}/notes"),
    ]
}

/// `(line number, line)` of every line of `text` that mentions one of `needles`.
fn lines_mentioning(text: &[u8], needles: &[String]) -> Vec<(usize, String)> {
    let text = String::from_utf8_lossy(text);
    text.lines()
        .enumerate()
        .filter(|(_, line)| needles.iter().any(|n| line.contains(n.as_str())))
        .map(|(i, line)| (i + 1, line.trim().to_string()))
        .collect()
}

#[test]
fn the_outside_path_check_finds_what_it_looks_for() {
    let needles = outside_paths();
    let dir = ["sha", "red"].concat();
    let text = format!(
        "__{dir}__ float tile[64];\nstate {dir} by the driver\nsee ../../{dir}/data/x\n\
         the {dir}/spec/000 text\n"
    );
    let hits = lines_mentioning(text.as_bytes(), &needles);
    assert_eq!(
        hits.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
        vec![3, 4],
        "{hits:?}"
    );
}

#[test]
fn no_tracked_file_points_outside_the_repository() {
    let Some(files) = tracked_files() else { return };
    let root = repo_root();
    let needles = outside_paths();
    let mut found = Vec::new();
    for f in &files {
        // A tracked file deleted in the work tree has nothing to say.
        let Ok(bytes) = std::fs::read(root.join(f)) else {
            continue;
        };
        for (line, text) in lines_mentioning(&bytes, &needles) {
            found.push(format!("{f}:{line}: {text}"));
        }
    }
    assert!(
        found.is_empty(),
        "tracked files refer to a directory outside the repository (copy what is needed into \
         the repository and point there):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_real_captures_are_tracked() {
    let Some(files) = tracked_files() else { return };
    let tracked: BTreeSet<&str> = files.iter().map(String::as_str).collect();
    let dir = "tests/data/sqtt-captures";
    assert!(
        tracked.contains(format!("{dir}/README.md").as_str()),
        "{dir}/README.md is not tracked"
    );
    let metas: Vec<&str> = tracked
        .iter()
        .copied()
        .filter(|f| f.starts_with(dir) && f.ends_with("/meta.json"))
        .collect();
    assert!(
        metas.len() >= 12,
        "only {} meta.json files tracked under {dir}",
        metas.len()
    );
    let mut traces = 0;
    for meta in metas {
        let run = meta.strip_suffix("/meta.json").unwrap();
        let text = std::fs::read_to_string(repo_root().join(meta)).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        for t in v["traces"].as_array().expect("a traces array") {
            let file = format!("{run}/{}", t["file"].as_str().expect("a file name"));
            assert!(tracked.contains(file.as_str()), "{file} is not tracked");
            traces += 1;
        }
        for f in tracked.iter().filter(|f| {
            f.starts_with(&format!("{run}/"))
                && f.ends_with(".co")
                && !f[run.len() + 1..].contains('/')
        }) {
            let bytes = std::fs::read(repo_root().join(f)).unwrap();
            assert!(bytes.starts_with(b"\x7fELF"), "{f} is not an ELF file");
        }
    }
    assert!(traces > 100, "only {traces} traces listed");
}

/// The relative links of a Markdown text, `](target)` with no scheme: `(path, fragment)`, the
/// path empty for a link within the page.
fn relative_links(text: &str) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("](") {
        rest = &rest[at + 2..];
        let Some(end) = rest.find(')') else { break };
        let target = rest[..end].split_whitespace().next().unwrap_or("");
        if !target.is_empty() && !target.contains("://") && !target.starts_with("mailto:") {
            let (path, fragment) = match target.split_once('#') {
                Some((p, f)) => (p, Some(f.to_string())),
                None => (target, None),
            };
            out.push((path.to_string(), fragment));
        }
        rest = &rest[end..];
    }
    out
}

/// The anchors of a Markdown page's headings, as GitHub makes them: lower case, spaces to
/// hyphens, everything but letters, digits, `-` and `_` left out.
fn heading_anchors(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut in_code = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code || !line.starts_with('#') {
            continue;
        }
        let title = line.trim_start_matches('#').trim();
        let anchor: String = title
            .to_lowercase()
            .chars()
            .filter_map(|c| match c {
                ' ' => Some('-'),
                c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                _ => None,
            })
            .collect();
        out.insert(anchor);
    }
    out
}

/// `base/link` with `.` and `..` resolved; `None` when it climbs above the root.
fn resolve(base: &Path, link: &str) -> Option<String> {
    let mut parts: Vec<String> = Vec::new();
    for c in base.join(link).components() {
        match c {
            Component::Normal(p) => parts.push(p.to_string_lossy().into_owned()),
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::CurDir => {}
            _ => return None,
        }
    }
    Some(parts.join("/"))
}

#[test]
fn link_resolution_stays_inside_the_repository() {
    let links = relative_links(
        "[a](docs/format.md#ids) [b](https://x.org) [c](#top) [d](../x.md \"t\") [e](x/)",
    );
    let some = |s: &str| Some(s.to_string());
    assert_eq!(
        links,
        vec![
            ("docs/format.md".to_string(), some("ids")),
            (String::new(), some("top")),
            ("../x.md".to_string(), None),
            ("x/".to_string(), None),
        ]
    );
    assert_eq!(
        resolve(Path::new("docs"), "../README.md").as_deref(),
        Some("README.md")
    );
    assert_eq!(resolve(Path::new("docs"), "../../elsewhere/x.md"), None);
    let anchors = heading_anchors(
        "# 3. The `.sqtt_funcmap` section\n```\n# not a heading\n```\n## Which functions get entry/exit markers\n",
    );
    assert_eq!(
        anchors.into_iter().collect::<Vec<_>>(),
        vec![
            "3-the-sqtt_funcmap-section",
            "which-functions-get-entryexit-markers"
        ]
    );
}

#[test]
fn every_relative_markdown_link_leads_to_a_tracked_path() {
    let Some(files) = tracked_files() else { return };
    let tracked: BTreeSet<&str> = files.iter().map(String::as_str).collect();
    let read = |f: &str| std::fs::read_to_string(repo_root().join(f)).ok();
    let mut broken = Vec::new();
    let mut checked = 0;
    for md in files.iter().filter(|f| f.ends_with(".md")) {
        let Some(text) = read(md) else { continue };
        let base = Path::new(md).parent().unwrap_or(Path::new(""));
        for (link, fragment) in relative_links(&text) {
            checked += 1;
            let target = if link.is_empty() {
                Some(md.clone())
            } else {
                resolve(base, &link).map(|p| p.trim_end_matches('/').to_string())
            };
            let Some(target) = target.filter(|p| {
                tracked.contains(p.as_str())
                    || tracked.iter().any(|f| f.starts_with(&format!("{p}/")))
            }) else {
                broken.push(format!("{md}: ({link}): no such tracked path"));
                continue;
            };
            if let (Some(fragment), true) = (fragment, target.ends_with(".md")) {
                let anchors = read(&target)
                    .map(|t| heading_anchors(&t))
                    .unwrap_or_default();
                if !anchors.contains(&fragment) {
                    broken.push(format!("{md}: ({link}#{fragment}): no such heading"));
                }
            }
        }
    }
    assert!(checked >= 5, "only {checked} relative links found");
    assert!(
        broken.is_empty(),
        "links to nothing in the repository:\n{}",
        broken.join("\n")
    );
}

/// The `docs/<page>.md` names a text mentions (`docs/` preceded by nothing that makes it part of
/// a longer path segment).
fn docs_pages_named(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (at, _) in text.match_indices("docs/") {
        let before = text[..at].chars().next_back();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.') {
            continue;
        }
        let rest = &text[at..];
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || "/_-.".contains(c)))
            .unwrap_or(rest.len());
        let name = rest[..end].trim_end_matches('.');
        if name.ends_with(".md") {
            out.push(name.to_string());
        }
    }
    out
}

#[test]
fn docs_page_names_are_found() {
    assert_eq!(
        docs_pages_named(
            "see docs/format.md. and (docs/settings.md#x), not mydocs/a.md or docs/dir/"
        ),
        vec!["docs/format.md", "docs/settings.md"]
    );
}

#[test]
fn every_docs_page_a_tracked_file_names_exists() {
    let Some(files) = tracked_files() else { return };
    let tracked: BTreeSet<&str> = files.iter().map(String::as_str).collect();
    let mut missing = Vec::new();
    for f in &files {
        let Ok(text) = std::fs::read_to_string(repo_root().join(f)) else {
            continue;
        };
        for page in docs_pages_named(&text) {
            if !tracked.contains(page.as_str()) {
                missing.push(format!("{f}: {page}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "pages named but not in the repository:\n{}",
        missing.join("\n")
    );
}
