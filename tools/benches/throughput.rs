use std::io::Write;
use std::time::Instant;

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.json");
    let mut w = std::io::BufWriter::new(std::fs::File::create(&p).unwrap());
    let n = 10_000_000u64;
    write!(w, "{{\"records_schema\":[\"time\",\"value\",\"cu\",\"simd\",\"wave_id\",\"flags\"],\"records\":[").unwrap();
    for i in 0..n {
        if i > 0 {
            w.write_all(b",").unwrap();
        }
        write!(
            w,
            "[{},{},{},{},{},0]",
            1000000 + i * 7,
            (i % 50) << 2 | 2,
            i % 8,
            i % 4,
            i % 16
        )
        .unwrap();
    }
    w.write_all(b"]}").unwrap();
    drop(w);
    let t = Instant::now();
    let mut s = 0u64;
    let st = sqtt_tools::shaderdata::read_file(&p, |r| s += r.time).unwrap();
    let dt = t.elapsed().as_secs_f64();
    println!(
        "reader: {} recs in {:.2}s = {:.1} M/s ({})",
        st.records,
        dt,
        st.records as f64 / dt / 1e6,
        s
    );
    let t = Instant::now();
    let data = std::fs::read(&p).unwrap();
    let mut de = serde_json::Deserializer::from_slice(&data);
    let v: serde_json::Value = serde::Deserialize::deserialize(&mut de).unwrap();
    let dt = t.elapsed().as_secs_f64();
    println!("dom: {:.2}s {}", dt, v["records"].as_array().unwrap().len());
}
