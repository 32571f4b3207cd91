//! A generated rocprofv3-like trace: every wave runs the same small program (so the stacks and
//! names do not depend on the size), in 8 slots of each of 2 shader engines.

use std::io::Write;
use std::path::Path;

#[path = "elf.rs"]
mod elf;

const SES: u32 = 2;
const SLOTS: u32 = 8;
/// Runs of [`PROGRAM`] per wave: 330 records, a wave of typical length (occupancy costs
/// tens of bytes per wave; that is not what this test is about).
const REPEATS: u32 = 30;
/// One wave's program: (marker id, op) with op 2 enter, 1 exit, 3 exit+enter, 0 point.
const PROGRAM: &[(u32, u32)] = &[
    (1, 2),
    (11, 2),
    (21, 0),
    (12, 3),
    (2, 2),
    (21, 0),
    (1, 1),
    (1, 1),
    (13, 2),
    (1, 1),
    (1, 1),
];

/// A trace of `waves_per_slot` waves in each slot, each running [`PROGRAM`] a few times.
pub fn write_trace(root: &Path, waves_per_slot: u32, packed: bool) -> u64 {
    let mut rows = vec!["K:_Z5benchPf@bench.hip:1".to_string()];
    if packed {
        rows.push("M:shader_clock_bits=12;shader_clock_shift=4".into());
    }
    rows.push("F:1:_Z2f1v@bench.hip:1".into());
    rows.push("F:2:_Z2f2v@bench.hip:2".into());
    for i in 11..=13 {
        rows.push(format!("U:{i}:scope_{i}"));
    }
    rows.push("P:21:barrier".into());
    let map = sqtt_markers::Funcmap::parse_str(&rows.join("\n")).unwrap();
    let enc = map.marker_encoding();
    std::fs::write(
        root.join("t_code_object_id_1.out"),
        elf::elf_with_funcmap(&map.to_bytes()),
    )
    .unwrap();
    let ui = root.join("ui_output_t");
    std::fs::create_dir_all(&ui).unwrap();
    let (mut listing, mut occ) = (serde_json::Map::new(), serde_json::Map::new());
    let mut records = 0;
    for se in 0..SES {
        let name = format!("shaderdata_{se}_0.json");
        let mut f = std::io::BufWriter::new(std::fs::File::create(ui.join(&name)).unwrap());
        f.write_all(
            br#"{"records_schema":["time","value","cu","simd","wave_id","flags"],"records":["#,
        )
        .unwrap();
        let mut occ_rows = Vec::new();
        let mut t = 1000u64;
        let mut first = true;
        for _ in 0..waves_per_slot {
            for s in 0..SLOTS {
                let (cu, simd, wave) = (s / 4, s % 4, 0);
                occ_rows.push(serde_json::json!([t, cu, simd, wave, 1, 1, 0, 0, 0, 0, 0]));
                t += 10;
            }
            for _ in 0..REPEATS {
                for &(id, op) in PROGRAM {
                    for s in 0..SLOTS {
                        let (cu, simd) = (s / 4, s % 4);
                        t += 3;
                        let value = if packed {
                            enc.pack(id, op, ((t - 20 + u64::from(simd)) >> 4) as u32)
                        } else {
                            (id << 2) | op
                        };
                        let sep = if first { "" } else { "," };
                        first = false;
                        write!(f, "{sep}[{t},{value},{cu},{simd},0,0]").unwrap();
                        records += 1;
                    }
                }
            }
            for s in 0..SLOTS {
                t += 1;
                occ_rows.push(serde_json::json!([t, s / 4, s % 4, 0, 0, 1, 0, 0, 0, 0, 0]));
            }
            t += 5;
        }
        f.write_all(b"]}").unwrap();
        f.flush().unwrap();
        listing.insert(se.to_string(), serde_json::json!([[name, 1000, 0]]));
        occ.insert(se.to_string(), serde_json::Value::Array(occ_rows));
    }
    occ.insert(
        "dispatches".into(),
        serde_json::json!({"1": "bench(float*)"}),
    );
    std::fs::write(
        ui.join("occupancy.json"),
        serde_json::Value::Object(occ).to_string(),
    )
    .unwrap();
    std::fs::write(
        ui.join("filenames.json"),
        serde_json::json!({"gfxip": if packed { "gfx1200" } else { "gfx942" },
            "shaderdata_filenames": listing})
        .to_string(),
    )
    .unwrap();
    records
}
