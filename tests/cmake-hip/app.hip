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
