//! The PM4 programs that start and stop thread traces (README.md, "Recording").
//!
//! The sequence follows Mesa's `ac_sqtt_emit_start` / `ac_sqtt_emit_stop` /
//! `ac_sqtt_emit_wait` for a compute queue, with one buffer per engine (as tinygrad's runtime
//! does) instead of Mesa's single buffer, and with what README.md asks on top: engines 0 and 1
//! alone trace instructions, every engine traces compute waves only, each die's engines are
//! programmed under a PRED_EXEC on that die, harvested engines are left alone, and each
//! engine's write pointer is copied out with a confirmed write.

use crate::gpu::{harvested, Generation, Gpu};
use crate::pm4::{event, func, Builder};
use crate::regs::{self, grbm, status, Field, Reg};
use crate::Error;

/// A page of a trace buffer: sizes count them and base addresses start at one (bit 12).
pub const PAGE: u64 = 4096;
/// The most pages an engine's 22-bit size field holds.
pub const MAX_PAGES: u64 = (1 << 22) - 1;

/// Engines `e < ITRACE_ENGINES` trace the instructions their waves issue.
pub const ITRACE_ENGINES: usize = 2;

fn family_of(gpu: &Gpu) -> Result<Generation, Error> {
    // A GC without a family has none of the trace registers: name the first the program needs.
    regs::family(gpu.gc).ok_or(Error::MissingRegister {
        gc: gpu.gc,
        register: Reg::GrbmGfxIndex.name(),
    })
}

fn check_engines(gpu: &Gpu, wgps: &[Vec<u32>]) -> Result<(), Error> {
    if wgps.len() != gpu.engines() {
        return Err(Error::Engines {
            got: wgps.len(),
            expected: gpu.engines(),
        });
    }
    Ok(())
}

/// The engines and dies the programs can name: engine numbers in GRBM_GFX_INDEX.SE_INDEX, dies
/// in PRED_EXEC's 8-bit mask.
fn check_shape(gpu: &Gpu, family: Generation) -> Result<(), Error> {
    let max_se = grbm::se_index(family).max() as usize + 1;
    if gpu.shader_engines > max_se {
        return Err(Error::Unaddressable {
            what: "shader engines per die",
            count: gpu.shader_engines,
            max: max_se,
        });
    }
    if gpu.xccs > 8 {
        return Err(Error::Unaddressable {
            what: "dies",
            count: gpu.xccs,
            max: 8,
        });
    }
    Ok(())
}

/// The most bytes the buffers may reach: 48-bit addresses on GFX9 and GFX11 (BASE2 or
/// BUF0_SIZE.BASE_HI holds bits 44..47), 57-bit on GFX12 (BUF0_BASE_HI holds 13 bits).
fn address_limit(family: Generation) -> u64 {
    match family {
        Generation::Gfx12 => 1 << 57,
        _ => 1 << 48,
    }
}

/// The shader array an engine traces: the first whose work-group processors run work.
fn first_array(arrays: &[u32]) -> u32 {
    arrays.iter().position(|&n| n > 0).unwrap_or(0) as u32
}

/// Selects engine `se` (array `sa`) of the current die for the register writes after it.
fn select(b: &mut Builder, family: Generation, se: usize, sa: u32) {
    let v =
        grbm::se_index(family).put(se as u32) | grbm::SA_INDEX.put(sa) | grbm::INSTANCE_BROADCAST;
    b.set_uconfig(0xC200, v);
}

fn broadcast(b: &mut Builder) {
    b.set_uconfig(0xC200, grbm::BROADCAST);
}

/// SPI_CONFIG_CNTL as Mesa's `radv_emit_spi_config_cntl` sets it, with SQG events on while
/// tracing (GPR_WRITE_PRIORITY 0x2c688, EXP_PRIORITY_ORDER 3, PS_PKR_PRIORITY_CNTL 3 from
/// GFX10 on).
fn spi_config(family: Generation, tracing: bool) -> u32 {
    let t = u32::from(tracing);
    let mut v = Field::new(0, 20).put(0x2C688) | Field::new(21, 23).put(3);
    v |= Field::new(24, 24).put(t) | Field::new(25, 25).put(t);
    if family != Generation::Gfx9 {
        v |= Field::new(30, 31).put(3);
    }
    v
}

/// SQ_THREAD_TRACE_CTRL from GFX11 on, as Mesa's `ac_sqtt_get_ctrl`: MODE, HIWATER 5,
/// REG_AT_HWM 2, SPI and SQ stalls, DRAW_EVENT_EN, UTIL_TIMER, and RT_FREQ 4096 clocks on GFX11
/// (GFX12 has no RT_FREQ; it takes LOWATER_OFFSET 4).
fn ctrl(family: Generation, tracing: bool) -> u32 {
    let mut v = Field::new(0, 1).put(u32::from(tracing))
        | Field::new(6, 8).put(5)
        | Field::new(9, 10).put(2)
        | (1 << 11)
        | (1 << 12)
        | (1 << 31);
    if family == Generation::Gfx12 {
        v |= (1 << 14) | Field::new(20, 22).put(4);
    } else {
        v |= (1 << 13) | Field::new(16, 17).put(2);
    }
    v
}

/// GFX9 SQ_THREAD_TRACE_MODE: compute waves (MASK_CS), AUTOFLUSH_EN and MODE.
fn gfx9_mode(on: bool) -> u32 {
    Field::new(18, 20).put(1) | (1 << 25) | Field::new(21, 22).put(u32::from(on))
}

/// The GFX9 token types an engine records (SQ_THREAD_TRACE_TOKEN_MASK.TOKEN_MASK, one bit per
/// token type): MISC, TIMESTAMP, REG, WAVE_START, REG_CSPRIV, WAVE_END, INST_USERDATA and REG_CS;
/// with INST, INST_PC and ISSUE on the engines that trace instructions.
fn gfx9_tokens(itrace: bool) -> u32 {
    let base = [0u32, 1, 2, 3, 5, 6, 12, 15]
        .iter()
        .fold(0, |m, b| m | (1 << b));
    if itrace {
        base | (1 << 10) | (1 << 11) | (1 << 13)
    } else {
        base
    }
}

/// The GFX11/GFX12 TOKEN_EXCLUDE bits of an engine that traces no instructions: VMEMEXEC (0),
/// ALUEXEC (1), VALUINST (2), IMMEDIATE (5) and INST (8), as Mesa excludes them.
const NO_INSTRUCTIONS: u32 = (1 << 0) | (1 << 1) | (1 << 2) | (1 << 5) | (1 << 8);

/// SQ_THREAD_TRACE_TOKEN_MASK from GFX11 on: registers SQDEC, SHDEC, GFXUDEC, COMP and CONTEXT,
/// BOP events, and on GFX12 no barrier waits and no CP_ME_MC_RADDR writes.
fn token_mask(family: Generation, itrace: bool) -> u32 {
    let exclude = if itrace { 0 } else { NO_INSTRUCTIONS };
    let reg_include = Field::new(16, 23).put(0x1F);
    match family {
        Generation::Gfx12 => {
            reg_include | exclude | (1 << 13) | (1 << 14) | Field::new(26, 28).put(2)
        }
        _ => reg_include | exclude | (1 << 12),
    }
}

/// SQ_THREAD_TRACE_MASK from GFX11 on: compute waves (WTYPE_INCLUDE's CS bit, 0x40) of SIMD 0 of
/// WGP 0 of array `sa`.
fn rdna_mask(sa: u32) -> u32 {
    Field::new(10, 16).put(0x40)
        | Field::new(9, 9).put(sa)
        | Field::new(4, 7).put(0)
        | Field::new(0, 1).put(0)
}

/// GFX9 SQ_THREAD_TRACE_MASK: every SIMD (SIMD_EN 0xf) of CU 0 of array `sh`, register, SPI and
/// SQ stalls on, every VMID.
fn gfx9_mask(sh: u32) -> u32 {
    Field::new(0, 4).put(0)
        | Field::new(5, 5).put(sh)
        | (1 << 7)
        | Field::new(8, 11).put(0xF)
        | (1 << 14)
        | (1 << 15)
}

/// The die mask of engine `e`'s die, for PRED_EXEC.
fn die_mask(gpu: &Gpu, e: usize) -> u32 {
    1u32 << (gpu.locate(e).0 as u32 & 7)
}

/// Adds `body` for engine `e`, under its die's predicate on a GPU of several dies.
fn per_engine(b: &mut Builder, gpu: &Gpu, e: usize, body: impl FnOnce(&mut Builder)) {
    if gpu.xccs > 1 {
        b.on_dies(die_mask(gpu, e), body);
    } else {
        body(b);
    }
}

/// The packets, as little-endian 32-bit words, that start tracing on every engine of `gpu`
/// whose arrays run work (`wgps`), engine `e` writing at most `size` bytes into its buffer at
/// `address + e * size`. Caches are made coherent before and after.
///
/// Each engine traces the compute waves of one unit of its first shader array that runs work:
/// every SIMD of its first CU on GFX9, SIMD 0 of its first WGP from GFX11 on. Engines 0 and 1
/// alone trace instructions.
///
/// # Errors
/// [`Error::Size`] unless `size` is a multiple of 4096 from 4096 to (2^22 - 1) pages;
/// [`Error::Misaligned`] unless `address` is a multiple of 4096; [`Error::Engines`] unless
/// `wgps` holds `shader_engines * xccs` engines; [`Error::Unaddressable`] for more engines per
/// die than GRBM_GFX_INDEX names or more than 8 dies; [`Error::AddressRange`] if the buffers pass
/// the addresses the base registers hold; [`Error::MissingRegister`] for a GC whose trace
/// registers this crate does not know.
pub fn start(gpu: &Gpu, wgps: &[Vec<u32>], size: u64, address: u64) -> Result<Vec<u32>, Error> {
    if size == 0 || !size.is_multiple_of(PAGE) || size / PAGE > MAX_PAGES {
        return Err(Error::Size { size });
    }
    if !address.is_multiple_of(PAGE) {
        return Err(Error::Misaligned {
            address,
            align: PAGE,
        });
    }
    check_engines(gpu, wgps)?;
    let family = family_of(gpu)?;
    check_shape(gpu, family)?;
    let end = (gpu.engines() as u128) * u128::from(size) + u128::from(address);
    if end > u128::from(address_limit(family)) {
        return Err(Error::AddressRange {
            address,
            size,
            engines: gpu.engines(),
        });
    }
    // Look every register up first, so that a GC lacking one fails before any word.
    let r = |reg| regs::address(gpu.gc, reg);
    let (spi, enable) = (r(Reg::SpiConfigCntl)?, r(Reg::ComputeThreadTraceEnable)?);
    let pages = (size / PAGE) as u32;
    let size_field = regs::size_field(family);

    let mut b = Builder::default();
    b.acquire_mem(family);
    broadcast(&mut b);
    b.set_uconfig(spi, spi_config(family, true));
    for e in 0..gpu.engines() {
        if harvested(wgps, e) {
            continue;
        }
        let (_, se) = gpu.locate(e);
        let sa = first_array(&wgps[e]);
        let itrace = e < ITRACE_ENGINES;
        let buffer = address + e as u64 * size;
        let (lo, hi) = ((buffer >> 12) as u32, (buffer >> 44) as u32);
        let program = |b: &mut Builder| -> Result<(), Error> {
            select(b, family, se, 0);
            match family {
                Generation::Gfx9 => {
                    // Mesa: "order seems important" for BASE2, BASE, SIZE and CTRL.
                    b.set_uconfig(r(Reg::Base2)?, Field::new(0, 3).put(hi));
                    b.set_uconfig(r(Reg::Base)?, lo);
                    b.set_uconfig(r(Reg::Size)?, size_field.put(pages));
                    b.set_uconfig(r(Reg::Ctrl)?, 1 << 31); // RESET_BUFFER
                    b.set_uconfig(r(Reg::Mask)?, gfx9_mask(sa));
                    let tokens =
                        Field::new(0, 15).put(gfx9_tokens(itrace)) | Field::new(16, 23).put(0xFF);
                    b.set_uconfig(r(Reg::TokenMask)?, tokens);
                    b.set_uconfig(r(Reg::PerfMask)?, 0xFFFF_FFFF);
                    b.set_uconfig(r(Reg::TokenMask2)?, 0xFFFF_FFFF);
                    b.set_uconfig(r(Reg::Hiwater)?, 4);
                    b.set_uconfig(r(Reg::Status)?, 0); // clears UTC_ERROR
                    b.set_uconfig(r(Reg::Mode)?, gfx9_mode(true));
                }
                Generation::Gfx11 => {
                    // Mesa: "order seems important" for BUF0_SIZE then BUF0_BASE.
                    b.set_uconfig(
                        r(Reg::Buf0Size)?,
                        size_field.put(pages) | Field::new(0, 3).put(hi),
                    );
                    b.set_uconfig(r(Reg::Buf0Base)?, lo);
                    b.set_uconfig(r(Reg::Mask)?, rdna_mask(sa));
                    b.set_uconfig(r(Reg::TokenMask)?, token_mask(family, itrace));
                    b.set_uconfig(r(Reg::Ctrl)?, ctrl(family, true));
                }
                Generation::Gfx12 => {
                    b.set_uconfig(r(Reg::Buf0Size)?, size_field.put(pages));
                    b.set_uconfig(r(Reg::Buf0BaseLo)?, lo);
                    b.set_uconfig(
                        r(Reg::Buf0BaseHi)?,
                        Field::new(0, 12).put((buffer >> 44) as u32),
                    );
                    b.set_uconfig(r(Reg::Wptr)?, 0);
                    b.set_uconfig(r(Reg::Mask)?, rdna_mask(sa));
                    b.set_uconfig(r(Reg::TokenMask)?, token_mask(family, itrace));
                    b.set_uconfig(r(Reg::Ctrl)?, ctrl(family, true));
                }
                _ => unreachable!("regs::family gives GFX9, GFX11 or GFX12"),
            }
            Ok(())
        };
        let mut result = Ok(());
        per_engine(&mut b, gpu, e, |b| result = program(b));
        result?;
    }
    broadcast(&mut b);
    b.set_sh(enable, 1);
    b.acquire_mem(family);
    Ok(b.words)
}

/// The packets that stop tracing on every engine of `gpu` whose arrays run work (`wgps`), wait
/// until each has written its trace out, and store where engine `e`'s trace ends (its
/// SQ_THREAD_TRACE_WPTR, a 32-bit word) at `address + 4 * e`, each write confirmed before the
/// next packet starts. [`length`] reads that word.
///
/// Per engine: from GFX11 on, wait for FINISH_DONE, turn the engine's trace off
/// (SQ_THREAD_TRACE_CTRL.MODE 0) and wait until it is not BUSY; on GFX9, turn it off
/// (SQ_THREAD_TRACE_MODE.MODE 0) and wait until it is not BUSY. GFX9 does not wait for
/// FINISH_DONE: neither Mesa nor tinygrad, the two public programs that ran on GFX9 hardware,
/// does, and a wait that never completes would hang the queue.
///
/// # Errors
/// [`Error::Misaligned`] unless `address` is a multiple of 4; [`Error::Engines`] unless `wgps`
/// holds `shader_engines * xccs` engines; [`Error::Unaddressable`] as for [`start`];
/// [`Error::MissingRegister`] for a GC whose trace registers this crate does not know.
pub fn stop(gpu: &Gpu, wgps: &[Vec<u32>], address: u64) -> Result<Vec<u32>, Error> {
    if !address.is_multiple_of(4) {
        return Err(Error::Misaligned { address, align: 4 });
    }
    check_engines(gpu, wgps)?;
    let family = family_of(gpu)?;
    check_shape(gpu, family)?;
    let r = |reg| regs::address(gpu.gc, reg);
    let (spi, enable, st, wptr) = (
        r(Reg::SpiConfigCntl)?,
        r(Reg::ComputeThreadTraceEnable)?,
        r(Reg::Status)?,
        r(Reg::Wptr)?,
    );
    let off = match family {
        Generation::Gfx9 => r(Reg::Mode)?,
        _ => r(Reg::Ctrl)?,
    };
    let (done, busy) = (status::finish_done(family), status::busy(family));

    let mut b = Builder::default();
    b.acquire_mem(family);
    b.event_write(event::CS_PARTIAL_FLUSH, 4);
    broadcast(&mut b);
    b.set_sh(enable, 0);
    b.event_write(event::THREAD_TRACE_FINISH, 0);
    for e in 0..gpu.engines() {
        if harvested(wgps, e) {
            continue;
        }
        let (_, se) = gpu.locate(e);
        per_engine(&mut b, gpu, e, |b| {
            select(b, family, se, 0);
            if family == Generation::Gfx9 {
                b.set_uconfig(off, gfx9_mode(false));
            } else {
                b.wait_reg(func::NOT_EQUAL, st, 0, done.mask());
                b.set_uconfig(off, ctrl(family, false));
            }
            b.wait_reg(func::EQUAL, st, 0, busy.mask());
            b.copy_reg_to_mem(wptr, address + 4 * e as u64);
        });
    }
    broadcast(&mut b);
    b.set_uconfig(spi, spi_config(family, false));
    b.acquire_mem(family);
    Ok(b.words)
}

/// The bytes of an engine's trace, from the word [`stop`] stored for it (its write pointer,
/// which counts 32-byte units) and `buffer`, the address of that engine's buffer
/// (`address + e * size` of [`start`]).
///
/// On GC 11.0 the write pointer counts from address 0 rather than from the buffer (Mesa's
/// `ac_sqtt_copy_info_regs`): the buffer's own 32-byte units, in the pointer's 29 bits, are
/// taken off here, on the host, since [`stop`] does not know where the buffers are.
pub fn length(gpu: &Gpu, buffer: u64, word: u32) -> u64 {
    let family = regs::family(gpu.gc).unwrap_or(Generation::Gfx11);
    let field = regs::wptr_offset(family);
    let units = field.get(word);
    let units = if gpu.gc.major == 11 && gpu.gc.minor == 0 {
        units.wrapping_sub((buffer >> 5) as u32) & field.max()
    } else {
        units
    };
    u64::from(units) * 32
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::GcVersion;

    #[test]
    fn length_quirk() {
        let g11 = Gpu::new(GcVersion::new(11, 0, 0), 1);
        assert_eq!(length(&g11, 0x10_0000, (0x10_0000 + 0x100) / 32), 0x100);
        for gc in [
            GcVersion::new(9, 4, 3),
            GcVersion::new(11, 5, 0),
            GcVersion::new(12, 0, 1),
        ] {
            assert_eq!(length(&Gpu::new(gc, 1), 0x10_0000, 0x100 / 32), 0x100);
        }
    }

    #[test]
    fn errors() {
        let g = Gpu::new(GcVersion::new(11, 0, 0), 2);
        let w = vec![vec![1, 1]; 2];
        for size in [0, 1, 4095, 4097, PAGE * (MAX_PAGES + 1)] {
            assert_eq!(start(&g, &w, size, 0), Err(Error::Size { size }));
        }
        assert!(start(&g, &w, PAGE * MAX_PAGES, 0).is_ok());
        assert_eq!(
            start(&g, &w, PAGE, 2048),
            Err(Error::Misaligned {
                address: 2048,
                align: PAGE
            })
        );
        assert_eq!(
            start(&g, &w[..1], PAGE, 0),
            Err(Error::Engines {
                got: 1,
                expected: 2
            })
        );
        assert_eq!(
            stop(&g, &w, 2),
            Err(Error::Misaligned {
                address: 2,
                align: 4
            })
        );
        assert!(matches!(
            start(&g, &w, PAGE, 1 << 48),
            Err(Error::AddressRange { .. })
        ));
        let g12 = Gpu::new(GcVersion::new(12, 0, 0), 17);
        let w17 = vec![vec![1]; 17];
        assert!(matches!(
            start(&g12, &w17, PAGE, 0),
            Err(Error::Unaddressable { max: 16, .. })
        ));
        let mut g9 = Gpu::new(GcVersion::new(9, 4, 3), 1);
        g9.xccs = 9;
        let w9 = vec![vec![1]; 9];
        assert!(matches!(
            stop(&g9, &w9, 0),
            Err(Error::Unaddressable { max: 8, .. })
        ));
        let g10 = Gpu::new(GcVersion::new(10, 3, 0), 2);
        assert!(matches!(
            start(&g10, &w, PAGE, 0),
            Err(Error::MissingRegister { .. })
        ));
        assert!(matches!(
            stop(&g10, &w, 0),
            Err(Error::MissingRegister { .. })
        ));
    }
}
