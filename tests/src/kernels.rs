//! Kernels more than one test file builds.

/// A kernel with one named scope, `work` (markers.hpp), and a host `main`: what the wrapper's
/// tests build.
pub const WORK_KERNEL: &str = r#"
#include <hip/hip_runtime.h>
#include "markers.hpp"

__global__ void my_kernel(float *p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  sqtt_marker_enter("work");
  p[i] = p[i] * 2.0f + 1.0f;
  sqtt_marker_exit("work");
}
int main() { return 0; }
"#;

/// `src` (whose markers get ID 1) with a hand-made funcmap row in the same section,
/// `U:1:intruder`: ID 1 twice, which the wrapper's post-build check rejects.
pub fn with_colliding_funcmap(src: &str) -> String {
    format!(
        "{src}\n__attribute__((section(\".sqtt_funcmap\"), used)) __device__ const char \
         extra_map[] = \"U:1:intruder\\n\";\n"
    )
}

/// README's example kernel (examples/my_kernel.hip without its host code): named scopes, a
/// data marker and a point, so every marker kind of markers.hpp.
pub const MY_KERNEL: &str = r#"#include <hip/hip_runtime.h>
#include "markers.hpp"

__global__ void my_kernel(float *data, int n) {
  int idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= n) return;
  sqtt_marker_enter("load_phase");
  float val = data[idx];
  sqtt_marker_exit("load_phase");
  sqtt_marker_enter("compute_phase");
  val = val * val + 1.0f;
  sqtt_marker_data("work_value", static_cast<uint32_t>(idx));
  sqtt_marker_exit("compute_phase");
  sqtt_marker_point("store_begin");
  data[idx] = val;
}
"#;

/// The funcmap of [`MY_KERNEL`] in AMD's layout (docs/format.md, sections 2 and 3): every row
/// ends in a newline, the `R:` row follows its marker's row.
pub const MY_KERNEL_FUNCMAP: &str = "K:_Z9my_kernelPfi\nU:1:load_phase\nU:2:compute_phase\n\
P:3:work_value\nR:3:extra_payload_count=1\nP:4:store_begin\n";

/// The marker records of the fixtures with scope `outer`, point `mid`, data `val` and numeric
/// point 7 (tests/fixtures/ir/named_markers.ll, tests/fixtures/hip/markers.hip), in program
/// order: enter outer (6), point mid (8), the data header of val (12) and its payload (from a
/// VGPR), exit (1), the numeric point 7 (28). `numeric_at_run_time`: at -O0 the numeric ID is
/// loaded from an alloca, so it goes through M0 from a register.
pub fn outer_mid_val_trace(cpu: &str, numeric_at_run_time: bool) -> Vec<&'static str> {
    let gfx9 = crate::checks::is_gfx9(cpu);
    let record = |m0: &'static str, imm: &'static str| if gfx9 { m0 } else { imm };
    vec![
        record("m0:6+nop", "imm:0x6"),
        record("m0:8+nop", "imm:0x8"),
        record("m0:12+nop", "imm:0xc"),
        "m0:dyn+nop",
        record("m0:1+nop", "imm:0x1"),
        if numeric_at_run_time {
            "m0:dyn+nop"
        } else {
            record("m0:28+nop", "imm:0x1c")
        },
    ]
}

/// Every instrumentation feature on, as `ci/bench-pass.sh` measures the corpus: `cost:50`
/// functions, barriers, memory groups `2:5`, a CU and SIMD scope filter.
pub const EVERY_FEATURE: &[(&str, &str)] = &[
    ("SQTT_INSTRUMENT_FUNCTIONS", "cost:50"),
    ("SQTT_INSTRUMENT_BARRIERS", "1"),
    ("SQTT_INSTRUMENT_MEMORY", "2:5"),
    ("SQTT_SCOPE_CU", "0x1"),
    ("SQTT_SCOPE_SIMD", "0x1"),
];
