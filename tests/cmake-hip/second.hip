// The second translation unit of the -fgpu-rdc build (SQTT_RDC=ON): its markers and app.hip's
// are numbered together at the device link, so their IDs never collide.
#include <hip/hip_runtime.h>
#include "markers.hpp"

__device__ float scale(float x) {
  sqtt_marker_enter("scale");
  float r = x * 3.0f;
  sqtt_marker_exit("scale");
  return r;
}

__global__ void second_kernel(float *p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  sqtt_marker_enter("second");
  p[i] = scale(p[i]);
  sqtt_marker_exit("second");
}
