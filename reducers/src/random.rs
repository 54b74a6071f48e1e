//! Seeded random inputs for the property tests. A case that fails names its seed and
//! its input, so it can be replayed and then kept as a plain test.

/// A xorshift64* generator: fast, and the same sequence for a seed on every machine.
pub(crate) struct Random(u64);

impl Random {
    pub(crate) fn new(seed: u64) -> Random {
        // SplitMix64's increment spreads neighbouring seeds; the state is never zero.
        Random(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `0..n` (`n` > 0).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    pub(crate) fn coin(&mut self) -> bool {
        self.next() & 1 == 1
    }

    /// One of `items`.
    pub(crate) fn pick<'a, T: ?Sized>(&mut self, items: &[&'a T]) -> &'a T {
        items[self.below(items.len())]
    }

    /// Up to `max` characters drawn from `alphabet`.
    pub(crate) fn string_of(&mut self, alphabet: &str, max: usize) -> String {
        let chars: Vec<char> = alphabet.chars().collect();
        let len = self.below(max + 1);
        (0..len).map(|_| chars[self.below(chars.len())]).collect()
    }

    /// Up to `max` bytes, any values.
    pub(crate) fn bytes(&mut self, max: usize) -> Vec<u8> {
        let len = self.below(max + 1);
        (0..len).map(|_| self.next() as u8).collect()
    }

    /// Up to `max` characters of any kind: ASCII with its control characters, the
    /// Basic Multilingual Plane and the planes above it.
    pub(crate) fn any_string(&mut self, max: usize) -> String {
        let len = self.below(max + 1);
        let mut out = String::new();
        while out.chars().count() < len {
            let code = match self.below(10) {
                0..=4 => self.below(0x80),
                5..=7 => self.below(0x1_0000),
                _ => self.below(0x11_0000),
            };
            if let Some(c) = char::from_u32(code as u32) {
                out.push(c);
            }
        }
        out
    }
}
