//! Kernels more than one test file builds.

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
