// A kernel with named SQTT markers: build it with
//   sqtt-hipcc --offload-arch=gfx90a examples/my_kernel.hip -o my_kernel
// and look at what the plugin recorded with
//   sqtt-hipcc --check my_kernel
#include <hip/hip_runtime.h>
#include <cstdio>

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

int main() {
  constexpr int n = 1024;
  float *d = nullptr;
  if (hipMalloc(&d, n * sizeof(float)) != hipSuccess) {
    std::fprintf(stderr, "no HIP device: built fine, nothing to run here\n");
    return 0;
  }
  hipLaunchKernelGGL(my_kernel, dim3(n / 256), dim3(256), 0, 0, d, n);
  hipDeviceSynchronize();
  hipFree(d);
  return 0;
}
