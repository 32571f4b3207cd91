//! Shell-style globs: `*` any run, `?` one character, `[abc]` / `[a-z]` / `[!x]` a class,
//! `\` quotes the next character. Everything else matches itself; the whole text must match.

/// A pattern that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GlobError {
    #[error("unclosed `[` in pattern {0:?}")]
    UnclosedClass(String),
    #[error("pattern {0:?} ends with a lone `\\`")]
    TrailingEscape(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Lit(char),
    Any,
    Star,
    Class { neg: bool, items: Vec<(char, char)> },
}

/// A compiled glob.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Glob {
    toks: Vec<Tok>,
}

impl Glob {
    pub fn new(pattern: &str) -> Result<Glob, GlobError> {
        let cs: Vec<char> = pattern.chars().collect();
        let mut toks = Vec::new();
        let mut i = 0;
        while i < cs.len() {
            match cs[i] {
                '*' => {
                    if toks.last() != Some(&Tok::Star) {
                        toks.push(Tok::Star)
                    }
                }
                '?' => toks.push(Tok::Any),
                '\\' => {
                    i += 1;
                    let c = *cs
                        .get(i)
                        .ok_or_else(|| GlobError::TrailingEscape(pattern.into()))?;
                    toks.push(Tok::Lit(c));
                }
                '[' => {
                    let mut j = i + 1;
                    let neg = matches!(cs.get(j), Some('!') | Some('^'));
                    if neg {
                        j += 1;
                    }
                    let mut items = Vec::new();
                    let mut first = true;
                    loop {
                        let c = *cs
                            .get(j)
                            .ok_or_else(|| GlobError::UnclosedClass(pattern.into()))?;
                        if c == ']' && !first {
                            break;
                        }
                        first = false;
                        if cs.get(j + 1) == Some(&'-') && cs.get(j + 2).is_some_and(|c| *c != ']') {
                            items.push((c, cs[j + 2]));
                            j += 3;
                        } else {
                            items.push((c, c));
                            j += 1;
                        }
                    }
                    toks.push(Tok::Class { neg, items });
                    i = j;
                }
                c => toks.push(Tok::Lit(c)),
            }
            i += 1;
        }
        Ok(Glob { toks })
    }

    /// Whether the whole of `text` matches.
    pub fn matches(&self, text: &str) -> bool {
        let t: Vec<char> = text.chars().collect();
        // Iterative matcher with one backtrack point per star (classic wildcard algorithm).
        let (mut p, mut s) = (0usize, 0usize);
        let mut star: Option<(usize, usize)> = None;
        while s < t.len() {
            let ok = match self.toks.get(p) {
                Some(Tok::Lit(c)) => *c == t[s],
                Some(Tok::Any) => true,
                Some(Tok::Class { neg, items }) => {
                    items.iter().any(|(a, b)| *a <= t[s] && t[s] <= *b) != *neg
                }
                Some(Tok::Star) => {
                    star = Some((p, s));
                    p += 1;
                    continue;
                }
                None => false,
            };
            if ok {
                p += 1;
                s += 1;
            } else if let Some((sp, ss)) = star {
                p = sp + 1;
                s = ss + 1;
                star = Some((sp, ss + 1));
            } else {
                return false;
            }
        }
        self.toks[p..].iter().all(|t| *t == Tok::Star)
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
        assert!(Glob::new("[abc").is_err());
        assert!(Glob::new("abc\\").is_err());
    }
}
