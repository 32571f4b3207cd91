//! The compressed bundles the `ccob` fuzz target (and `trace_dir`'s code object) makes from its
//! bytes, on its committed seeds: each reads as the seed means it to, so the fuzzer starts from
//! inputs that reach the bounded decoder's every stage.

#[path = "../fuzz/ccob_input.rs"]
mod ccob_input;

mod support;

fn seed(name: &str) -> Vec<u8> {
    support::seed("ccob", name)
}

#[test]
fn the_seeds_reach_every_stage_of_the_decoder() {
    for name in ["zstd_v3_bundle", "zstd_single_padded", "zlib_v3_bundle"] {
        let cos = sqtt_codeobj::read_bytes(&ccob_input::ccob(&seed(name)), name)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(cos.len(), 1, "{name}");
        assert_eq!(cos[0].arch, "gfx90a", "{name}");
        assert!(cos[0].funcmap.map().is_some(), "{name}");
    }
    let e = sqtt_codeobj::read_bytes(&ccob_input::ccob(&seed("zeros_declared_2g")), "z")
        .unwrap_err()
        .to_string();
    assert!(e.contains("no __CLANG_OFFLOAD_BUNDLE__ magic"), "{e}");
}
