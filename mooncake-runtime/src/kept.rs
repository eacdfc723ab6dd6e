//! Large buffers kept for reuse by reverse-mode rules.
//!
//! A reverse rule that builds a buffer (`vec![0.0; n]`, `x.to_vec()`) makes the buffer and a
//! shadow of the same length, and both die when the pullback has run. When they are large, the
//! allocator gives their memory back to the kernel at every free, and the next gradient takes
//! a page fault per 4 KiB page to touch it again: for `kron_sum`'s two 1.3 MB buffers, 870
//! faults and about 1 ms per call, eight times the primal. So buffers of at least
//! [`MIN_BYTES`] are taken from, and given back to, a small pool of the thread's own, like the
//! tapes' pools (`rev::take_tape`): repeated gradients reuse the memory the first one touched.
//!
//! The pool keeps at most [`MAX_KEPT`] buffers and [`MAX_KEPT_BYTES`] bytes; a buffer given back
//! past either limit is freed as before. What it keeps stays allocated until the thread ends.

use std::any::Any;
use std::cell::RefCell;

/// The smallest buffer (in bytes of capacity) worth keeping: below it, the allocator's own free
/// lists serve a new buffer without a page fault.
pub const MIN_BYTES: usize = 64 * 1024;

/// The most buffers the pool of a thread keeps.
pub const MAX_KEPT: usize = 16;

/// The most bytes the pool of a thread keeps.
pub const MAX_KEPT_BYTES: usize = 64 << 20;

struct Kept {
    /// Buffers (`Vec<T>` for some `T`, empty) with their capacity in bytes.
    buffers: Vec<(Box<dyn Any>, usize)>,
    bytes: usize,
}

thread_local! {
    static KEPT: RefCell<Kept> = const { RefCell::new(Kept { buffers: Vec::new(), bytes: 0 }) };
}

/// The capacity of `v` in bytes.
fn bytes_of<T>(v: &Vec<T>) -> usize {
    v.capacity().saturating_mul(std::mem::size_of::<T>())
}

/// Whether a buffer of `len` elements of `T` is large enough to keep.
#[inline]
pub fn worth_keeping<T>(len: usize) -> bool {
    len.saturating_mul(std::mem::size_of::<T>()) >= MIN_BYTES
}

/// `len` copies of `value`, in a kept buffer of `T` when one is large enough (the smallest such),
/// else in a new one.
#[inline]
pub fn filled<T: Copy + 'static>(value: T, len: usize) -> Vec<T> {
    if !worth_keeping::<T>(len) {
        return vec![value; len];
    }
    let mut v = take::<T>(len).unwrap_or_default();
    v.resize(len, value);
    v
}

/// A copy of `x`, in a kept buffer of `T` when one is large enough, else in a new one.
#[inline]
pub fn copy_of<T: Copy + 'static>(x: &[T]) -> Vec<T> {
    if !worth_keeping::<T>(x.len()) {
        return x.to_vec();
    }
    let mut v = take::<T>(x.len()).unwrap_or_default();
    v.extend_from_slice(x);
    v
}

/// The smallest kept buffer of `T` holding at least `len` elements, taken out of the pool
/// (empty: [`keep`] clears what it keeps).
fn take<T: 'static>(len: usize) -> Option<Vec<T>> {
    KEPT.try_with(|kept| {
        let mut kept = kept.borrow_mut();
        let best = kept
            .buffers
            .iter()
            .enumerate()
            .filter_map(|(k, (b, _))| b.downcast_ref::<Vec<T>>().map(|v| (k, v.capacity())))
            .filter(|&(_, cap)| cap >= len)
            .min_by_key(|&(_, cap)| cap)
            .map(|(k, _)| k)?;
        let (b, bytes) = kept.buffers.swap_remove(best);
        kept.bytes -= bytes;
        b.downcast::<Vec<T>>().ok().map(|v| *v)
    })
    .ok()
    .flatten()
}

/// Gives `v`'s memory to the pool, if it is large enough and the pool has room; frees it
/// otherwise.
pub fn keep<T: 'static>(mut v: Vec<T>) {
    let bytes = bytes_of(&v);
    if bytes < MIN_BYTES {
        return;
    }
    v.clear();
    let _ = KEPT.try_with(|kept| {
        let mut kept = kept.borrow_mut();
        if kept.buffers.len() < MAX_KEPT && kept.bytes + bytes <= MAX_KEPT_BYTES {
            kept.bytes += bytes;
            kept.buffers.push((Box::new(v), bytes));
        }
    });
}

/// The number of buffers and bytes the calling thread's pool holds (for tests).
#[cfg(test)]
pub fn held() -> (usize, usize) {
    KEPT.try_with(|kept| {
        let kept = kept.borrow();
        (kept.buffers.len(), kept.bytes)
    })
    .unwrap_or((0, 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_buffers_are_reused_and_small_ones_are_not_kept() {
        let n = MIN_BYTES / 8 + 16;
        let before = held();
        let v = filled(1.5_f64, n);
        let p = v.as_ptr();
        keep(v);
        assert_eq!(held().0, before.0 + 1);
        let w = filled(0.0_f64, n - 3);
        assert_eq!(w.as_ptr(), p, "the kept buffer is reused");
        assert_eq!(w.len(), n - 3);
        assert!(w.iter().all(|&x| x == 0.0), "a reused buffer is filled anew");
        assert_eq!(held(), before);
        keep(vec![0.0_f64; 10]);
        assert_eq!(held(), before, "small buffers are freed");
        // A buffer of another type is not handed out for `f64`.
        keep(vec![0_u8; MIN_BYTES]);
        let x = filled(2.0_f64, n);
        assert!(x.iter().all(|&e| e == 2.0));
        assert_eq!(held().0, before.0 + 1);
    }

    #[test]
    fn the_pool_is_bounded() {
        for _ in 0..2 * MAX_KEPT {
            keep(vec![0.0_f64; MIN_BYTES / 8]);
        }
        assert!(held().0 <= MAX_KEPT);
        keep(vec![0.0_f64; MAX_KEPT_BYTES / 8 + 1]);
        assert!(held().1 <= MAX_KEPT_BYTES);
    }
}
