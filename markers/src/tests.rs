use crate::encoding::*;
use crate::funcmap::*;

const SPEC_EXAMPLE: &str = "W:64\n\
K:_Z8kernelAi@kernel.hip:80\n\
U:1:load_input\n\
F:3:_Z4syncv@kernel.hip:42\n\
P:5:addr_trace_lds_store@test_auto.cpp:45\n\
R:5:extra_payload_count=66\n\
P:7:addr_trace_load@hip_runtime.h:264 -> kernel.hip:59\n\
R:7:extra_payload_count=130\n\
P:8:barrier";

#[test]
fn parses_every_row_type() {
    let m = Funcmap::parse(format!("{SPEC_EXAMPLE}\0\0").as_bytes()).unwrap();
    assert_eq!(m.wave_size, Some(64));
    assert_eq!(m.entries.len(), 6);
    let k = &m.entries[0];
    assert_eq!(
        (k.kind, k.id, k.name.as_str(), k.source_loc.as_deref()),
        (
            EntryKind::Kernel,
            None,
            "_Z8kernelAi",
            Some("kernel.hip:80")
        )
    );
    let p = m.by_id(7).unwrap();
    assert_eq!(p.name, "addr_trace_load");
    assert_eq!(
        p.source_loc.as_deref(),
        Some("hip_runtime.h:264 -> kernel.hip:59")
    );
    assert!(p.is_address_trace());
    assert_eq!(m.payload_count(5), 66);
    assert_eq!(m.payload_count(8), 0);
    assert!(m.validate().is_empty(), "{:?}", m.validate());
}

#[test]
fn writer_and_parser_agree() {
    let m = Funcmap::parse_str(SPEC_EXAMPLE).unwrap();
    let bytes = m.to_bytes();
    assert_eq!(*bytes.last().unwrap(), 0);
    let back = Funcmap::parse(&bytes).unwrap();
    assert_eq!(back, m);
    let mut packed = m.clone();
    packed.payloads.clear();
    packed.clock_layout = Some(ClockLayout {
        shader_clock_bits: 12,
        shader_clock_shift: 4,
    });
    let text = packed.to_string();
    assert!(text.starts_with("M:shader_clock_bits=12;shader_clock_shift=4\n"));
    assert_eq!(Funcmap::parse_str(&text).unwrap(), packed);
}

#[test]
fn user_names_keep_colons_and_at_signs() {
    let m = Funcmap::parse_str("U:1:phase: load @ tile\nP:2:user@point").unwrap();
    assert_eq!(m.entries[0].name, "phase: load @ tile");
    assert_eq!(m.entries[1].name, "user@point");
    assert_eq!(m.entries[1].source_loc, None);
}

#[test]
fn parse_errors_name_the_row() {
    for bad in [
        "X:1:a",
        "U:x:a",
        "U:1",
        "U:1:",
        "K:",
        "R:1:count=3",
        "W:abc",
        "nocolon",
    ] {
        let err = Funcmap::parse_str(&format!("K:k\n{bad}")).unwrap_err();
        assert_eq!(err.line, 2, "{bad}");
        assert!(err.to_string().contains(bad), "{err}");
    }
}

#[test]
fn validation_finds_collisions_and_bad_rows() {
    let m = Funcmap::parse_str(
        "U:1:a\nP:1:b\nP:0:zero\nR:9:extra_payload_count=1\nR:1:extra_payload_count=1\n\
         R:1:extra_payload_count=2\nW:48\nF:1073741824:wide",
    )
    .unwrap();
    let errs = m.validate();
    assert!(errs
        .iter()
        .any(|e| matches!(e, ValidationError::DuplicateId { id: 1, .. })));
    assert!(errs
        .iter()
        .any(|e| matches!(e, ValidationError::ZeroId { .. })));
    assert!(errs
        .iter()
        .any(|e| matches!(e, ValidationError::PayloadForUnknownId { id: 9 })));
    assert!(errs
        .iter()
        .any(|e| matches!(e, ValidationError::DuplicatePayload { id: 1 })));
    assert!(errs.contains(&ValidationError::BadWaveSize(48)));
    assert!(errs
        .iter()
        .any(|e| matches!(e, ValidationError::IdTooWide { bits: 30, .. })));

    let packed = Funcmap::parse_str(
        "M:shader_clock_bits=12;shader_clock_shift=4\nU:262144:too_wide\nU:262143:fits",
    )
    .unwrap();
    let errs = packed.validate();
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(matches!(
        errs[0],
        ValidationError::IdTooWide {
            id: 262144,
            bits: 18,
            ..
        }
    ));

    let malformed = Funcmap::parse_str("M:shader_clock_bits=12\nU:1:a").unwrap();
    assert!(malformed.clock_layout.is_none());
    assert_eq!(
        malformed.marker_encoding(),
        MarkerEncoding::from_row("shader_clock_bits=12")
    );
    assert!(!malformed.marker_encoding().has_shader_clock());
    assert!(malformed
        .validate()
        .iter()
        .any(|e| matches!(e, ValidationError::MalformedLayout(_))));
}

#[test]
fn encoding_formula() {
    assert_eq!(enter(3), 0b1110);
    assert_eq!(exit_enter(3), 0b1111);
    assert_eq!(point(5), 20);
    assert_eq!(EXIT_VALUE, 1);
    assert!(fits_imm(exit_enter(63)));
    assert!(!fits_imm(enter(64)));
}

#[test]
fn legacy_encoding_masks() {
    let e = MarkerEncoding::legacy();
    assert_eq!(e.marker_id_mask(), 0xFFFF_FFFC);
    assert_eq!(e.packed_shader_clock_mask(), 0);
    assert_eq!(e.shader_clock_source_mask(), 0);
    assert_eq!(e.decode_shader_clock(0xFFFF_FFFF), 0);
    let d = e.decode(0xFFFF_FFFE);
    assert_eq!((d.id, d.enter, d.exit_prev), (0x3FFF_FFFF, true, false));
    // bits = 0 is the no-clock layout.
    assert_eq!(MarkerEncoding::packed(0, 4).marker_id_mask(), 0xFFFF_FFFC);
    assert!(!MarkerEncoding::packed(0, 4).has_shader_clock());
}

#[test]
fn packed_encoding_matches_the_spec_formulas() {
    let e = MarkerEncoding::from_row("shader_clock_bits=12;shader_clock_shift=4");
    assert!(e.is_valid() && e.has_shader_clock());
    assert_eq!(e.marker_id_mask(), 0x000F_FFFC);
    assert_eq!(e.packed_shader_clock_mask(), 0xFFF0_0000);
    assert_eq!(e.shader_clock_source_mask(), 0x0000_FFF0);
    for val in [0u32, 1, 0xABCD_1236, 0xFFFF_FFFF, 0x0010_0007, 0x8000_0002] {
        let clock_bits = 12;
        let exit_prev = val & 1;
        let enter_bit = (val >> 1) & 1;
        let id = (val >> 2) & ((1 << (30 - clock_bits)) - 1);
        let clock = val >> (32 - clock_bits);
        let d = e.decode(val);
        assert_eq!(
            (
                u32::from(d.exit_prev),
                u32::from(d.enter),
                d.id,
                d.packed_clock
            ),
            (exit_prev, enter_bit, id, Some(clock)),
            "{val:#x}"
        );
        assert_eq!(e.pack(d.id, val & 3, clock), val);
    }
    assert_eq!(e.decode(e.pack(5, ENTER, 0xABC)).legacy_value(), enter(5));
}

#[test]
fn decode_with_funcmap_keeps_unregistered_values_legacy() {
    let m = Funcmap::parse_str("M:shader_clock_bits=12;shader_clock_shift=4\nU:5:scope").unwrap();
    let e = m.marker_encoding();
    // A registered packed header.
    let v = e.pack(5, ENTER, 0x123);
    let d = decode_marker_value(v, &m);
    assert_eq!((d.id, d.packed_clock), (5, Some(0x123)));
    // A bare exit with a clock.
    let d = decode_marker_value(e.pack(0, EXIT_PREV, 0xFFF), &m);
    assert!(d.is_exit());
    // An unregistered numeric point keeps its legacy value, even with high bits set.
    let raw = point(0x40_0001);
    let d = decode_marker_value(raw, &m);
    assert_eq!((d.id, d.packed_clock), (0x40_0001, None));
    // Ambiguity: a numeric value whose low packed ID collides with a registered one decodes
    // as packed; decoding with the encoding directly always does.
    let ambiguous = point((1 << 18) | 5);
    assert_eq!(decode_marker_value(ambiguous, &m).id, 5);
    assert_eq!(decode_with_encoding(ambiguous, &e).id, 5);
    // Without M: everything is legacy.
    let legacy = Funcmap::parse_str("U:5:scope").unwrap();
    assert_eq!(decode_marker_value(ambiguous, &legacy).id, (1 << 18) | 5);
}

#[test]
fn concatenated_sections_are_read_together_and_collide() {
    let m =
        Funcmap::parse(b"K:_Z2kaPf\nU:1:a_scope\0K:_Z2kbPf\nP:1:b_point\nU:2:b_scope\0").unwrap();
    assert_eq!(m.kernels().count(), 2);
    let errs = m.validate();
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(matches!(
        &errs[0],
        ValidationError::DuplicateId { id: 1, .. }
    ));
}

/// Printing a parsed funcmap and parsing it again gives the same funcmap (issue 15): malformed
/// `M:` rows were dropped on print, and a name ending in `\r` (from `\r\r\n`) lost it.
#[test]
fn print_then_parse_is_a_round_trip() {
    for text in [
        "M:shader_clock_bits=x\nK:k@a.hip:1\n",
        "M:garbage\nM:shader_clock_bits=12;shader_clock_shift=4\nW:32\nU:1:u\n",
        "K:name\r\r\nF:1:f@a.hip:2\r\r\r\nU:2:user\r\n",
        // An empty location after a `\r` (found by the funcmap fuzz target).
        "K:name\r@\nF:1:f\r\r@\r\nK:k\r@loc\n",
        "W:64\nK:_Z1kv@k.hip:10\nF:1:_Z1fv@k.hip:3\nP:4:barrier\nR:4:extra_payload_count=2\n",
    ] {
        let a = Funcmap::parse_str(text).unwrap();
        let printed = a.to_string();
        let b = Funcmap::parse_str(&printed).unwrap();
        assert_eq!(a, b, "{text:?} printed as {printed:?}");
    }
    let m = Funcmap::parse_str("M:garbage\nK:k\n").unwrap();
    assert!(m.to_string().starts_with("M:garbage\n"), "{m}");
    // R: rows of the old layout come back each after its marker, and the text is then fixed.
    let old =
        Funcmap::parse_str("U:1:a\nP:2:b\nR:2:extra_payload_count=1\nR:1:extra_payload_count=3")
            .unwrap();
    let printed = old.to_string();
    assert_eq!(
        printed,
        "U:1:a\nR:1:extra_payload_count=3\nP:2:b\nR:2:extra_payload_count=1\n"
    );
    assert_eq!(Funcmap::parse_str(&printed).unwrap().to_string(), printed);
    let k = Funcmap::parse_str("K:name\r\r\n").unwrap();
    assert_eq!(k.entries[0].name, "name");
    let k = Funcmap::parse_str("K:name\r@\n").unwrap();
    assert_eq!(k.entries[0].name, "name");
}

/// The same funcmap in the layout this project wrote before and in AMD's (every row ends in a
/// newline, each `R:` row follows its marker row, `W:` comes right before the address-trace
/// points): both read the same.
const OLD_LAYOUT: &str = "W:64\n\
K:_Z1kPi@k.hip:9\n\
F:1:_Z4workPi@k.hip:3\n\
U:2:phase\n\
P:3:sample\n\
P:4:barrier\n\
P:5:addr_trace_load@k.hip:12\n\
R:3:extra_payload_count=1\n\
R:5:extra_payload_count=130";

const AMD_LAYOUT: &str = "F:1:_Z4workPi@k.hip:3\n\
K:_Z1kPi@k.hip:9\n\
U:2:phase\n\
P:3:sample\n\
R:3:extra_payload_count=1\n\
P:4:barrier\n\
W:64\n\
P:5:addr_trace_load@k.hip:12\n\
R:5:extra_payload_count=130\n";

#[test]
fn the_writer_uses_amds_layout() {
    let mut m = Funcmap::parse_str(AMD_LAYOUT).unwrap();
    assert_eq!(m.to_string(), AMD_LAYOUT);
    assert_eq!(m.to_bytes(), format!("{AMD_LAYOUT}\0").into_bytes());
    // With clock packing the M: row leads; with no address trace W: ends the rows.
    m.entries.pop();
    m.payloads.pop();
    m.clock_layout = Some(ClockLayout {
        shader_clock_bits: 12,
        shader_clock_shift: 4,
    });
    m.payloads.clear();
    assert_eq!(
        m.to_string(),
        "M:shader_clock_bits=12;shader_clock_shift=4\n\
         F:1:_Z4workPi@k.hip:3\nK:_Z1kPi@k.hip:9\nU:2:phase\nP:3:sample\nP:4:barrier\nW:64\n"
    );
    // An R: row for an ID no row defines is still written (after the rest), so nothing is lost.
    let orphan = Funcmap::parse_str("K:k\nR:9:extra_payload_count=2").unwrap();
    assert_eq!(orphan.to_string(), "K:k\nR:9:extra_payload_count=2\n");
}

#[test]
fn both_layouts_read_the_same() {
    let old = Funcmap::parse(format!("{OLD_LAYOUT}\0").as_bytes()).unwrap();
    let new = Funcmap::parse(format!("{AMD_LAYOUT}\0").as_bytes()).unwrap();
    let sorted = |m: &Funcmap| {
        let mut e = m.entries.clone();
        e.sort_by_key(|e| (e.id, e.name.clone()));
        let mut p = m.payloads.clone();
        p.sort();
        (e, p, m.wave_size)
    };
    assert_eq!(sorted(&old), sorted(&new));
    assert!(old.validate().is_empty() && new.validate().is_empty());
    assert_eq!(old.payload_count(5), 130);
    assert_eq!(new.payload_count(5), 130);
    // The old layout printed again comes out in the new one, keeping every row.
    let reprinted = Funcmap::parse_str(&old.to_string()).unwrap();
    assert_eq!(sorted(&reprinted), sorted(&old));
    // Two translation units' sections concatenated by a linker, each in the new layout.
    let two = Funcmap::parse(format!("{AMD_LAYOUT}\0K:other\n\0").as_bytes()).unwrap();
    assert_eq!(two.kernels().count(), 2);
}

/// Every spelling of a row kind comes from `EntryKind`, and each reads back to its kind.
#[test]
fn entry_kinds_own_their_spellings() {
    for k in EntryKind::ALL {
        assert_eq!(EntryKind::from_prefix(k.prefix()), Some(k));
        for w in [
            k.prefix().to_string(),
            k.prefix().to_ascii_lowercase().to_string(),
            k.label().to_string(),
            k.json_name().to_string(),
            k.json_name().to_ascii_uppercase(),
        ] {
            assert_eq!(EntryKind::from_word(&w), Some(k), "{w}");
        }
    }
    let words: Vec<_> = EntryKind::ALL
        .iter()
        .map(|k| (k.prefix(), k.label(), k.json_name()))
        .collect();
    assert_eq!(
        words,
        [
            ('F', "func", "function"),
            ('K', "kernel", "kernel"),
            ('U', "user", "user"),
            ('P', "point", "point")
        ]
    );
    for bad in ["W", "R", "M", "", "fun", "points"] {
        assert_eq!(EntryKind::from_word(bad), None, "{bad}");
    }
    assert_eq!(EntryKind::from_prefix('W'), None);
}

/// Typed entries from another writer's columns write and parse back the same.
#[test]
fn typed_entries_round_trip_through_the_one_writer() {
    let e = |k, id, n: &str, loc| Entry::new(k, id, n, loc);
    let map = Funcmap {
        entries: vec![
            e(EntryKind::Function, Some(1), "_Z1fv", Some("a.hip:3")).unwrap(),
            e(EntryKind::Kernel, None, "_Z1kv", Some("a.hip:9")).unwrap(),
            // A user name keeps its `@`; its location column is dropped (user rows have none).
            e(EntryKind::User, Some(2), "phase @ tile", Some("x.hip:1")).unwrap(),
            e(EntryKind::Point, Some(3), "tick", Some("x.hip:1")).unwrap(),
            e(
                EntryKind::Point,
                Some(4),
                "addr_trace_load",
                Some("a.hip:5 -> b.h:2"),
            )
            .unwrap(),
        ],
        wave_size: Some(64),
        payloads: vec![(4, 130)],
        clock_layout: None,
        malformed_layout: None,
    };
    let text = map.to_string();
    assert_eq!(
        text,
        "F:1:_Z1fv@a.hip:3\nK:_Z1kv@a.hip:9\nU:2:phase @ tile\nP:3:tick\nW:64\n\
         P:4:addr_trace_load@a.hip:5 -> b.h:2\nR:4:extra_payload_count=130\n"
    );
    assert_eq!(Funcmap::parse_str(&text).unwrap(), map);
    // What cannot be a row is refused, not written.
    assert!(e(EntryKind::User, Some(1), "two\nlines", None).is_none());
    assert!(e(EntryKind::User, Some(1), "", None).is_none());
    assert!(e(EntryKind::Kernel, Some(1), "k", None).is_none());
    assert!(e(EntryKind::Point, None, "p", None).is_none());
    assert!(e(EntryKind::Function, Some(1), "f", Some("a\nb")).is_none());
    assert_eq!(
        ClockLayout::new(12, 4).unwrap().row_text(),
        "shader_clock_bits=12;shader_clock_shift=4"
    );
    assert!(ClockLayout::new(30, 0).is_none() && ClockLayout::new(12, 21).is_none());
    assert!(ClockLayout::new(1, u32::MAX).is_none());
    assert!(!MarkerEncoding::packed(1, u32::MAX).is_valid());
}

/// The record text the plugin looks for is the one sqtt_m0_record.h writes (its `%N` operands are
/// LLVM's `$N`), and both headers write their numeric markers through it.
#[test]
fn the_header_record_text_is_the_shared_headers() {
    let c_text = crate::HEADER_RECORD_ASM
        .replace('$', "%")
        .replace('\n', "\\n");
    assert!(
        crate::SQTT_M0_RECORD_H.contains(&format!("\"{c_text}\"")),
        "sqtt_m0_record.h does not write {c_text:?}"
    );
    assert!(crate::MARKERS_HPP.contains("#include \"sqtt_m0_record.h\""));
    assert!(crate::AMD_SQTT_MARKER_H.contains("#include \"../sqtt_m0_record.h\""));
    for (name, text) in [
        ("markers.hpp", crate::MARKERS_HPP),
        ("sqtt_marker.h", crate::AMD_SQTT_MARKER_H),
    ] {
        assert!(
            !text.contains("s_ttracedata\""),
            "{name} writes a record of its own"
        );
    }
}
