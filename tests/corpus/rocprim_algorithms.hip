// Instantiates rocPRIM device algorithms (Debian's librocprim-dev headers): real device code
// nobody on this project wrote, compiled with every instrumentation feature on.
#include <hip/hip_runtime.h>
#include <iostream>
#include <rocprim/device/device_reduce.hpp>
#include <rocprim/device/device_scan.hpp>
#include <rocprim/device/device_radix_sort.hpp>
#include <rocprim/device/device_merge_sort.hpp>
#include <rocprim/device/device_histogram.hpp>
#include <rocprim/device/device_select.hpp>
#include <rocprim/device/device_transform.hpp>
#include <rocprim/device/device_run_length_encode.hpp>
#include <rocprim/device/device_segmented_reduce.hpp>
#include <rocprim/device/device_binary_search.hpp>

int run(int *in, int *out, float *fin, float *fout, unsigned *keys, unsigned *keys_out, size_t n) {
  void *tmp = nullptr;
  size_t bytes = 0;
  rocprim::reduce(tmp, bytes, in, out, 0, n, rocprim::plus<int>());
  rocprim::inclusive_scan(tmp, bytes, fin, fout, n, rocprim::plus<float>());
  rocprim::exclusive_scan(tmp, bytes, in, out, 0, n, rocprim::maximum<int>());
  rocprim::radix_sort_keys(tmp, bytes, keys, keys_out, n);
  rocprim::merge_sort(tmp, bytes, in, out, n);
  rocprim::histogram_even(tmp, bytes, fin, (unsigned)n, keys_out, 64u, 0.0f, 1.0f);
  rocprim::select(tmp, bytes, in, out, keys_out, n, [] __device__(int x) { return x > 3; });
  rocprim::transform(in, out, n, [] __device__(int x) { return x * 3 + 1; });
  rocprim::run_length_encode(tmp, bytes, in, n, out, keys_out, keys);
  rocprim::segmented_reduce(tmp, bytes, fin, fout, 4u, in, in + 1, rocprim::plus<float>(), 0.0f);
  rocprim::lower_bound(tmp, bytes, in, out, keys_out, n, 16);
  return 0;
}
