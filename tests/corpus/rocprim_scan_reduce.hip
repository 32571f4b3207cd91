// A lighter rocPRIM instantiation (reduce, scans, transform) for the test suite; the full list
// is rocprim_algorithms.hip, compiled by ci/corpus.sh.
#include <hip/hip_runtime.h>
#include <iostream>
#include <rocprim/device/device_reduce.hpp>
#include <rocprim/device/device_scan.hpp>
#include <rocprim/device/device_transform.hpp>

int run(int *in, int *out, float *fin, float *fout, size_t n) {
  void *tmp = nullptr;
  size_t bytes = 0;
  (void)rocprim::reduce(tmp, bytes, in, out, 0, n, rocprim::plus<int>());
  (void)rocprim::inclusive_scan(tmp, bytes, fin, fout, n, rocprim::plus<float>());
  (void)rocprim::transform(in, out, n, [] __device__(int x) { return x * 3 + 1; });
  return 0;
}
