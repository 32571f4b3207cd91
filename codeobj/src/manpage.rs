//! The man pages of both binaries (`sqtt-hipcc --sqtt-man`, `sqtt man`): clap_mangen renders a
//! clap command's NAME, SYNOPSIS, DESCRIPTION, OPTIONS and subcommands; the sections it has no
//! source for (EXIT STATUS, ENVIRONMENT, FILES, SEE ALSO) follow, each a list of tagged
//! paragraphs given by the binary.

use std::io::Write;

use clap_mangen::roff::{bold, roman, Roff};

/// A section of tagged paragraphs (`.TP`): a term in bold, then what it means.
pub struct Section {
    pub title: &'static str,
    /// A paragraph before the items.
    pub intro: Option<String>,
    pub items: Vec<(String, String)>,
}

impl Section {
    pub fn new(title: &'static str, items: Vec<(String, String)>) -> Section {
        Section {
            title,
            intro: None,
            items,
        }
    }

    pub fn with_intro(mut self, intro: impl Into<String>) -> Section {
        self.intro = Some(intro.into());
        self
    }
}

/// `(term, meaning)` pairs from string slices.
pub fn items(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(t, d)| (t.to_string(), d.to_string()))
        .collect()
}

/// The page of `cmd` with `sections` after its options and subcommands.
pub fn render(cmd: clap::Command, sections: &[Section], w: &mut dyn Write) -> std::io::Result<()> {
    let man = clap_mangen::Man::new(cmd.clone());
    man.render_title(w)?;
    man.render_name_section(w)?;
    man.render_synopsis_section(w)?;
    man.render_description_section(w)?;
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(w)?;
    }
    if cmd.get_subcommands().any(|s| !s.is_hide_set()) {
        man.render_subcommands_section(w)?;
    }
    if cmd.get_after_help().is_some() || cmd.get_after_long_help().is_some() {
        man.render_extra_section(w)?;
    }
    let mut roff = Roff::new();
    for s in sections {
        roff.control("SH", [s.title]);
        if let Some(intro) = &s.intro {
            roff.control("PP", []).text([roman(intro.as_str())]);
        }
        for (term, meaning) in &s.items {
            roff.control("TP", [])
                .text([bold(term.as_str())])
                .text([roman(meaning.as_str())]);
        }
    }
    roff.to_writer(w)?;
    if cmd.get_version().is_some() {
        man.render_version_section(w)?;
    }
    Ok(())
}
