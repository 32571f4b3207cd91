//! `sqtt-hipcc --check` on every kind of input, built by the real hipcc with hand-made
//! funcmaps (the `.sqtt_funcmap` section planted by a `__device__` array): executables, `.o`,
//! bare code objects, plain and compressed (CCOB zlib/zstd) bundles, `-fgpu-rdc` objects and
//! links; the table, the summary line, `--json`, `--require` of every kind, `--arch`, errors;
//! and `sqtt funcmap`, which runs the same check, giving the same outputs.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use sqtt_codeobj::bundle::{write_ccob, Compression};
use sqtt_e2e::driver::*;
use sqtt_e2e::toolchain::{extract_code_object, hipcc, llvm_tool, run_ok};

/// gfx90a: every kind of row, in the layout the plugin wrote before it took AMD's (`W:` first,
/// `R:` rows last), which --check keeps reading; plugin-made funcmaps in AMD's layout are checked
/// in driver_hipcc.rs.
const FULL: &str = "W:64\nK:_Z9my_kernelPfi@k.hip:10\nF:1:_Z6helperf@k.hip:3\n\
F:2:_Z7inlinedf@k.hip:5\nU:3:work\nP:4:barrier\nP:5:vmem_load\n\
P:6:addr_trace_load@k.hip:12 -> hip_runtime.h:264\nR:6:extra_payload_count=130\n";
/// gfx1030: lacks the user scope `work` (and more).
const LACKING: &str = "K:_Z9my_kernelPfi@k.hip:10\nF:1:_Z6helperf@k.hip:3\nP:4:barrier\n";

struct Fixture {
    dir: PathBuf,
    app: PathBuf,
    obj: PathBuf,
    rdc: PathBuf,
    bundle: PathBuf,
    co90a: PathBuf,
    ccob_zlib: PathBuf,
    ccob_zstd: PathBuf,
    bad: PathBuf,
    collide: PathBuf,
    archive: PathBuf,
}

fn fx() -> &'static Fixture {
    static FX: OnceLock<Fixture> = OnceLock::new();
    FX.get_or_init(|| {
        // Built once per run and never removed (a static): under target/, not /tmp.
        let dir = tempfile::Builder::new()
            .prefix("sqtt-e2e-check-")
            .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
            .unwrap()
            .keep();
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let src = funcmap_source(&[("__gfx90a__", FULL)], Some(LACKING));
        let two = ["--offload-arch=gfx90a", "--offload-arch=gfx1030"];
        let app = plain_build(&dir, "k.hip", &src, &two, "app");
        let obj = plain_build(&dir, "k.hip", &src, &[&two[..], &["-c"]].concat(), "k.o");
        let rdc = plain_build(
            &dir,
            "k.hip",
            &src,
            &["--offload-arch=gfx90a", "-fgpu-rdc", "-c"],
            "k-rdc.o",
        );
        let bundle = dump_fatbin(&app, &dir, "app.bundle");
        let co_dir = dir.join("co");
        std::fs::create_dir_all(&co_dir).unwrap();
        let co90a = extract_code_object(&app, "gfx90a", &co_dir);
        // A plain bundle made by clang-offload-bundler, then compressed with a CCOB header.
        let plain = dir.join("made.bundle");
        run_ok(
            Command::new(llvm_tool("clang-offload-bundler"))
                .args([
                    "--type=o",
                    "--targets=host-x86_64-unknown-linux,hipv4-amdgcn-amd-amdhsa--gfx90a",
                    "--input=/dev/null",
                ])
                .arg(format!("--input={}", co90a.display()))
                .arg(format!("--output={}", plain.display())),
        );
        let p = std::fs::read(&plain).unwrap();
        let z = {
            use std::io::Write;
            let mut e =
                flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(&p).unwrap();
            e.finish().unwrap()
        };
        let ccob_zlib = dir.join("zlib.ccob");
        std::fs::write(&ccob_zlib, write_ccob(2, Compression::Zlib, p.len() as u64, &z)).unwrap();
        let zs = ruzstd::encoding::compress_to_vec(&p[..], ruzstd::encoding::CompressionLevel::Fastest);
        let ccob_zstd = dir.join("zstd.ccob");
        std::fs::write(&ccob_zstd, write_ccob(3, Compression::Zstd, p.len() as u64, &zs)).unwrap();
        // Invalid funcmaps: duplicate ID, R: naming an unknown ID.
        let bad = plain_build(
            &dir,
            "bad.hip",
            &funcmap_source(&[], Some("K:_Z9my_kernelPfi\nU:1:a\nP:1:b\nR:9:extra_payload_count=1\n")),
            &["--offload-arch=gfx90a"],
            "bad",
        );
        // Two -fgpu-rdc translation units whose funcmaps both use ID 1, linked together.
        let a = dir.join("a.hip");
        let b = dir.join("b.hip");
        std::fs::write(
            &a,
            "#include <hip/hip_runtime.h>\n__attribute__((section(\".sqtt_funcmap\"), used)) __device__ const char sqtt_map_a[] = \"K:_Z2kav\\nU:1:alpha\\n\";\n__global__ void ka() {}\nint main() { return 0; }\n",
        )
        .unwrap();
        std::fs::write(
            &b,
            "#include <hip/hip_runtime.h>\n__attribute__((section(\".sqtt_funcmap\"), used)) __device__ const char sqtt_map_b[] = \"K:_Z2kbv\\nU:1:beta\\n\";\n__global__ void kb() {}\n",
        )
        .unwrap();
        for f in [&a, &b] {
            run_ok(
                Command::new(hipcc())
                    .current_dir(&dir)
                    .args(["--offload-arch=gfx90a", "-fgpu-rdc", "-c"])
                    .arg(f),
            );
        }
        let collide = dir.join("collide");
        run_ok(
            Command::new(hipcc())
                .current_dir(&dir)
                .args(["--offload-arch=gfx90a", "-fgpu-rdc", "a.o", "b.o", "-o"])
                .arg(&collide),
        );
        // A static library holding the object under a long (GNU table) member name.
        let long = dir.join("a_member_name_longer_than_sixteen.o");
        std::fs::copy(&obj, &long).unwrap();
        let archive = dir.join("libk.a");
        run_ok(Command::new("ar").arg("rcs").arg(&archive).arg(&long));
        Fixture {
            archive,
            dir,
            app,
            obj,
            rdc,
            bundle,
            co90a,
            ccob_zlib,
            ccob_zstd,
            bad,
            collide,
        }
    })
}

fn check(args: &[&str], files: &[&Path]) -> Output {
    let mut c = driver(&fx().dir);
    c.arg("--check").args(args).args(files);
    c.output().unwrap()
}

/// `sqtt funcmap` with the same arguments.
fn funcmap(args: &[&str], files: &[&Path]) -> Output {
    let mut c = Command::new(sqtt_tool());
    c.current_dir(&fx().dir)
        .arg("funcmap")
        .args(args)
        .args(files);
    c.output().unwrap()
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}
fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Symbol addresses from llvm-nm (independent of our reader).
fn nm(co: &Path, sym: &str) -> u64 {
    let t = run_ok(Command::new(llvm_tool("llvm-nm")).arg(co));
    let line = t
        .lines()
        .find(|l| l.ends_with(&format!(" {sym}")))
        .unwrap_or_else(|| panic!("{sym} not in\n{t}"));
    u64::from_str_radix(line.split_whitespace().next().unwrap(), 16).unwrap()
}

#[test]
fn executable_table_and_summary() {
    let f = fx();
    let o = check(&[], &[&f.app]);
    // gfx1030 lacks nothing the funcmap format needs: both are valid.
    assert_eq!(o.status.code(), Some(0), "{}{}", out(&o), err(&o));
    let text = out(&o);
    let k = nm(&f.co90a, "_Z9my_kernelPfi");
    let h = nm(&f.co90a, "_Z6helperf");
    let want = format!(
        "  wave_size: 64
  Type        ID     Extra               Vaddr  Name
  ----       ---     -----               -----  ----
kernel         -         0  0x{k:016x}  _Z9my_kernelPfi  @ k.hip:10
  func         1         0  0x{h:016x}  _Z6helperf  @ k.hip:3
  func         2         0                   -  _Z7inlinedf  @ k.hip:5  (inlined)
  user         3         0                   -  work
 point         4         0                   -  barrier
 point         5         0                   -  vmem_load
 point         6       130                   -  addr_trace_load  @ k.hip:12 -> hip_runtime.h:264
"
    );
    assert!(text.contains(&want), "{text}");
    let app = f.app.display().to_string();
    assert!(text.contains(&format!(
        "{app} gfx90a ok kernels=1 functions=2 user=1 points=3 payload=1 wave_size=64 clock=off"
    )));
    assert!(text.contains(&format!(
        "{app} gfx1030 ok kernels=1 functions=1 user=0 points=1 payload=0 wave_size=- clock=off"
    )));
    assert!(text.contains("entry hipv4-amdgcn-amd-amdhsa--gfx1030"));
    let o = check(&["--demangle", "--arch", "gfx90a"], &[&f.app]);
    let text = out(&o);
    assert!(
        text.contains("  my_kernel(float*, int)  @ k.hip:10"),
        "{text}"
    );
    assert!(text.contains("  helper(float)  @ k.hip:3"));
    assert!(text.contains("  inlined(float)  @ k.hip:5  (inlined)"));
    assert!(!text.contains("gfx1030"));
}

#[test]
fn every_input_format() {
    let f = fx();
    for file in [
        &f.app,
        &f.obj,
        &f.bundle,
        &f.co90a,
        &f.ccob_zlib,
        &f.ccob_zstd,
    ] {
        let o = check(&["--arch=gfx90a", "--require", "user:work"], &[file]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}: {}{}",
            file.display(),
            out(&o),
            err(&o)
        );
        assert!(out(&o).contains("  user         3         0                   -  work"));
        assert!(out(&o).contains(" gfx90a ok kernels=1 functions=2 user=1 points=3"));
    }
    assert!(out(&check(&[], &[&f.archive]))
        .contains("member a_member_name_longer_than_sixteen.o: .hip_fatbin bundle 0"));
    assert!(out(&check(&[], &[&f.ccob_zlib])).contains("CCOB v2 zlib"));
    assert!(out(&check(&[], &[&f.ccob_zstd])).contains("CCOB v3 zstd"));
    assert!(out(&check(&[], &[&f.co90a])).contains("code object [amdgcn-amd-amdhsa--gfx90a"));
    // -fgpu-rdc -c: bitcode, not an error.
    let o = check(&[], &[&f.rdc]);
    assert_eq!(o.status.code(), Some(0), "{}{}", out(&o), err(&o));
    assert!(out(&o).contains("not yet linked"), "{}", out(&o));
    assert!(out(&o).contains(" gfx90a not_linked "));
}

#[test]
fn several_files_at_once() {
    let f = fx();
    let o = check(&["--arch", "gfx90a"], &[&f.app, &f.obj, &f.co90a, &f.rdc]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    for p in [&f.app, &f.obj, &f.co90a, &f.rdc] {
        assert!(out(&o).contains(&format!("{} gfx90a ", p.display())));
    }
    let o = check(&[], &[&f.app, &f.bad]);
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn requirements_of_every_kind() {
    let f = fx();
    let ok = [
        "kernel:my_kernel",
        "kernel:_Z9my_kernel*",
        "kernel:my_kernel(float\\*, int)",
        "kernel:my_*(float[*], int)",
        "function:helper",
        "function:_Z6helperf",
        "function:inlined*",
        "user:work",
        "user:w?rk",
        "point:vmem_*",
        "point:barrier",
        "barrier:*",
        "memory:vmem_load",
        "address:addr_trace_load",
        "any:work",
        "any:helper(float)",
    ];
    for spec in ok {
        let o = check(&["--arch", "gfx90a", "--require", spec], &[&f.app]);
        assert_eq!(o.status.code(), Some(0), "{spec}: {}", err(&o));
    }
    let missing = [
        "kernel:helper",
        "function:my_kernel",
        "user:barrier",
        "point:work",
        "barrier:vmem_load",
        "memory:barrier",
        "address:vmem_load",
        "any:nothing_like_this",
        "user:Work",
    ];
    for spec in missing {
        let o = check(&["--arch", "gfx90a", "--require", spec], &[&f.app]);
        assert_eq!(o.status.code(), Some(1), "{spec}");
        let e = err(&o);
        let line = format!("{} [gfx90a]: missing {spec}", f.app.display());
        assert!(e.contains(&line), "{line:?} not in {e}");
    }
}

#[test]
fn only_the_code_object_lacking_the_marker_fails() {
    let f = fx();
    let o = check(
        &["--require", "user:work", "--require", "kernel:my_kernel"],
        &[&f.app],
    );
    assert_eq!(o.status.code(), Some(1));
    let e = err(&o);
    let lines: Vec<&str> = e.lines().filter(|l| l.contains("missing")).collect();
    assert_eq!(lines.len(), 1, "{e}");
    assert!(lines[0].contains("[gfx1030]: missing user:work"), "{e}");
    let o = check(
        &["--require", "user:work", "--arch", "gfx1030"],
        &[&f.app, &f.obj],
    );
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        err(&o)
            .lines()
            .filter(|l| l.contains("missing user:work"))
            .count(),
        2
    );
    let o = check(&["--require", "barrier:barrier"], &[&f.app, &f.obj]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
}

#[test]
fn invalid_funcmaps_and_rdc_collisions() {
    let f = fx();
    let o = check(&[], &[&f.bad]);
    assert_eq!(o.status.code(), Some(1));
    let e = err(&o);
    assert!(
        e.contains("marker ID 1 is used by more than one row"),
        "{e}"
    );
    assert!(e.contains("R: row names marker ID 9"), "{e}");
    assert!(out(&o).contains(" gfx90a invalid "));
    let o = check(&[], &[&f.collide]);
    assert_eq!(o.status.code(), Some(1), "{}{}", out(&o), err(&o));
    let e = err(&o);
    assert!(e.contains("U:1:alpha") && e.contains("U:1:beta"), "{e}");
    assert!(e.contains("2 translation units"), "{e}");
}

#[test]
fn json_report() {
    let f = fx();
    let o = check(&["--json", "--require", "user:work"], &[&f.app, &f.rdc]);
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("stdout is JSON only");
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["ok"], false);
    assert_eq!(v["exit_code"], 1);
    let cos = v["files"][0]["code_objects"].as_array().unwrap();
    assert_eq!(cos.len(), 2);
    let g = cos.iter().find(|c| c["arch"] == "gfx90a").unwrap();
    assert_eq!(g["status"], "ok");
    assert_eq!(g["summary"]["user"], 1);
    assert_eq!(g["summary"]["wave_size"], 64);
    let e = g["entries"].as_array().unwrap();
    assert_eq!(e[0]["kind"], "kernel");
    assert_eq!(e[0]["demangled"], "my_kernel(float*, int)");
    assert_eq!(e[0]["vaddr"], nm(&f.co90a, "_Z9my_kernelPfi"));
    let inl = e.iter().find(|x| x["name"] == "_Z7inlinedf").unwrap();
    assert_eq!(inl["inlined"], true);
    let at = e.iter().find(|x| x["id"] == 6).unwrap();
    assert_eq!(at["extra_payload_count"], 130);
    assert_eq!(at["address_trace"], true);
    assert_eq!(v["files"][1]["code_objects"][0]["status"], "not_linked");
    let r = &v["requirements"][0];
    assert_eq!(r["spec"], "user:work");
    assert_eq!(r["kind"], "user");
    assert_eq!(r["satisfied"], false);
    let res = r["results"].as_array().unwrap();
    assert_eq!(res.len(), 2, "not-linked code objects are not asked");
    assert!(res
        .iter()
        .any(|x| x["arch"] == "gfx90a" && x["satisfied"] == true));
    assert!(res
        .iter()
        .any(|x| x["arch"] == "gfx1030" && x["satisfied"] == false));
    // The report type of sqtt-codeobj reads it back.
    let rep: sqtt_codeobj::report::CheckReport = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(rep.schema_version, sqtt_codeobj::report::SCHEMA_VERSION);
}

#[test]
fn usage_and_input_errors() {
    let f = fx();
    let app: &Path = &f.app;
    for (args, files, code, words) in [
        (
            &["--require", "user"][..],
            &[app][..],
            2,
            "expected KIND:NAME",
        ),
        (&["--require", "users:x"], &[app], 2, "unknown kind"),
        (&["--require", "user:[x"], &[app], 2, "unclosed"),
        (&["--require"], &[], 2, "needs a value"),
        (&["--frobnicate"], &[app], 2, "unknown option --frobnicate"),
        (&[], &[], 2, "no FILE"),
        (
            &[],
            &[Path::new("/nonexistent/file")],
            2,
            "/nonexistent/file",
        ),
        (
            &["--arch", "gfx1100"],
            &[app],
            1,
            "no code object for gfx1100",
        ),
        (&[], &[Path::new("/bin/true")], 1, "no AMDGPU code object"),
    ] {
        let o = check(args, files);
        assert_eq!(o.status.code(), Some(code), "{args:?}: {}", err(&o));
        assert!(err(&o).contains(words), "{words:?} not in {}", err(&o));
    }
    // Truncated and corrupted inputs: clear errors, exit 1, never a crash.
    let full = std::fs::read(&f.bundle).unwrap();
    let t = f.dir.join("truncated.bundle");
    std::fs::write(&t, &full[..full.len() / 2]).unwrap();
    let o = check(&[], &[&t]);
    assert_eq!(o.status.code(), Some(1));
    assert!(err(&o).contains("runs past the end"), "{}", err(&o));
    let z = std::fs::read(&f.ccob_zstd).unwrap();
    let t = f.dir.join("truncated.ccob");
    std::fs::write(&t, &z[..z.len() - 10]).unwrap();
    let o = check(&[], &[&t]);
    assert_eq!(o.status.code(), Some(1));
    assert!(err(&o).contains("total size"), "{}", err(&o));
    let exe = std::fs::read(&f.app).unwrap();
    let t = f.dir.join("chopped-app");
    std::fs::write(&t, &exe[..exe.len() * 2 / 3]).unwrap();
    let o = check(&[], &[&t]);
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    let txt = f.dir.join("notes.txt");
    std::fs::write(&txt, "hello").unwrap();
    let o = check(&[], &[&txt]);
    assert_eq!(o.status.code(), Some(1));
    assert!(err(&o).contains("not an ELF file"));
}

#[test]
fn real_inputs_truncated_or_flipped_never_panic() {
    let f = fx();
    let mut seed = 0x2545F4914F6CDD1Du64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for file in [
        &f.co90a,
        &f.bundle,
        &f.ccob_zstd,
        &f.ccob_zlib,
        &f.obj,
        &f.archive,
    ] {
        let d = std::fs::read(file).unwrap();
        let step = (d.len() / 200).max(1);
        for n in (0..d.len()).step_by(step) {
            let _ = sqtt_codeobj::read_bytes(&d[..n], "t");
        }
        for _ in 0..150 {
            let mut x = d.clone();
            for _ in 0..4 {
                let i = (next() as usize) % x.len();
                x[i] ^= (next() as u8) | 1;
            }
            let _ = sqtt_codeobj::read_bytes(&x, "t");
        }
    }
}

/// `sqtt funcmap` is the same check as `sqtt-hipcc --check`: for every option and input the same
/// stdout (tables, summary lines, JSON report), the same exit status and the same problems on
/// stderr (each binary prefixes its own name).
#[test]
fn sqtt_funcmap_gives_the_same_outputs_as_check() {
    let f = fx();
    let missing = f.dir.join("no-such-file");
    let script = f.dir.join("k.hip");
    let cases: Vec<(Vec<&str>, Vec<&Path>)> = vec![
        (vec![], vec![&f.app, &f.obj, &f.co90a]),
        (
            vec!["--demangle"],
            vec![&f.app, &f.bundle, &f.ccob_zlib, &f.ccob_zstd],
        ),
        (
            vec!["--quiet"],
            vec![&f.app, &f.rdc, &f.archive, &f.collide],
        ),
        (vec!["--json"], vec![&f.app, &f.bad]),
        (vec!["--json", "--arch", "gfx1030"], vec![&f.app, &f.obj]),
        (
            vec!["--arch", "gfx90a", "--require", "user:work"],
            vec![&f.app],
        ),
        (
            vec!["--require", "user:work", "--require", "kernel:my_kernel"],
            vec![&f.app],
        ),
        (
            vec!["--json", "--require", "point:vmem_*"],
            vec![&f.app, &f.co90a],
        ),
        (vec!["--arch", "gfx942"], vec![&f.app]),
        (
            vec!["--skip-non-amdgpu", "--quiet"],
            vec![&f.app, &script, &f.dir],
        ),
        (vec![], vec![&f.bad, &missing]),
    ];
    let mut statuses = Vec::new();
    for (args, files) in &cases {
        let a = check(args, files);
        let b = funcmap(args, files);
        let what = format!("{args:?} {files:?}");
        assert_eq!(out(&a), out(&b), "stdout differs for {what}");
        assert!(!out(&a).is_empty() || a.status.code() != Some(0), "{what}");
        assert_eq!(
            a.status.code(),
            b.status.code(),
            "exit status differs for {what}"
        );
        let problems = |o: &Output, prog: &str| -> Vec<String> {
            err(o)
                .lines()
                .map(|l| {
                    l.strip_prefix(prog)
                        .unwrap_or_else(|| panic!("{l:?} lacks {prog:?} ({what})"))
                        .to_string()
                })
                .collect()
        };
        assert_eq!(
            problems(&a, "sqtt-hipcc --check: "),
            problems(&b, "sqtt funcmap: "),
            "stderr differs for {what}"
        );
        statuses.push(a.status.code());
    }
    // The cases cover passing, failing and unreadable inputs alike.
    for code in [0, 1, 2] {
        assert!(
            statuses.contains(&Some(code)),
            "no case exits {code}: {statuses:?}"
        );
    }
    // Usage errors: both exit 2 and name the bad value.
    for args in [&["--require", "colour:red"][..], &["--arch", ""][..]] {
        let a = check(args, &[&f.app]);
        let b = funcmap(args, &[&f.app]);
        assert_eq!(a.status.code(), Some(2), "{args:?}: {}", err(&a));
        assert_eq!(b.status.code(), Some(2), "{args:?}: {}", err(&b));
        let first = |o: &Output| {
            err(o)
                .lines()
                .next()
                .unwrap_or_default()
                .split_once("error: ")
                .map(|x| x.1.to_string())
        };
        assert_eq!(first(&a), first(&b), "{args:?}");
    }
}
