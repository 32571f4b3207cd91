//! `sqtt shaderdata`: the shader-data records (`s_ttracedata`, `s_ttracedata_imm`) of one shader
//! engine's raw thread trace, as AMD's decoder reports them (docs/format.md, "Shader-data
//! records").

use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use crate::thread_trace::{warn_stop, GpuArgs};
use sqtt_thread_trace::decode::{self, SHADER_DATA_IMM, SHADER_DATA_PRIV};

/// `sqtt shaderdata`: the shader-data records of one engine's trace.
#[derive(Debug, Clone, Args)]
pub struct ShaderDataArgs {
    #[command(flatten)]
    pub gpu: GpuArgs,
    /// One shader engine's raw trace bytes (a .att file).
    pub file: PathBuf,
    /// One JSON object per line: {"time", "value", "cu", "simd", "wave", "flags"}.
    #[arg(long)]
    pub json: bool,
}

/// Runs `sqtt shaderdata`.
pub fn run_shaderdata(args: &ShaderDataArgs, out: &mut dyn Write) -> Result<()> {
    let (_, g, data) = args.gpu.read(&args.file)?;
    let (records, summary) = decode::shader_data(g, &data);
    data.intact(&args.file)?;
    warn_stop(&args.file, &summary);
    if args.json {
        for r in &records {
            serde_json::to_writer(&mut *out, r)?;
            writeln!(out)?;
        }
        return Ok(());
    }
    writeln!(
        out,
        "{:>12} {:>10} {:>4} {:>4} {:>4} flags",
        "time", "value", "cu", "simd", "wave"
    )?;
    for r in &records {
        let mut flags = Vec::new();
        if r.flags & SHADER_DATA_IMM != 0 {
            flags.push("imm");
        }
        if r.flags & SHADER_DATA_PRIV != 0 {
            flags.push("priv");
        }
        writeln!(
            out,
            "{:>12} {:>#10x} {:>4} {:>4} {:>4} {}",
            r.time,
            r.value,
            r.cu,
            r.simd,
            r.wave,
            flags.join(",")
        )?;
    }
    writeln!(out, "{} records", records.len())?;
    Ok(())
}
