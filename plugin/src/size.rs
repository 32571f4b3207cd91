//! Function size for the SQTT_INSTRUMENT_FUNCTIONS threshold: an instruction count, or the
//! weighted cost model of the spec.

use sqtt_config::FunctionThreshold;

use crate::llvm::Value;

/// Weight of one instruction in the cost model (`cost:N`), or 0/1 in count mode (`N`).
fn weight(i: Value, weighted: bool, is_sqtt: &dyn Fn(Value) -> bool) -> u64 {
    if i.is_phi() || i.is_alloca() || i.is_unreachable() || is_sqtt(i) {
        return 0;
    }
    if let Some(f) = i.called_function() {
        let n = f.name_ref();
        if n.starts_with("llvm.dbg.") || n.starts_with("llvm.lifetime.") {
            return 0;
        }
        if !weighted {
            return 1;
        }
        if n.starts_with("llvm.amdgcn.mfma")
            || n.starts_with("llvm.amdgcn.wmma")
            || n.starts_with("llvm.amdgcn.smfmac")
        {
            return 16;
        }
        if n.starts_with("llvm.amdgcn.ds.") {
            return 4;
        }
        return 1;
    }
    if !weighted {
        return 1;
    }
    let pointer = if i.is_load() {
        Some(i.operand(0))
    } else if i.is_store() {
        Some(i.operand(1))
    } else {
        None
    };
    match pointer.and_then(|p| p.pointer_address_space()) {
        Some(3) => 4,
        Some(0) | Some(1) => 10,
        _ => 1,
    }
}

/// The size of a function under a threshold's measure.
pub fn function_size(
    f: Value,
    threshold: FunctionThreshold,
    is_sqtt: &dyn Fn(Value) -> bool,
) -> u64 {
    let weighted = matches!(threshold, FunctionThreshold::Cost(_));
    f.blocks()
        .into_iter()
        .flat_map(|b| b.instructions())
        .map(|i| weight(i, weighted, is_sqtt))
        .sum()
}

/// Whether a function of this size gets markers.
pub fn above(size: u64, threshold: FunctionThreshold) -> bool {
    match threshold {
        FunctionThreshold::Off => false,
        FunctionThreshold::Count(n) | FunctionThreshold::Cost(n) => size > u64::from(n),
    }
}
