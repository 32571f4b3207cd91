//! The tools on what rocprofv3 and att_tool really write (issue 13): normalised JSON, IMM
//! records, code objects by ID, nested layouts, file order, missing code objects.

mod sim;

use std::collections::BTreeMap;

use sqtt_tools::commands;
use sqtt_tools::diag::{kind, NoProgress};
use sqtt_tools::engine::Options;

fn folded_of(dir: &std::path::Path) -> (BTreeMap<String, u64>, commands::FlamegraphOutput) {
    let r = commands::flamegraph(dir, &Options::default(), &NoProgress).unwrap();
    (r.folded.iter().cloned().collect(), r)
}

/// The kernel_c frames (tile, reduce, step) of the packed gfx12 code object.
fn kernel_c(m: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    m.iter()
        .filter(|(k, _)| k.starts_with("_Z8kernel_cv"))
        .map(|(k, v)| (k.clone(), *v))
        .collect()
}

#[test]
fn att_tool_normalised_json_is_not_corrected_again() {
    let mut s = sim::scenario(2);
    s.uis[1].normalised = true;
    let dir = tempfile::tempdir().unwrap();
    let truth = s.write(dir.path());
    let (got, r) = folded_of(dir.path());
    assert!(!kernel_c(&truth.folded).is_empty());
    assert_eq!(kernel_c(&got), kernel_c(&truth.folded));
    assert_eq!(got, truth.folded);
    assert_eq!(
        r.totals.run.corrected, 0,
        "normalised times corrected again"
    );
    assert_eq!(r.diag.count(kind::NORMALISED), 1);

    // The same trace as rocprofv3 wrote it (raw packed headers) is still corrected.
    let mut s = sim::scenario(2);
    s.uis[1].normalised = false;
    let dir = tempfile::tempdir().unwrap();
    let truth = s.write(dir.path());
    let (got, r) = folded_of(dir.path());
    assert_eq!(got, truth.folded);
    assert_eq!(r.totals.run.corrected, truth.corrected_headers);
    assert_eq!(r.diag.count(kind::NORMALISED), 0);
}

#[test]
fn imm_records_are_never_packed_headers() {
    let mut s = sim::scenario(1);
    // IMM points spread over the shader-clock window of the packed code object's waves: read
    // as packed headers with clock 0, one of them would become the domain minimum.
    for w in s.uis[1].waves.iter_mut().filter(|w| w.dispatch == 4) {
        let mut acts = Vec::new();
        for (i, a) in w.acts.drain(..).enumerate() {
            acts.push(a);
            if i % 3 == 1 {
                acts.push(sim::Act::Work(9_000 + 4_111 * i as u64));
                acts.push(sim::Act::ImmPoint(4));
            }
        }
        w.acts = acts;
    }
    let dir = tempfile::tempdir().unwrap();
    let truth = s.write(dir.path());
    let (got, r) = folded_of(dir.path());
    assert_eq!(kernel_c(&got), kernel_c(&truth.folded));
    assert_eq!(got, truth.folded);
    assert_eq!(r.totals.run.corrected, truth.corrected_headers);
}
