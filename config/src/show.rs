//! How a value given by the user appears in a message: whole when short, else its beginning and
//! how long it was (a 900 KB variable is not echoed back whole). Every message of the driver and
//! the plugin that echoes a value goes through here.

use std::borrow::Cow;

/// Values of up to this many characters are shown whole.
pub const MAX_SHOWN_CHARS: usize = 200;
/// How many characters of a longer value are shown.
const SHOWN_HEAD_CHARS: usize = 160;

/// `text` as it is when short, else its first characters and `... (N bytes in all)`.
pub fn cut(text: &str) -> Cow<'_, str> {
    match head(text) {
        None => Cow::Borrowed(text),
        Some(h) => Cow::Owned(format!("{h}... ({} bytes in all)", text.len())),
    }
}

/// `value` quoted with Rust's escapes (control characters made visible), cut as [`cut`] does.
pub fn quoted(value: &str) -> String {
    match head(value) {
        None => format!("{value:?}"),
        Some(h) => format!("{h:?}... ({} bytes in all)", value.len()),
    }
}

/// The beginning of a text too long to show whole.
fn head(text: &str) -> Option<&str> {
    let mut ends = text.char_indices().map(|(i, _)| i);
    let cut_at = ends.nth(SHOWN_HEAD_CHARS)?;
    // Longer than the head, but short enough to show whole?
    text.char_indices()
        .nth(MAX_SHOWN_CHARS)
        .map(|_| &text[..cut_at])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_values_whole_long_ones_cut() {
        assert_eq!(cut("0xZZ"), "0xZZ");
        assert_eq!(quoted("a\u{1b}b"), "\"a\\u{1b}b\"");
        let v = "x".repeat(MAX_SHOWN_CHARS);
        assert_eq!(cut(&v), v.as_str());
        let big = "é".repeat(900_000 / 2);
        let shown = cut(&big);
        assert_eq!(
            shown,
            format!("{}... (900000 bytes in all)", "é".repeat(SHOWN_HEAD_CHARS))
        );
        assert_eq!(
            quoted(&big),
            format!(
                "\"{}\"... (900000 bytes in all)",
                "é".repeat(SHOWN_HEAD_CHARS)
            )
        );
    }
}
