use super::*;
use std::collections::HashMap;

fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |k| map.get(k).cloned()
}

fn p() -> PathBuf {
    PathBuf::from("/x/sqtt.toml")
}

#[test]
fn defaults_match_the_spec() {
    let s = Settings::from_env(env(&[])).unwrap();
    assert!(s.enabled);
    assert_eq!(s.instrument_functions, FunctionThreshold::Off);
    assert!(!s.instrument_barriers);
    assert_eq!(s.instrument_memory, None);
    assert_eq!(s.mem_barrier, MemBarrier::Fence);
    assert!(!s.trace_addresses.is_on());
    assert_eq!((s.shader_clock_bits, s.shader_clock_shift), (0, 4));
    assert_eq!(
        s.scope,
        Scope {
            wave: 0xFFFF_FFFF,
            simd: 0xF,
            cu: 0x3,
            wg: 0xFFFF_FFFF
        }
    );
}

#[test]
fn env_values_in_every_accepted_form() {
    let s = Settings::from_env(env(&[
        ("SQTT_INSTRUMENT_FUNCTIONS", "cost:50"),
        ("SQTT_INSTRUMENT_BARRIERS", "1"),
        ("SQTT_INSTRUMENT_MEMORY", "2:5"),
        ("SQTT_MEM_BARRIER", "clobber"),
        ("SQTT_SCOPE_CU", "0x1"),
        ("SQTT_SCOPE_SIMD", "1"),
        ("SQTT_SCOPE_WAVE", "-1"),
        ("SQTT_SCOPE_WG", "ff"),
    ]))
    .unwrap();
    assert_eq!(s.instrument_functions, FunctionThreshold::Cost(50));
    assert!(s.instrument_barriers);
    assert_eq!(
        s.instrument_memory,
        Some(MemoryGrouping {
            ops_per_marker: 2,
            max_gap: 5
        })
    );
    assert_eq!(s.mem_barrier, MemBarrier::Asm);
    assert_eq!(s.scope.cu, 1);
    assert_eq!(s.scope.simd, 1);
    assert_eq!(s.scope.wave, u32::MAX);
    assert_eq!(s.scope.wg, 0xFF);
    for (text, want) in [
        ("none", MemBarrier::None),
        ("0", MemBarrier::None),
        ("off", MemBarrier::None),
        ("asm", MemBarrier::Asm),
        ("1", MemBarrier::Asm),
        ("compiler", MemBarrier::Asm),
        ("fence", MemBarrier::Fence),
        ("2", MemBarrier::Fence),
        ("on", MemBarrier::Fence),
        ("hw", MemBarrier::Fence),
    ] {
        let s = Settings::from_env(env(&[("SQTT_MEM_BARRIER", text)])).unwrap();
        assert_eq!(s.mem_barrier, want, "{text}");
    }
    let s = Settings::from_env(env(&[("SQTT_INSTRUMENT_FUNCTIONS", "10")])).unwrap();
    assert_eq!(s.instrument_functions, FunctionThreshold::Count(10));
    let s = Settings::from_env(env(&[("SQTT_INSTRUMENT_FUNCTIONS", "0")])).unwrap();
    assert_eq!(s.instrument_functions, FunctionThreshold::Off);
    let s = Settings::from_env(env(&[("SQTT_TRACE_ADDRESSES", "lds, memory")])).unwrap();
    assert!(s.trace_addresses.memory && s.trace_addresses.lds);
}

#[test]
fn bad_values_name_the_variable_value_and_forms() {
    for (var, value, form) in [
        ("SQTT_INSTRUMENT_MEMORY", "2", "N:M"),
        ("SQTT_INSTRUMENT_MEMORY", "0:5", "N:M"),
        ("SQTT_INSTRUMENT_MEMORY", "a:b", "N:M"),
        ("SQTT_INSTRUMENT_FUNCTIONS", "cost:", "cost:N"),
        ("SQTT_INSTRUMENT_FUNCTIONS", "-3", "cost:N"),
        ("SQTT_INSTRUMENT_BARRIERS", "maybe", "true"),
        ("SQTT_MEM_BARRIER", "strong", "fence"),
        ("SQTT_SCOPE_CU", "0xZZ", "hex bitmask"),
        ("SQTT_SCOPE_SIMD", "0x123456789", "hex bitmask"),
        ("SQTT_TRACE_ADDRESSES", "global", "memory,lds"),
        ("SQTT_SHADER_CLOCK_BITS", "-1", "unsigned integer"),
        ("SQTT_SHADER_CLOCK_BITS", "99", "unsigned integer"),
        ("SQTT_SHADER_CLOCK_SHIFT", "x", "unsigned integer"),
    ] {
        let err = Settings::from_env(env(&[(var, value)])).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains(var), "{msg}");
        assert!(msg.contains(&format!("{value:?}")), "{msg}");
        assert!(msg.contains(form), "{msg}");
    }
}

#[test]
fn conflicts_are_errors() {
    let err = Settings::from_env(env(&[
        ("SQTT_TRACE_ADDRESSES", "memory"),
        ("SQTT_INSTRUMENT_MEMORY", "2:5"),
    ]))
    .unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("SQTT_TRACE_ADDRESSES=memory"), "{msg}");
    assert!(msg.contains("SQTT_INSTRUMENT_MEMORY=2:5"), "{msg}");
    assert!(msg.contains("mutually exclusive"), "{msg}");
    assert!(
        matches!(err, ConfigError::MutuallyExclusive { .. }),
        "{err:?}"
    );

    let err = Settings::from_env(env(&[
        ("SQTT_TRACE_ADDRESSES", "lds"),
        ("SQTT_SHADER_CLOCK_BITS", "12"),
    ]))
    .unwrap_err();
    assert!(err.to_string().contains("SQTT_SHADER_CLOCK_BITS=12"));

    let err = Settings::from_env(env(&[
        ("SQTT_SHADER_CLOCK_BITS", "20"),
        ("SQTT_SHADER_CLOCK_SHIFT", "20"),
    ]))
    .unwrap_err();
    assert!(matches!(err, ConfigError::Conflict { .. }));
}

#[test]
fn toml_file_and_env_precedence() {
    let text = r#"
        enabled = true
        instrument_functions = "cost:50"
        instrument_barriers = true
        instrument_memory = "2:5"
        mem_barrier = "none"
        shader_clock_shift = 6
        [scope]
        cu = "0x1"
        simd = 1
        wave = -1
    "#;
    let s = Settings::from_toml_str(text, &p()).unwrap();
    assert_eq!(s.instrument_functions, FunctionThreshold::Cost(50));
    assert!(s.instrument_barriers);
    assert_eq!(s.mem_barrier, MemBarrier::None);
    assert_eq!(s.scope.cu, 1);
    assert_eq!(s.scope.simd, 1);
    assert_eq!(s.shader_clock_shift, 6);

    let dir = tempfile::Builder::new()
        .prefix("sqtt-config-test-")
        .tempdir()
        .unwrap()
        .keep();
    std::fs::create_dir_all(dir.join("a/b")).unwrap();
    std::fs::write(dir.join(CONFIG_FILE_NAME), text).unwrap();
    let found = locate_config(None, &dir.join("a/b"), &env(&[]));
    assert_eq!(found.path(), Some(dir.join(CONFIG_FILE_NAME).as_path()));
    let s = Settings::located(
        &found,
        env(&[("SQTT_MEM_BARRIER", "fence"), ("SQTT_SCOPE_CU", "")]),
        |_| None,
    )
    .unwrap();
    assert_eq!(s.mem_barrier, MemBarrier::Fence, "variable wins over file");
    assert_eq!(s.scope.cu, 1, "an empty variable counts as unset");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn toml_errors() {
    let err = Settings::from_toml_str("instrument_barrier = true", &p()).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("unknown key `instrument_barrier`"), "{msg}");
    assert!(msg.contains("did you mean `instrument_barriers`"), "{msg}");

    let err = Settings::from_toml_str("[scope]\nsimds = 1", &p()).unwrap_err();
    assert!(err.to_string().contains("`scope.simds`"), "{err}");

    let err = Settings::from_toml_str("instrument_barriers = \"yes please\"", &p()).unwrap_err();
    assert!(err.to_string().contains("instrument_barriers"), "{err}");

    let err = Settings::from_toml_str("mem_barrier = 3", &p()).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("`mem_barrier`") && msg.contains("fence"),
        "{msg}"
    );

    let err = Settings::from_toml_str("instrument_memory = \"2\"", &p()).unwrap_err();
    assert!(err.to_string().contains("\"2\""), "{err}");

    let err = Settings::from_toml_str("enabled = = 1", &p()).unwrap_err();
    assert!(matches!(err, ConfigError::Syntax { .. }));

    let err = Settings::load(Some(Path::new("/nonexistent/sqtt.toml")), env(&[])).unwrap_err();
    assert!(matches!(err, ConfigError::Unreadable { .. }));
}

#[test]
fn to_env_round_trips() {
    let s = Settings::from_env(env(&[
        ("SQTT_INSTRUMENT_FUNCTIONS", "cost:7"),
        ("SQTT_INSTRUMENT_BARRIERS", "on"),
        ("SQTT_TRACE_ADDRESSES", "memory,lds"),
        ("SQTT_MEM_BARRIER", "asm"),
        ("SQTT_SCOPE_CU", "-1"),
        ("SQTT_SCOPE_WG", "0x5"),
    ]))
    .unwrap();
    let vars: HashMap<String, String> = s
        .to_env()
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    let back = Settings::from_env(|k| vars.get(k).cloned()).unwrap();
    assert_eq!(back, s);
}

#[test]
fn scope_filter_activity() {
    assert!(!Scope::filters(0xF, 2), "4 SIMDs, all selected");
    assert!(Scope::filters(0x1, 2));
    assert!(Scope::filters(0x3, 4), "CU 0-1 of 16");
    assert!(!Scope::filters(u32::MAX, 5));
    assert!(Scope::filters(0xFFFF, 5));
    assert!(!Scope::filters(0xFFFF, 4));
}

/// The generated example (the checked-in file is compared with it below) sets every key to its
/// default.
#[test]
fn the_example_file_holds_every_key_at_its_default() {
    let text = docs::toml_example();
    let s = Settings::from_toml_str(&text, Path::new("sqtt.toml.example")).unwrap();
    assert_eq!(s, Settings::default());
    for key in SETTINGS.iter().map(|row| row.key) {
        let bare = key.trim_start_matches("scope.");
        assert!(
            text.lines()
                .any(|l| l.trim_start_matches("# ").starts_with(&format!("{bare} ="))),
            "sqtt.toml.example lacks {key}"
        );
    }
}

#[test]
fn only_a_regular_file_of_bounded_size_is_read_as_configuration() {
    let dir = tempfile::Builder::new()
        .prefix("sqtt-config-kinds-")
        .tempdir()
        .unwrap()
        .keep();
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("fifo.toml");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let zero = crate::device::char_device(&dir);
    let big = dir.join("big.toml");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(discover::MAX_CONFIG_BYTES + 1)
        .unwrap();
    for (path, why) in [
        // Nobody writes to the FIFO: this returns only because it is refused before reading.
        (
            fifo.clone(),
            "it is a FIFO (named pipe), not a regular file",
        ),
        (dir.clone(), "it is a directory, not a regular file"),
        (zero.clone(), "it is a character device, not a regular file"),
        (
            PathBuf::from("/proc/self/environ"),
            "it is a file of the /proc pseudo file system, not a regular file",
        ),
        (
            big.clone(),
            "it is 1048577 bytes; a configuration file may have at most 1048576 bytes",
        ),
    ] {
        let err = Settings::load(Some(&path), env(&[])).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("cannot read configuration file {}: {why}", path.display())
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn syntax_errors_give_line_and_column() {
    let err =
        Settings::from_toml_str("enabled = true\n\ninstrument_barriers = \n", &p()).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("/x/sqtt.toml is not valid TOML at line 3, column 23: "),
        "{err}"
    );
    let err = Settings::from_toml_str("[scope]\ncu = 0x1 2\n", &p()).unwrap_err();
    match err {
        ConfigError::Syntax { line, column, .. } => assert_eq!((line, column), (2, 10)),
        other => panic!("{other}"),
    }
}

#[test]
fn a_conflict_from_the_file_names_its_keys() {
    let text = "trace_addresses = \"memory\"\ninstrument_memory = \"2:5\"\n";
    let msg = Settings::from_toml_str(text, &p()).unwrap_err().to_string();
    assert!(
        msg.starts_with(
            "`trace_addresses = memory` in /x/sqtt.toml and `instrument_memory = 2:5` in \
             /x/sqtt.toml are mutually exclusive"
        ),
        "{msg}"
    );
    assert!(!msg.contains("SQTT_"), "{msg}");
    // Through load: the file's key, and the variable that replaced the other one.
    let dir = tempfile::Builder::new()
        .prefix("sqtt-config-conflict-")
        .tempdir()
        .unwrap()
        .keep();
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("sqtt.toml");
    std::fs::write(&path, "trace_addresses = \"lds\"\nshader_clock_bits = 8\n").unwrap();
    let msg = Settings::load(Some(&path), env(&[("SQTT_SHADER_CLOCK_BITS", "12")]))
        .unwrap_err()
        .to_string();
    assert!(
        msg.starts_with(&format!(
            "SQTT_SHADER_CLOCK_BITS=12 and `trace_addresses = lds` in {} cannot be combined",
            path.display()
        )),
        "{msg}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The acceptance rules of docs/driver.md ("Values: the rules"), each the same for a variable
/// and its sqtt.toml key.
#[test]
fn acceptance_rules_are_the_same_for_variables_and_keys() {
    let both = |var: &str, key: &str, value: &str| {
        let e = Settings::from_env(env(&[(var, value)]));
        let t = Settings::from_toml_str(&format!("{key} = {value:?}"), &p());
        match (e, t) {
            (Ok(a), Ok(b)) => {
                assert_eq!(a, b, "{var}={value:?} and {key} differ");
                Ok(a)
            }
            (Err(_), Err(b)) => Err(b),
            (e, t) => panic!("{var}={value:?}: {e:?}, but {key}: {t:?}"),
        }
    };
    // Spaces around a value and around `:` and `,` are ignored; words are case-insensitive.
    for v in ["cost:5", "cost: 5", "cost :5", " COST : 5 "] {
        let s = both("SQTT_INSTRUMENT_FUNCTIONS", "instrument_functions", v).unwrap();
        assert_eq!(s.instrument_functions, FunctionThreshold::Cost(5), "{v:?}");
    }
    for v in ["2:3", "2 : 3", " 2:3 "] {
        let s = both("SQTT_INSTRUMENT_MEMORY", "instrument_memory", v).unwrap();
        assert_eq!(s.instrument_memory.unwrap().ops_per_marker, 2, "{v:?}");
        assert_eq!(s.instrument_memory.unwrap().max_gap, 3, "{v:?}");
    }
    // Spaces inside a number are not.
    for v in ["co st:5", "cost:5 0", "2:3 4"] {
        let key = if v.starts_with('2') {
            "instrument_memory"
        } else {
            "instrument_functions"
        };
        let var = format!("SQTT_{}", key.to_ascii_uppercase());
        assert!(both(&var, key, v).is_err(), "{v:?}");
    }
    // A list names each item once or more: duplicates are accepted (it is a set).
    for v in ["memory,memory", "memory, memory", "lds,memory,lds"] {
        let s = both("SQTT_TRACE_ADDRESSES", "trace_addresses", v).unwrap();
        assert!(s.trace_addresses.memory, "{v:?}");
        assert_eq!(s.trace_addresses.lds, v.contains("lds"), "{v:?}");
    }
    // Empty items are not.
    assert!(both("SQTT_TRACE_ADDRESSES", "trace_addresses", "memory,,lds").is_err());
    // Switches take the same words in both places.
    for (v, on) in [("yes", true), ("no", false), ("On", true), ("0", false)] {
        let s = both("SQTT_ENABLED", "enabled", v).unwrap();
        assert_eq!(s.enabled, on, "{v:?}");
    }
    let err = both("SQTT_ENABLED", "enabled", "maybe").unwrap_err();
    assert!(err.to_string().contains("key `enabled`"), "{err}");
    assert!(err.to_string().contains("yes or no"), "{err}");
}

#[test]
fn empty_values_unset_a_variable_and_are_refused_in_the_file() {
    let s = Settings::from_env(env(&[
        ("SQTT_INSTRUMENT_FUNCTIONS", ""),
        ("SQTT_SCOPE_CU", "  "),
        ("SQTT_HIPCC", ""),
    ]))
    .unwrap();
    assert_eq!(s, Settings::default());
    for key in [
        "instrument_functions",
        "hipcc",
        "enabled",
        "trace_addresses",
    ] {
        let err = Settings::from_toml_str(&format!("{key} = \" \""), &p()).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.starts_with(&format!("key `{key}` in /x/sqtt.toml")),
            "{msg}"
        );
        assert!(msg.contains("remove the key for the default"), "{msg}");
    }
}

#[test]
fn a_zero_scope_mask_warns_that_no_marker_can_be_emitted() {
    assert!(Settings::default().warnings().is_empty());
    let s = Settings::from_env(env(&[("SQTT_SCOPE_CU", "0")])).unwrap();
    assert_eq!(
        s.warnings(),
        vec![
            "SQTT_SCOPE_CU (`scope.cu`) is 0: it selects no cu, so no marker can ever be \
             emitted; use -1 for all"
                .to_string()
        ]
    );
    let s = Settings::from_toml_str("[scope]\nwg = 0\nsimd = \"0x0\"", &p()).unwrap();
    assert_eq!(s.warnings().len(), 2);
    // Nothing to warn about when instrumentation is off.
    let s = Settings::from_env(env(&[("SQTT_SCOPE_CU", "0"), ("SQTT_ENABLED", "0")])).unwrap();
    assert!(s.warnings().is_empty());
}

#[test]
fn every_instrumentation_setting_has_a_plugin_option_named_as_amds_pass_names_it() {
    assert_eq!(
        setting::instrumentation().count(),
        Settings::default().to_plugin_options().len()
    );
    for row in SETTINGS {
        // sqtt-marker-<toml key with `_` and `.` as `-`>: AMD's spelling (mem-barrier, scope-cu).
        let expected = format!("sqtt-marker-{}", row.key.replace(['_', '.'], "-"));
        match row.option {
            Some(o) => assert_eq!(o, expected),
            // The wrapper's own settings: the plugin does not act on them.
            None => assert!(
                ["enabled", "hipcc", "verbose", "ccache"].contains(&row.key),
                "{row:?}"
            ),
        }
    }
    assert_eq!(setting::SCOPE_CU.option, Some("sqtt-marker-scope-cu"));
    assert_eq!(setting::ENABLED.option, None);
}

#[test]
fn plugin_options_override_the_file_and_the_environment() {
    let dir = tempfile::Builder::new()
        .prefix("sqtt-config-options-")
        .tempdir()
        .unwrap()
        .keep();
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(CONFIG_FILE_NAME);
    std::fs::write(&file, "mem_barrier = \"asm\"\ninstrument_barriers = true\n").unwrap();
    let opts = env(&[
        ("sqtt-marker-mem-barrier", "none"),
        ("sqtt-marker-scope-cu", "-1"),
        // Empty: not given.
        ("sqtt-marker-instrument-functions", ""),
    ]);
    let s = Settings::load_with_options(
        Some(&file),
        env(&[("SQTT_SCOPE_CU", "0x1"), ("SQTT_INSTRUMENT_FUNCTIONS", "7")]),
        opts,
    )
    .unwrap();
    assert_eq!(s.mem_barrier, MemBarrier::None);
    assert_eq!(s.scope.cu, u32::MAX);
    assert!(
        s.instrument_barriers,
        "the file's value stays where no option is given"
    );
    assert_eq!(s.instrument_functions, FunctionThreshold::Count(7));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_options_of_a_settings_value_give_it_back() {
    let s = Settings::from_env(env(&[
        ("SQTT_INSTRUMENT_FUNCTIONS", "cost:50"),
        ("SQTT_INSTRUMENT_MEMORY", "2:5"),
        ("SQTT_MEM_BARRIER", "asm"),
        ("SQTT_SHADER_CLOCK_BITS", "8"),
        ("SQTT_SCOPE_SIMD", "0x3"),
    ]))
    .unwrap();
    let opts = s.to_plugin_options();
    assert!(
        opts.contains(&"-sqtt-marker-instrument-memory=2:5".to_string()),
        "{opts:?}"
    );
    let pairs: Vec<(String, String)> = opts
        .iter()
        .map(|o| {
            let (k, v) = o.trim_start_matches('-').split_once('=').unwrap();
            (k.to_string(), v.to_string())
        })
        .collect();
    let map: HashMap<String, String> = pairs.into_iter().collect();
    // Over a contrary environment: the options alone say what is built.
    let back = Settings::load_with_options(
        None,
        env(&[
            ("SQTT_MEM_BARRIER", "fence"),
            ("SQTT_INSTRUMENT_MEMORY", "1:0"),
        ]),
        move |k| map.get(k).cloned(),
    )
    .unwrap();
    assert_eq!(back, s);
}

#[test]
fn a_bad_option_value_names_the_option_and_a_conflict_names_it_too() {
    let e = Settings::load_with_options(None, env(&[]), env(&[("sqtt-marker-mem-barrier", "x")]))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("plugin option -sqtt-marker-mem-barrier")
            && e.contains("\"x\"")
            && e.contains("none, asm or fence"),
        "{e}"
    );
    let e = Settings::load_with_options(
        None,
        env(&[("SQTT_INSTRUMENT_MEMORY", "2:5")]),
        env(&[("sqtt-marker-trace-addresses", "memory")]),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("-sqtt-marker-trace-addresses=memory")
            && e.contains("SQTT_INSTRUMENT_MEMORY=2:5")
            && e.contains("mutually exclusive"),
        "{e}"
    );
}

#[test]
fn every_row_is_named_once_and_reads_back_its_own_text() {
    use std::collections::HashSet;
    let mut names = HashSet::new();
    for row in SETTINGS {
        for name in [Some(row.var), Some(row.key), row.option]
            .into_iter()
            .flatten()
        {
            assert!(names.insert(name), "{name} named twice");
        }
        assert_eq!(
            row.var,
            format!("SQTT_{}", row.key.replace('.', "_").to_ascii_uppercase())
        );
        assert_eq!(setting::by_var(row.var).map(|r| r.key), Some(row.key));
        // `get` is what `set` reads: the default's text gives the default back.
        let text = row.default_text();
        let mut s = Settings::default();
        if !text.is_empty() {
            assert_eq!((row.set)(&mut s, &text), Some(()), "{row:?}: {text}");
        }
        assert_eq!(s, Settings::default(), "{row:?}");
        assert!(!row.forms.is_empty() && !row.doc.is_empty() && !row.values.is_empty());
    }
    assert!(setting::SHADER_CLOCK_BITS
        .forms
        .ends_with(&format!("to {MAX_SHADER_CLOCK_BITS}")));
    assert_eq!(
        Settings::default().shader_clock_shift,
        DEFAULT_SHADER_CLOCK_SHIFT
    );
}

/// A value of each row's TOML type other than the accepted ones is an error naming the key,
/// never a panic; so is every variable with a value no row accepts.
#[test]
fn every_row_refuses_bad_values_by_name_in_every_place() {
    for row in SETTINGS {
        // Any text is a path.
        if !matches!(row.toml, setting::Toml::Path | setting::Toml::BoolOrPath) {
            let err = Settings::from_env(env(&[(row.var, "\u{1}bad")])).unwrap_err();
            assert!(err.to_string().contains(row.var), "{err}");
            assert!(err.to_string().contains(row.forms), "{err}");
        }
        let (table, bare) = row
            .key
            .split_once('.')
            .map_or((None, row.key), |(t, k)| (Some(t), k));
        let text = match table {
            Some(t) => format!("[{t}]\n{bare} = {{ x = 1 }}\n"),
            None => format!("{bare} = {{ x = 1 }}\n"),
        };
        let err = Settings::from_toml_str(&text, &p()).unwrap_err();
        assert!(
            err.to_string().contains(&format!("key `{}`", row.key)),
            "{err}"
        );
        if let Some(o) = row.option {
            let err =
                Settings::load_with_options(None, env(&[]), env(&[(o, "\u{1}bad")])).unwrap_err();
            assert!(
                err.to_string().contains(&format!("plugin option -{o}")),
                "{err}"
            );
        }
    }
}

/// sqtt.toml.example and the settings tables of README.md and docs/settings.md are generated
/// from the rows; `SQTT_BLESS=1` rewrites them.
#[test]
fn the_generated_files_match_the_rows() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let bless = std::env::var("SQTT_BLESS").is_ok_and(|v| v == "1");
    for g in docs::GENERATED {
        let path = root.join(g.path);
        let file = std::fs::read_to_string(&path).unwrap();
        let want = g.apply(&file).unwrap_or_else(|| {
            panic!(
                "{} lacks the lines {:?} and {:?} around its generated table",
                g.path,
                docs::BEGIN,
                docs::END
            )
        });
        if bless {
            if want != file {
                std::fs::write(&path, &want).unwrap();
            }
            continue;
        }
        assert!(
            want == file,
            "{} is not what config/src/setting.rs generates; {}",
            g.path,
            docs::HOW_TO_REGENERATE
        );
    }
}

#[test]
fn a_generated_table_replaces_only_the_text_between_its_marker_lines() {
    let g = &docs::GENERATED[1];
    let file = format!("intro\n{}\nstale\n{}\nafter\n", docs::BEGIN, docs::END);
    let out = g.apply(&file).unwrap();
    assert_eq!(
        out,
        format!(
            "intro\n{}\n{}{}\nafter\n",
            docs::BEGIN,
            docs::readme_table(),
            docs::END
        )
    );
    assert_eq!(
        g.apply(&out).as_deref(),
        Some(out.as_str()),
        "applying twice changes nothing"
    );
    assert!(g.apply("no markers\n").is_none());
    assert!(g.apply(&format!("{}\nno end\n", docs::BEGIN)).is_none());
}

/// `ccache`: a switch (the ccache on PATH) or a path, in the variable and the file alike.
#[test]
fn ccache_is_a_switch_or_a_path() {
    let from_env = |v: &str| {
        Settings::from_env(env(&[("SQTT_CCACHE", v)]))
            .unwrap()
            .ccache
    };
    assert_eq!(from_env("1"), Some(PathBuf::from("ccache")));
    assert_eq!(from_env(" yes "), Some(PathBuf::from("ccache")));
    assert_eq!(from_env("off"), None);
    assert_eq!(
        from_env("/opt/cc/bin/ccache"),
        Some(PathBuf::from("/opt/cc/bin/ccache"))
    );
    assert_eq!(Settings::default().ccache, None);
    let from_toml = |t: &str| Settings::from_toml_str(t, &p());
    assert_eq!(
        from_toml("ccache = true\n").unwrap().ccache,
        Some(PathBuf::from("ccache"))
    );
    assert_eq!(from_toml("ccache = 0\n").unwrap().ccache, None);
    assert_eq!(
        from_toml("ccache = \"/usr/lib/ccache/bin/ccache\"\n")
            .unwrap()
            .ccache,
        Some(PathBuf::from("/usr/lib/ccache/bin/ccache"))
    );
    let e = from_toml("ccache = 2\n").unwrap_err().to_string();
    assert!(
        e.contains("key `ccache`") && e.contains("a path string"),
        "{e}"
    );
    // The wrapper's alone: not exported, no plugin option, not in the settings' fingerprint.
    let on = Settings::from_env(env(&[("SQTT_CCACHE", "1")])).unwrap();
    assert_eq!(on.fingerprint(), Settings::default().fingerprint());
    assert!(!on.to_env().iter().any(|(k, _)| *k == "SQTT_CCACHE"));
}

#[test]
fn a_long_bad_value_is_cut_in_the_message() {
    // Issue 25: a 900 KB value was echoed whole.
    let big = "Z".repeat(900_000);
    let e = Settings::from_env(env(&[("SQTT_SCOPE_CU", &big)])).unwrap_err();
    let msg = e.to_string();
    assert!(msg.len() < 1000, "{} bytes", msg.len());
    assert!(
        msg.starts_with(&format!(
            "environment variable SQTT_SCOPE_CU has the invalid value \"{}\"... (900000 bytes in \
             all); accepted: ",
            "Z".repeat(160)
        )),
        "{msg}"
    );
    let e = Settings::from_toml_str(&format!("{big} = 1"), &p()).unwrap_err();
    assert!(e.to_string().len() < 1500, "{} bytes", e.to_string().len());
}

#[test]
fn the_origin_of_a_value_is_the_variable_when_set_else_the_file() {
    let file = Some(Path::new("/src/sqtt.toml"));
    let row = &setting::HIPCC;
    assert_eq!(
        Origin::of(row, file, &env(&[])).to_string(),
        "key `hipcc` in /src/sqtt.toml"
    );
    for set in [&[("SQTT_HIPCC", "/x")][..], &[]] {
        let f = if set.is_empty() { None } else { file };
        assert_eq!(
            Origin::of(row, f, &env(set)).to_string(),
            "environment variable SQTT_HIPCC"
        );
    }
    // An empty variable counts as unset.
    assert_eq!(
        Origin::of(row, file, &env(&[("SQTT_HIPCC", " ")])).to_string(),
        "key `hipcc` in /src/sqtt.toml"
    );
}

/// AMD's pass reads `SQTT_INSTRUMENT_MEMORY=none` as off (issue 30), and
/// `SQTT_TRACE_ADDRESSES=none` (its automatic.ll): the variable, the key and the plugin option
/// take it in any case, it conflicts with nothing, and the error message lists it among the
/// accepted forms.
#[test]
fn instrument_memory_none_is_off_everywhere() {
    for v in ["none", "NONE", " None "] {
        let s = Settings::from_env(env(&[
            ("SQTT_INSTRUMENT_MEMORY", v),
            ("SQTT_TRACE_ADDRESSES", "memory"),
        ]))
        .unwrap();
        assert_eq!(s.instrument_memory, None, "{v:?}");
        let s = Settings::from_toml_str(&format!("instrument_memory = {v:?}"), &p()).unwrap();
        assert_eq!(s.instrument_memory, None, "{v:?}");
    }
    let s = Settings::load_with_options(None, env(&[("SQTT_INSTRUMENT_MEMORY", "2:5")]), |o| {
        (o == "sqtt-marker-instrument-memory").then(|| "none".to_string())
    })
    .unwrap();
    assert_eq!(s.instrument_memory, None);
    // It reads back as `off`, which the plugin takes.
    assert_eq!((setting::INSTRUMENT_MEMORY.get)(&s), "off");
    let msg = Settings::from_env(env(&[("SQTT_INSTRUMENT_MEMORY", "nothing")]))
        .unwrap_err()
        .to_string();
    assert!(msg.contains("or off (or none)"), "{msg}");
    // Address traces: `none` over a variable that turns them on, beside memory markers.
    let s = Settings::load_with_options(
        None,
        env(&[
            ("SQTT_TRACE_ADDRESSES", "memory"),
            ("SQTT_INSTRUMENT_MEMORY", "1:0"),
        ]),
        |o| (o == "sqtt-marker-trace-addresses").then(|| "None".to_string()),
    )
    .unwrap();
    assert!(!s.trace_addresses.is_on());
    assert!(s.instrument_memory.is_some());
    let s = Settings::from_toml_str("trace_addresses = \"none\"", &p()).unwrap();
    assert!(!s.trace_addresses.is_on());
}
