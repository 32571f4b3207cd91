//! The GPU a test decodes each generation's streams as: the GC version of the real captures'
//! GPUs (gfx950, gfx1100, gfx1201).

use sqtt_thread_trace::{GcVersion, Generation, Gpu};

pub fn gpu(g: Generation) -> Gpu {
    let gc = match g {
        Generation::Gfx9 => GcVersion::new(9, 5, 0),
        Generation::Gfx11 => GcVersion::new(11, 0, 0),
        _ => GcVersion::new(12, 0, 1),
    };
    Gpu::new(gc, 1)
}
