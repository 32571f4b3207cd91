//! The chunk ordering: the order the shaderdata files of a ui directory are read in.

use crate::input::UiDir;
use crate::shaderdata;

/// The shaderdata files of `ui`, shader engine by shader engine, each engine's chunks in the
/// order of their first records' times: a chunk listed out of place (as plain names carry no
/// begin time) is a whole file of records out of order, which no window of records can put
/// back. When a chunk's first time cannot be read, the engine's chunks keep the order
/// [`UiDir`] gives (by listed begin time, then as listed).
pub(super) fn reading_order(ui: &UiDir) -> Vec<(u32, std::path::PathBuf)> {
    let mut out = Vec::with_capacity(ui.shaderdata.len());
    for chunks in ui.shaderdata.chunk_by(|a, b| a.0 == b.0) {
        let firsts: Option<Vec<u64>> = if chunks.len() > 1 {
            chunks
                .iter()
                .map(|(_, p)| shaderdata::first_time(p))
                .collect()
        } else {
            None
        };
        let mut chunks: Vec<_> = chunks.iter().cloned().enumerate().collect();
        if let Some(t) = firsts {
            // Stable: chunks starting at the same time stay as listed.
            chunks.sort_by_key(|(i, _)| t[*i]);
        }
        out.extend(chunks.into_iter().map(|(_, c)| c));
    }
    out
}
