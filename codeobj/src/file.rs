//! Reading input files safely: `sqtt_config::file` is the one home (the lowest crate); the
//! code-object reader's race test lives here, where `read_path` is.

pub use sqtt_config::file::{open_regular, read_all, read_at, read_regular, read_regular_string};

#[cfg(test)]
mod race {
    use std::io::{Seek, SeekFrom, Write};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    /// A bundle whose last entry lies 256 KiB into the file, so reading it touches pages a
    /// truncation removes: mapped, this died with SIGBUS (issue 15).
    fn bundle() -> Vec<u8> {
        let mut far = vec![0x5au8; 256 << 10];
        far[..4].copy_from_slice(crate::elf::BITCODE_MAGIC);
        crate::bundle::write_plain(
            &[
                ("host-x86_64-unknown-linux-gnu", &[][..]),
                ("hipv4-amdgcn-amd-amdhsa--gfx90a", &far[..]),
            ],
            4096,
        )
    }

    /// A rewriter truncates and rewrites the file in place (same inode) while `read_path` reads
    /// it thousands of times: every read gives a result or an error, the process gets no signal
    /// (a signal would kill this test), and the loop ends in bounded time.
    #[test]
    fn reading_while_rewritten_in_place_never_signals() {
        let dir = std::env::temp_dir().join(format!("sqtt-codeobj-race-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("racy.bundle");
        let full = bundle();
        std::fs::write(&path, &full).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let writer = {
            let (path, stop, full) = (path.clone(), stop.clone(), full.clone());
            std::thread::spawn(move || {
                let mut f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
                let mut rounds = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    for len in [0, 4096, full.len() as u64 / 2] {
                        f.set_len(len).unwrap();
                        f.seek(SeekFrom::Start(0)).unwrap();
                        f.write_all(&full).unwrap();
                    }
                    rounds += 1;
                }
                rounds
            })
        };
        let start = Instant::now();
        let (mut ok, mut errors) = (0, 0);
        let mut shrank = 0;
        while ok + errors < 3000 && start.elapsed() < Duration::from_secs(20) {
            match crate::read_path(&path) {
                Ok(cos) => {
                    // Whole data, never a mix of a truncated and a rewritten file.
                    assert_eq!(cos.len(), 1);
                    assert_eq!(cos[0].size, 256 << 10);
                    ok += 1
                }
                Err(e) => {
                    errors += 1;
                    if e.to_string().contains("shrank") {
                        shrank += 1;
                    }
                }
            }
        }
        stop.store(true, Ordering::Relaxed);
        let rounds = writer.join().unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(ok + errors, 3000, "3000 reads did not finish in 20 s");
        assert!(rounds > 10, "the rewriter ran only {rounds} rounds");
        eprintln!("{ok} read, {errors} errors ({shrank} saw the file shrink), {rounds} rewrites");
    }
}
