//! The one random-number generator of the tools' and the thread-trace decoders' tests and
//! benchmarks: the unit tests reach it as `crate::test_rng`, the integration tests (through `sim`
//! or as `test_rng`) and the benchmarks by path.

/// xorshift64 (shifts 13, 7, 17) from a fixed, non-zero seed: a failing case repeats.
pub struct Rng(pub u64);

#[allow(dead_code)]
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number below `n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// One of `from` (not empty).
    pub fn pick<'a, T>(&mut self, from: &'a [T]) -> &'a T {
        &from[self.below(from.len() as u64) as usize]
    }
}
