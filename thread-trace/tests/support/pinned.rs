//! The pinned expectations of tests/data/amd-decoder (its README.md says how AMD's decoder gave
//! them): per file under tests/data, AMD's status, waves and records, as numbers.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// tests/data, from a crate beside it.
pub fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data")
}

/// What AMD's decoder gave for one file.
pub struct Pinned {
    pub status: u64,
    /// `[cu, simd, slot, start, stop]`, sorted.
    pub waves: Vec<[u64; 5]>,
    /// `[time, value, cu, simd, wave, flags]`, sorted.
    pub records: Vec<[u64; 6]>,
}

fn rows<const N: usize>(v: &serde_json::Value) -> Vec<[u64; N]> {
    v.as_array()
        .expect("an array of rows")
        .iter()
        .map(|r| {
            let r = r.as_array().expect("a row");
            std::array::from_fn(|i| r[i].as_u64().expect("a number"))
        })
        .collect()
}

/// Every pinned file, by its path under tests/data.
pub fn pinned() -> BTreeMap<String, Pinned> {
    let text = std::fs::read_to_string(data_dir().join("amd-decoder/expected.json")).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    doc["files"]
        .as_object()
        .expect("files")
        .iter()
        .map(|(name, f)| {
            (
                name.clone(),
                Pinned {
                    status: f["status"].as_u64().expect("status"),
                    waves: rows(&f["waves"]),
                    records: rows(&f["records"]),
                },
            )
        })
        .collect()
}
