#include <hip/hip_runtime.h>
#include "markers.hpp"

void launch_scale(float *p, int n);

__global__ void app_kernel(float *p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  sqtt_marker_enter("work");
  p[i] = p[i] * 2.0f + 1.0f;
  __syncthreads();
  p[i + 1] += p[i];
  sqtt_marker_exit("work");
}

int main() {
  float *d = nullptr;
  if (hipMalloc(&d, 64 * sizeof(float)) != hipSuccess) return 0; // no GPU here: fine
  hipLaunchKernelGGL(app_kernel, dim3(1), dim3(64), 0, 0, d, 63);
  launch_scale(d, 64);
  return 0;
}
