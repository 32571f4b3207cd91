//! The GPU a thread trace is recorded on: its GC version, its shader engines and dies, its clock,
//! and the work-group processors of its shader arrays that run work.

pub use sqtt_gfx::{GcVersion, Generation};

/// A GPU as the thread-trace programs and decoders need it.
///
/// Engines are numbered across dies: engine `e` is engine `e % shader_engines` of die
/// `e / shader_engines`, for `0 <= e < shader_engines * xccs`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gpu {
    /// The GC IP version.
    pub gc: GcVersion,
    /// Shader engines per die.
    pub shader_engines: usize,
    /// Dies (XCCs); 1 on single-die parts.
    pub xccs: usize,
    /// The frequency of the GPU clock that realtime markers count (the 100 MHz GPU timestamp
    /// clock on every part built in here), in Hz.
    pub clock_hz: u64,
}

impl Gpu {
    /// A GPU of `shader_engines` engines on one die, with the 100 MHz GPU clock.
    pub fn new(gc: GcVersion, shader_engines: usize) -> Self {
        Gpu {
            gc,
            shader_engines,
            xccs: 1,
            clock_hz: 100_000_000,
        }
    }

    /// The engines across all dies.
    pub fn engines(&self) -> usize {
        self.shader_engines.saturating_mul(self.xccs)
    }

    /// The generation whose trace stream this GPU's engines write, if this crate decodes it
    /// ([`crate::decode::decodes`]).
    pub fn generation(&self) -> Option<Generation> {
        self.gc.generation().filter(|&g| crate::decode::decodes(g))
    }

    /// The die of engine `e`, and its number there.
    pub fn locate(&self, e: usize) -> (usize, usize) {
        let per = self.shader_engines.max(1);
        (e / per, e % per)
    }
}

/// The work-group processors (CUs on GFX9) that run work: `wgps[e][a]` is the number of those
/// of shader array `a` of engine `e`. An engine whose arrays are all 0 is harvested: it is
/// neither traced nor awaited, and its end is not stored.
pub type Wgps = Vec<Vec<u32>>;

/// Whether engine `e` of `wgps` is harvested (every array 0, or no arrays at all).
pub fn harvested(wgps: &[Vec<u32>], e: usize) -> bool {
    wgps.get(e)
        .is_none_or(|arrays| arrays.iter().all(|&n| n == 0))
}

/// The shape of a GPU: its description and the work-group processors of each array.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shape {
    /// The gfx target name, such as `gfx1100`.
    pub name: String,
    pub gpu: Gpu,
    /// Shader arrays per engine.
    pub arrays: usize,
    /// Work-group processors per array (CUs per array on GFX9), the same for every array.
    pub wgps_per_array: u32,
}

impl Shape {
    /// `wgps` for every engine of every die, every array running `wgps_per_array`.
    pub fn wgps(&self) -> Wgps {
        vec![vec![self.wgps_per_array; self.arrays]; self.gpu.engines()]
    }
}

/// A built-in part: gfx name (its GC version is its sqtt-gfx row's), engines per die, dies,
/// arrays per engine, WGPs (CUs on GFX9) per array.
struct Builtin {
    name: &'static str,
    engines: usize,
    xccs: usize,
    arrays: usize,
    wgps: u32,
}

/// The parts built in, from AMD's public specifications and the KFD topology their drivers
/// report (`simd_arrays_per_engine`, `cu_per_simd_array`, `num_xcc`; the capture meta.json files
/// show gfx1100, gfx1201 and gfx950). On RDNA a WGP is two CUs. On GFX9 the count is CU slots
/// per array as KFD reports them, harvested CUs included. Every part's marker clock is the
/// 100 MHz GPU timestamp clock.
const BUILTINS: &[Builtin] = &[
    // MI210/MI250X, one GCD: 8 engines of one array of 16 CU slots (14 active on MI250X).
    Builtin {
        name: "gfx90a",
        engines: 8,
        xccs: 1,
        arrays: 1,
        wgps: 16,
    },
    // MI300X: 8 XCDs of 4 engines of one array of 10 CU slots (38 of 40 active per XCD).
    Builtin {
        name: "gfx942",
        engines: 4,
        xccs: 8,
        arrays: 1,
        wgps: 10,
    },
    // MI355X: 8 XCDs of 4 engines of one array of 9 CU slots (capture meta.json).
    Builtin {
        name: "gfx950",
        engines: 4,
        xccs: 8,
        arrays: 1,
        wgps: 9,
    },
    // RX 7900 XTX (Navi 31): 6 engines of 2 arrays of 4 WGPs, 96 CUs (capture meta.json).
    Builtin {
        name: "gfx1100",
        engines: 6,
        xccs: 1,
        arrays: 2,
        wgps: 4,
    },
    // RX 7800 XT (Navi 32, GC 11.0.3): 3 engines of 2 arrays of 5 WGPs, 60 CUs.
    Builtin {
        name: "gfx1101",
        engines: 3,
        xccs: 1,
        arrays: 2,
        wgps: 5,
    },
    // RX 7600 (Navi 33, GC 11.0.2): 2 engines of 2 arrays of 4 WGPs, 32 CUs.
    Builtin {
        name: "gfx1102",
        engines: 2,
        xccs: 1,
        arrays: 2,
        wgps: 4,
    },
    // Strix Point (GC 11.5.0): 1 engine of 2 arrays of 4 WGPs, 16 CUs (Radeon 890M).
    Builtin {
        name: "gfx1150",
        engines: 1,
        xccs: 1,
        arrays: 2,
        wgps: 4,
    },
    // RX 9060 XT (Navi 44): 2 engines of 2 arrays of 4 WGPs, 32 CUs.
    Builtin {
        name: "gfx1200",
        engines: 2,
        xccs: 1,
        arrays: 2,
        wgps: 4,
    },
    // RX 9070 XT (Navi 48): 4 engines of 2 arrays of 4 WGPs, 64 CUs (capture meta.json).
    Builtin {
        name: "gfx1201",
        engines: 4,
        xccs: 1,
        arrays: 2,
        wgps: 4,
    },
];

/// The names of the built-in parts.
pub fn builtin_names() -> Vec<&'static str> {
    BUILTINS.iter().map(|b| b.name).collect()
}

/// The built-in shape of the part named `name` (such as `gfx1100`), if there is one.
pub fn builtin(name: &str) -> Option<Shape> {
    let b = BUILTINS
        .iter()
        .find(|b| b.name.eq_ignore_ascii_case(name))?;
    Some(Shape {
        name: b.name.to_string(),
        gpu: Gpu {
            gc: sqtt_gfx::Target::lookup(b.name)?.gc?,
            shader_engines: b.engines,
            xccs: b.xccs,
            clock_hz: 100_000_000,
        },
        arrays: b.arrays,
        wgps_per_array: b.wgps,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_have_known_families() {
        for name in builtin_names() {
            let s = builtin(name).unwrap();
            assert!(crate::regs::family(s.gpu.gc).is_some(), "{name}");
            assert!(s.gpu.generation().is_some(), "{name}");
            assert_eq!(s.wgps().len(), s.gpu.engines());
        }
        assert_eq!(builtin("GFX1100").unwrap().gpu.gc, GcVersion::new(11, 0, 0));
        assert!(builtin("gfx803").is_none());
    }

    #[test]
    fn harvest() {
        let w = vec![vec![0, 0], vec![0, 1], vec![]];
        assert!(harvested(&w, 0));
        assert!(!harvested(&w, 1));
        assert!(harvested(&w, 2));
        assert!(harvested(&w, 3));
    }
}
