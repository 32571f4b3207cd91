//! Shell-style globs over names (globset's, with `\` quoting): `*` any run, `?` one character,
//! `[abc]` / `[a-z]` / `[!x]` a class, `{a,b}` either, `\` quotes the next character (`\{` for a
//! literal brace, as in `{lambda(int)#1}`). Everything else matches itself; the whole text must
//! match, and `*` also matches `/` (names are no paths).

/// A pattern that cannot be used (globset's message names the pattern and what is wrong).
pub type GlobError = globset::Error;

/// A compiled glob.
#[derive(Debug, Clone)]
pub struct Glob {
    glob: globset::Glob,
    matcher: globset::GlobMatcher,
}

impl PartialEq for Glob {
    fn eq(&self, other: &Glob) -> bool {
        self.glob == other.glob
    }
}

impl Eq for Glob {}

impl Glob {
    pub fn new(pattern: &str) -> Result<Glob, GlobError> {
        let glob = globset::GlobBuilder::new(pattern)
            .literal_separator(false)
            .backslash_escape(true)
            .build()?;
        Ok(Glob {
            matcher: glob.compile_matcher(),
            glob,
        })
    }

    /// Whether the whole of `text` matches.
    pub fn matches(&self, text: &str) -> bool {
        self.matcher.is_match(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        let m = |p: &str, t: &str| Glob::new(p).unwrap().matches(t);
        assert!(m("*", ""));
        assert!(m("a*c", "abbbc"));
        assert!(!m("a*c", "abbb"));
        assert!(m("_Z*kernel*", "_Z6kernelPf"));
        assert!(m("k?rnel", "kernel"));
        assert!(m("[a-c]x", "bx"));
        assert!(!m("[!a-c]x", "bx"));
        assert!(m("a\\*b", "a*b"));
        assert!(!m("a\\*b", "axb"));
        assert!(m("*(float*)", "f(float*)"));
        assert!(m("[]]", "]"));
        assert!(m("[^a]x", "bx") && !m("[^a]x", "ax"));
        // Alternatives, and a quoted brace for the lambdas of demangled names.
        assert!(m("*_{load,store}", "vmem_store") && !m("*_{load,store}", "vmem_atomic"));
        assert!(m("f()::\\{lambda*", "f()::{lambda(int)#1}"));
        assert!(m("a/*", "a/b/c"), "names are no paths: * crosses /");
        assert!(Glob::new("[abc").is_err());
        assert!(Glob::new("abc\\").is_err());
    }
}
