// rocRAND's device generators (Debian's librocrand-dev headers) in a kernel.
#include <hip/hip_runtime.h>
#include <rocrand/rocrand_kernel.h>

__global__ void generate(float *out, unsigned long long seed) {
  unsigned id = blockIdx.x * blockDim.x + threadIdx.x;
  rocrand_state_xorwow xorwow;
  rocrand_init(seed, id, 0, &xorwow);
  rocrand_state_philox4x32_10 philox;
  rocrand_init(seed, id, 0, &philox);
  rocrand_state_mrg32k3a mrg;
  rocrand_init(seed, id, 0, &mrg);
  float a = rocrand_uniform(&xorwow) + rocrand_normal(&philox) + rocrand_uniform(&mrg);
  unsigned b = rocrand_poisson(&xorwow, 3.5);
  __shared__ float s[256];
  s[threadIdx.x] = a + b;
  __syncthreads();
  out[id] = s[255 - threadIdx.x];
}
