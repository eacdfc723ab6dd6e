//! A choice sequence (Hypothesis's idea): the generators and mutators read their decisions from
//! a list of numbers that proptest draws and shrinks. Reading past the end gives 0, and every
//! reader makes 0 its simplest decision (the first alternative, the absent option, the
//! smallest count), so shrinking the list (dropping numbers, lowering them) simplifies the
//! program it describes.

/// The decisions of one input, read front to back.
pub(crate) struct Choices<'a> {
    data: &'a [u32],
    pos: usize,
}

impl<'a> Choices<'a> {
    pub(crate) fn new(data: &'a [u32]) -> Self {
        Choices { data, pos: 0 }
    }

    /// A number in `0..n` (`n > 0`); 0 once the list is used up.
    pub(crate) fn below(&mut self, n: usize) -> usize {
        let v = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        if n == 0 { 0 } else { v as usize % n }
    }

    /// True with about `percent` % probability; false for 0.
    pub(crate) fn maybe(&mut self, percent: usize) -> bool {
        self.below(100) >= 100 - percent.min(100)
    }

    /// One of `items` (non-empty); the first for 0.
    pub(crate) fn pick<'b, T>(&mut self, items: &'b [T]) -> &'b T {
        &items[self.below(items.len())]
    }

    /// Whether every number has been read.
    pub(crate) fn exhausted(&self) -> bool {
        self.pos >= self.data.len()
    }
}

#[test]
fn zero_is_the_simplest_choice() {
    let mut c = Choices::new(&[]);
    assert_eq!(c.below(7), 0);
    assert!(!c.maybe(90));
    assert_eq!(*c.pick(&["first", "second"]), "first");
    let mut c = Choices::new(&[5, 99]);
    assert_eq!(c.below(3), 2);
    assert!(c.maybe(1));
    assert!(c.exhausted());
}
