#include <cstdio>

int main() {
  std::puts("a host-only tool");
  return 0;
}
