//! The `raw_dir` fuzz target's input as a `rocprofv3 --att` run's directory of raw files: a
//! sequence of entries, each a byte naming one of [`NAMES`] (mod their count), a length (u32,
//! little-endian; cut at the input's end) and that many bytes of the file. Shared by the target
//! and by `tools/tests/raw_capture.rs`, which packs real runs into the committed seeds and checks
//! that they read as the runs do (included by path in both).

use std::path::Path;

/// The files an input can hold: the kernel trace in rocprofv3's three formats, two shader
/// engines' traces of three dispatches, and two code objects (the names `raw_capture.rs`'s runs
/// write).
pub const NAMES: [&str; 11] = [
    "node0/4242_results.json",
    "node0/4242_kernel_trace.csv",
    "node0/4242_results.db",
    "node0/4242_2_shader_engine_0_3.att",
    "node0/4242_2_shader_engine_1_3.att",
    "node0/4242_2_shader_engine_0_5.att",
    "node0/4242_2_shader_engine_1_5.att",
    "node0/4242_2_shader_engine_0_8.att",
    "node0/4242_2_shader_engine_1_8.att",
    "node0/4242_gfx1100_code_object_id_1.out",
    "node0/4242_gfx1100_code_object_id_2.out",
];

/// Writes the files of `data` under `root`, after removing any of [`NAMES`] left there (a
/// later entry of the same name replaces an earlier one).
pub fn unpack(data: &[u8], root: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(root.join("node0"))?;
    for name in NAMES {
        match std::fs::remove_file(root.join(name)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    let mut rest = data;
    while let [which, after @ ..] = rest {
        let mut len = [0u8; 4];
        let n = after.len().min(4);
        len[..n].copy_from_slice(&after[..n]);
        let after = &after[n..];
        let len = (u32::from_le_bytes(len) as usize).min(after.len());
        let name = NAMES[usize::from(*which) % NAMES.len()];
        std::fs::write(root.join(name), &after[..len])?;
        rest = &after[len..];
    }
    Ok(())
}

/// The input that [`unpack`]s to the files of [`NAMES`] under `root`.
#[allow(dead_code)]
pub fn pack(root: &Path) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, name) in NAMES.iter().enumerate() {
        if let Ok(bytes) = std::fs::read(root.join(name)) {
            out.push(i as u8);
            out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
            out.extend_from_slice(&bytes);
        }
    }
    out
}
