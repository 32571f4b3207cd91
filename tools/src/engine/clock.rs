//! Clock domains of packed gfx12 headers.
//!
//! A packed header carries the low bits of the shader clock at its issue (`clock_bits` bits
//! from bit `clock_shift`); the record's time is when it reached the trace. Within one domain
//! (one SIMD, one clock field layout) the smallest delay between the two is taken as the
//! pipeline's own, and each header is moved back by what it was delayed beyond that. The
//! delays are relative to the domain's first header, modulo the clock field's range.

use rustc_hash::FxHashMap;
use sqtt_markers::MarkerEncoding;

use crate::codeobj::CodeObject;
use crate::diag::{kind, Diagnostics};

/// Which headers share a domain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct DomainKey {
    pub se: u32,
    pub cu: u32,
    pub simd: u32,
    pub clock_bits: u32,
    pub clock_shift: u32,
}

/// The arrival time and sampled clock of a domain's first header.
#[derive(Debug, Clone, Copy)]
struct Origin {
    arrival: u64,
    sampled: u64,
}

struct Domain {
    origin: Option<Origin>,
    /// The smallest relative delay, over the code objects not found normalised.
    min_rel: i64,
    /// The smallest relative delay of each code object's headers (by code object index), so
    /// that the headers of a code object found already normalised can be left out.
    min_by_co: Vec<i64>,
    /// The clock field's range as a mask of the full clock, and half of it.
    mask: u64,
    half: u64,
    /// Cycles one step of the clock field stands for.
    bucket: u64,
}

impl Domain {
    fn new(enc: &MarkerEncoding, codeobjs: usize) -> Domain {
        let w = enc.shader_clock_bits + enc.shader_clock_shift;
        let mask = if w >= 64 { u64::MAX } else { (1u64 << w) - 1 };
        Domain {
            origin: None,
            min_rel: i64::MAX,
            min_by_co: vec![i64::MAX; codeobjs],
            mask,
            half: (mask >> 1) + 1,
            bucket: 1u64 << enc.shader_clock_shift,
        }
    }

    /// The delay of a header (arrival minus sampled clock) relative to the first header's,
    /// in the range of the clock field around zero.
    #[inline(always)]
    fn relative(&mut self, arrival: u64, sampled: u64) -> i64 {
        let o = *self.origin.get_or_insert(Origin { arrival, sampled });
        let x = arrival
            .wrapping_sub(o.arrival)
            .wrapping_sub(sampled.wrapping_sub(o.sampled))
            .wrapping_add(self.half)
            & self.mask;
        x as i64 - self.half as i64
    }
}

/// One packed header as the domains see it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Sample {
    /// The domain (from [`Clocks::domain`]).
    pub domain: usize,
    /// The header's code object (index).
    pub co: usize,
    pub arrival: u64,
    /// The clock field, right-aligned.
    pub clock: u32,
    pub clock_shift: u32,
}

/// The domains of one ui directory, and what the survey pass found per code object.
pub(super) struct Clocks {
    domains: Vec<Domain>,
    index: FxHashMap<DomainKey, usize>,
    codeobjs: usize,
    /// Per code object: its packed headers were already restored to the legacy form (and
    /// their times corrected) by att_tool; they are read as legacy headers.
    pub normalised: Vec<bool>,
    /// Per code object, in the survey pass: headers read in the packed form, and how many of
    /// them carried a nonzero clock field.
    packed_seen: Vec<u64>,
    packed_clocked: Vec<u64>,
}

impl Clocks {
    pub fn new(codeobjs: usize) -> Clocks {
        Clocks {
            domains: Vec::new(),
            index: FxHashMap::default(),
            codeobjs,
            normalised: vec![false; codeobjs],
            packed_seen: vec![0; codeobjs],
            packed_clocked: vec![0; codeobjs],
        }
    }

    /// The domain of `key`, made when new.
    pub fn domain(&mut self, key: DomainKey, enc: &MarkerEncoding) -> usize {
        let domains = &mut self.domains;
        let n = self.codeobjs;
        *self.index.entry(key).or_insert_with(|| {
            domains.push(Domain::new(enc, n));
            domains.len() - 1
        })
    }

    /// Survey pass: takes a header into its domain's minimum delay.
    #[inline(always)]
    pub fn survey(&mut self, s: Sample) {
        let d = &mut self.domains[s.domain];
        let rel = d.relative(s.arrival, u64::from(s.clock) << s.clock_shift);
        d.min_by_co[s.co] = d.min_by_co[s.co].min(rel);
        self.packed_seen[s.co] += 1;
        self.packed_clocked[s.co] += u64::from(s.clock != 0);
    }

    /// Second pass: how many cycles the header was delayed beyond its domain's minimum (less
    /// one step of the clock field, which the sample cannot tell apart).
    #[inline]
    pub fn excess(&mut self, s: Sample) -> u64 {
        let d = &mut self.domains[s.domain];
        let rel = d.relative(s.arrival, u64::from(s.clock) << s.clock_shift);
        rel.saturating_sub(d.min_rel)
            .saturating_sub(d.bucket as i64 - 1)
            .max(0) as u64
    }

    /// After the survey pass: decides which code objects' headers were already normalised
    /// (their layout came from att_tool's `code.json` and not one header carries a clock
    /// sample), and takes each domain's minimum over the others only.
    pub fn settle(&mut self, codeobjs: &[CodeObject], diag: &mut Diagnostics) {
        for (ci, co) in codeobjs.iter().enumerate() {
            let norm =
                co.layout_in_code_json && self.packed_seen[ci] > 0 && self.packed_clocked[ci] == 0;
            self.normalised[ci] = norm;
            if norm {
                let n = self.packed_seen[ci];
                diag.warn(kind::NORMALISED, || {
                    format!(
                        "code object {} ({}): {n} headers in the legacy form, read as they are",
                        co.id, co.source
                    )
                });
            }
        }
        for d in &mut self.domains {
            d.min_rel = d
                .min_by_co
                .iter()
                .zip(&self.normalised)
                .filter(|(_, n)| !**n)
                .map(|(m, _)| *m)
                .min()
                .unwrap_or(i64::MAX);
        }
    }
}
