//! Shared, interior-mutable containers: the shadows of address-identified data, and the
//! handles through which reverse-mode rules see memory they mutate.
//!
//! A pullback runs after the forward pass has finished, and many pullbacks (and the caller)
//! must write into the same shadow, or restore the same primal memory. Under the borrow checker
//! that memory must be shared and mutable through a shared reference, and must outlive every
//! pullback that can touch it: the containers here are reference-counted (`Rc`) and
//! interior-mutable. Cloning one clones the *handle*, never the data: two clones alias one
//! buffer, which is exactly the unique-gradient-address rule of seed 000.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::rc::Rc;

/// A shared, growable buffer: the shadow (fdata) of a `Vec<T>`, a slice or an array, and the
/// handle through which reverse-mode rules mutate a buffer passed as `&mut`.
///
/// `clone` aliases; [`SharedVec::deep_clone`] copies.
///
/// ```
/// use mooncake_runtime::shared::SharedVec;
///
/// let shadow = SharedVec::zeros(3);
/// let alias = shadow.clone();
/// alias.add(1, 2.5_f64);
/// assert_eq!(shadow.to_vec(), vec![0.0, 2.5, 0.0]);
/// assert!(shadow.ptr_eq(&alias));
/// ```
pub struct SharedVec<T>(Rc<Buffer<T>>);

/// What a [`SharedVec`] points at: the elements, and whether they are all known to be zero.
struct Buffer<T> {
    data: RefCell<Vec<T>>,
    /// Every element is the zero tangent of its primal (set where a shadow is made or reset to
    /// zeros, cleared by every mutable access): a rule that adds into every element of a shadow
    /// known to be zero may write instead of adding (see [`SharedVec::add_to_all`]).
    zero: Cell<bool>,
    /// Where the elements' memory goes when the last handle is dropped: the pool of large
    /// buffers (`crate::kept`), for buffers made by [`SharedVec::filled_kept`] or
    /// [`SharedVec::from_kept_vec`]; freed otherwise.
    give_back: Option<fn(Vec<T>)>,
}

impl<T> Drop for Buffer<T> {
    fn drop(&mut self) {
        if let Some(give_back) = self.give_back {
            give_back(std::mem::take(self.data.get_mut()));
        }
    }
}

impl<T> Clone for SharedVec<T> {
    #[inline(always)]
    fn clone(&self) -> Self {
        SharedVec(Rc::clone(&self.0))
    }
}

impl<T: fmt::Debug> fmt::Debug for SharedVec<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("SharedVec").field(&*self.0.data.borrow()).finish()
    }
}

impl<T: PartialEq> PartialEq for SharedVec<T> {
    fn eq(&self, other: &Self) -> bool {
        *self.0.data.borrow() == *other.0.data.borrow()
    }
}

impl<T> SharedVec<T> {
    /// Takes ownership of `data` (no copy).
    #[inline]
    pub fn from_vec(data: Vec<T>) -> Self {
        SharedVec(Rc::new(Buffer {
            data: RefCell::new(data),
            zero: Cell::new(false),
            give_back: None,
        }))
    }

    /// `data` as a shared buffer whose memory, if large, goes to the thread's pool of large
    /// buffers when the last handle is dropped, for the next [`SharedVec::filled_kept`] (what
    /// reverse-mode rules make the buffers they build with, so that repeated gradients do not
    /// fault their pages in again).
    pub fn from_kept_vec(data: Vec<T>) -> Self
    where
        T: 'static,
    {
        let give_back = crate::kept::worth_keeping::<T>(data.capacity())
            .then_some(crate::kept::keep::<T> as fn(Vec<T>));
        SharedVec(Rc::new(Buffer { data: RefCell::new(data), zero: Cell::new(false), give_back }))
    }

    /// Marks every element as the zero tangent of its primal: what a shadow just made or reset
    /// to zeros is. Any mutable access clears the mark.
    #[inline(always)]
    pub fn mark_zero(&self) {
        self.0.zero.set(true);
    }

    /// Whether every element is known to be zero (see [`SharedVec::mark_zero`]).
    #[inline(always)]
    pub fn known_zero(&self) -> bool {
        self.0.zero.get()
    }

    /// A mutable borrow of the elements; what every mutable access goes through, so that it
    /// clears the zero mark.
    #[inline(always)]
    fn data_mut(&self) -> std::cell::RefMut<'_, Vec<T>> {
        let v = self.0.data.borrow_mut();
        self.0.zero.set(false);
        v
    }

    /// An empty buffer with room for `capacity` elements.
    pub fn with_capacity(capacity: usize) -> Self {
        Self::from_vec(Vec::with_capacity(capacity))
    }

    /// The number of elements.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.0.data.borrow().len()
    }

    /// Whether the buffer is empty.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.0.data.borrow().is_empty()
    }

    /// Whether `self` and `other` are handles to the same buffer (they alias).
    #[inline(always)]
    pub fn ptr_eq(&self, other: &Self) -> bool {
        Rc::ptr_eq(&self.0, &other.0)
    }

    /// The buffer's address, to tell whether two handles alias without comparing types.
    #[inline(always)]
    pub fn addr(&self) -> usize {
        Rc::as_ptr(&self.0) as *const () as usize
    }

    /// A mutable borrow of the `Vec`, held until dropped, or `None` if the buffer is borrowed
    /// already. Derived reverse rules hold one for a whole reverse sweep (see
    /// `rev::sink`).
    #[inline]
    pub fn try_borrow_mut(&self) -> Option<std::cell::RefMut<'_, Vec<T>>> {
        self.0.data.try_borrow_mut().ok().inspect(|_| self.0.zero.set(false))
    }

    /// Appends `value`.
    #[inline]
    pub fn push(&self, value: T) {
        self.data_mut().push(value);
    }

    /// Removes and returns the last element.
    #[inline]
    pub fn pop(&self) -> Option<T> {
        self.data_mut().pop()
    }

    /// Swaps the elements at `a` and `b`.
    #[inline(always)]
    pub fn swap(&self, a: usize, b: usize) {
        self.data_mut().swap(a, b);
    }

    /// Runs `f` on a shared view of the elements.
    #[inline(always)]
    pub fn with<R>(&self, f: impl FnOnce(&[T]) -> R) -> R {
        f(&self.0.data.borrow())
    }

    /// A shared borrow of the `Vec` (what an assertion in derived code reads).
    ///
    /// # Panics
    /// If the buffer is borrowed mutably.
    #[inline(always)]
    pub fn borrow(&self) -> std::cell::Ref<'_, Vec<T>> {
        self.0.data.borrow()
    }

    /// A mutable borrow of the `Vec` (what derived code holds over a loop that adds into a
    /// shadow, see `rev::shadow_guard`).
    ///
    /// # Panics
    /// If the buffer is borrowed already.
    #[inline(always)]
    pub fn borrow_mut(&self) -> std::cell::RefMut<'_, Vec<T>> {
        self.data_mut()
    }

    /// A mutable borrow of the `Vec` that leaves the zero mark as it is: for a primal buffer
    /// (whose mark nothing reads, see [`SharedVec::set_primal`]), or for a shadow into which the
    /// borrower writes nothing but zeros (the shadow of a buffer built in the body, whose
    /// elements a loop's stores set back to zero).
    ///
    /// # Panics
    /// If the buffer is borrowed already.
    #[inline(always)]
    pub fn borrow_mut_unmarked(&self) -> std::cell::RefMut<'_, Vec<T>> {
        self.0.data.borrow_mut()
    }

    /// Runs `f` on a shared view of the `Vec` itself.
    #[inline(always)]
    pub fn with_vec<R>(&self, f: impl FnOnce(&Vec<T>) -> R) -> R {
        f(&self.0.data.borrow())
    }

    /// Runs `f` on a mutable view of the elements (the `Vec` itself, so it may grow).
    ///
    /// # Panics
    /// If `f` reaches this same buffer through another handle (a re-entrant borrow).
    #[inline(always)]
    pub fn with_mut<R>(&self, f: impl FnOnce(&mut Vec<T>) -> R) -> R {
        f(&mut self.data_mut())
    }

    /// Replaces the contents with `data`, returning the old contents (no copy).
    pub fn replace(&self, data: Vec<T>) -> Vec<T> {
        std::mem::replace(&mut *self.data_mut(), data)
    }

    /// Takes the contents out, leaving the buffer empty; without a copy when this is the only
    /// handle.
    pub fn into_vec(self) -> Vec<T>
    where
        T: Clone,
    {
        match Rc::try_unwrap(self.0) {
            Ok(mut buffer) => std::mem::take(buffer.data.get_mut()),
            Err(shared) => shared.data.borrow().clone(),
        }
    }
}

impl<T: Copy> SharedVec<T> {
    /// A copy of `data`.
    pub fn from_slice(data: &[T]) -> Self {
        Self::from_vec(data.to_vec())
    }

    /// `len` copies of `value`.
    pub fn filled(value: T, len: usize) -> Self {
        Self::from_vec(vec![value; len])
    }

    /// `len` copies of `value`, in memory from the thread's pool of large buffers when the
    /// buffer is large, given back to it when the last handle is dropped (see
    /// [`SharedVec::from_kept_vec`]).
    pub fn filled_kept(value: T, len: usize) -> Self
    where
        T: 'static,
    {
        Self::from_kept_vec(crate::kept::filled(value, len))
    }

    /// The element at `index`.
    ///
    /// # Panics
    /// If `index >= self.len()`, with the index and the length, as slice indexing does.
    #[inline(always)]
    pub fn get(&self, index: usize) -> T {
        self.0.data.borrow()[index]
    }

    /// Overwrites the element at `index`, returning the old value.
    #[inline(always)]
    pub fn set(&self, index: usize, value: T) -> T {
        std::mem::replace(&mut self.data_mut()[index], value)
    }

    /// [`SharedVec::set`] on a primal buffer (the handle through which a reverse rule writes a
    /// buffer), which leaves the zero mark as it is: only a shadow's mark is ever read (see
    /// [`SharedVec::mark_zero`]), and a store's restore runs once per element in a loop's
    /// reverse sweep.
    #[inline(always)]
    pub fn set_primal(&self, index: usize, value: T) -> T {
        std::mem::replace(&mut self.0.data.borrow_mut()[index], value)
    }

    /// Overwrites the element at `index` of a shadow with `zero` (its zero tangent), returning
    /// the old value: the zero mark stays, since a zero written into zeros leaves zeros.
    #[inline(always)]
    pub fn zero_at(&self, index: usize, zero: T) -> T {
        std::mem::replace(&mut self.0.data.borrow_mut()[index], zero)
    }

    /// A copy of the contents.
    pub fn to_vec(&self) -> Vec<T> {
        self.0.data.borrow().clone()
    }

    /// A new buffer holding a copy of the contents (not an alias).
    pub fn deep_clone(&self) -> Self {
        Self::from_vec(self.to_vec())
    }

    /// Overwrites the contents with a copy of `data` (lengths may differ).
    pub fn assign(&self, data: &[T]) {
        let mut v = self.data_mut();
        v.clear();
        v.extend_from_slice(data);
    }
}

impl<T: Copy + std::ops::AddAssign> SharedVec<T> {
    /// Adds `value` to the element at `index`: the increment of a gradient.
    #[inline(always)]
    pub fn add(&self, index: usize, value: T) {
        self.data_mut()[index] += value;
    }

    /// Adds `value` to every element; writes it instead when the buffer is known to be zero
    /// (see [`SharedVec::mark_zero`]), which saves reading the elements.
    #[inline]
    pub fn add_to_all(&self, value: T) {
        let zero = self.known_zero();
        let mut v = self.data_mut();
        if zero { v.fill(value) } else { v.iter_mut().for_each(|g| *g += value) }
    }
}

impl<T: Copy + Default> SharedVec<T> {
    /// `len` zeros (default values), marked zero (see [`SharedVec::mark_zero`]).
    pub fn zeros(len: usize) -> Self {
        let v = Self::from_vec(vec![T::default(); len]);
        v.mark_zero();
        v
    }
}

/// A shared array of `N` elements: how reverse-mode code holds an array it indexes, writes or
/// lends (`[f64; 3]` built in the body or passed by value), so that the buffer rules apply to
/// it as to a [`SharedVec`] (which it wraps) while its length stays part of its type: lent as
/// `&[T; N]`, returned or passed on as `[T; N]`.
///
/// `clone` aliases.
pub struct SharedArray<T, const N: usize>(SharedVec<T>);

impl<T, const N: usize> Clone for SharedArray<T, N> {
    #[inline(always)]
    fn clone(&self) -> Self {
        SharedArray(self.0.clone())
    }
}

impl<T: fmt::Debug, const N: usize> fmt::Debug for SharedArray<T, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("SharedArray").field(&*self.0.0.data.borrow()).finish()
    }
}

impl<T, const N: usize> SharedArray<T, N> {
    /// Takes ownership of `data` (moved into a `Vec`).
    #[inline]
    pub fn from_array(data: [T; N]) -> Self {
        SharedArray(SharedVec::from_vec(Vec::from(data)))
    }

    /// Takes ownership of `data`.
    ///
    /// # Panics
    /// If `data` does not have `N` elements.
    #[inline]
    pub fn from_vec(data: Vec<T>) -> Self {
        assert_eq!(
            data.len(),
            N,
            "mooncake: an array of length {N} built with {} elements",
            data.len()
        );
        SharedArray(SharedVec::from_vec(data))
    }

    /// The number of elements, `N`.
    #[inline(always)]
    pub const fn len(&self) -> usize {
        N
    }

    /// Whether the array is empty (`N == 0`).
    #[inline(always)]
    pub const fn is_empty(&self) -> bool {
        N == 0
    }

    /// The elements as a [`SharedVec`] (an alias, not a copy).
    #[inline(always)]
    pub fn as_shared_vec(&self) -> &SharedVec<T> {
        &self.0
    }

    /// Runs `f` on a shared view of the array.
    #[inline(always)]
    pub fn with_array<R>(&self, f: impl FnOnce(&[T; N]) -> R) -> R {
        self.0.with(|s| match <&[T; N]>::try_from(s) {
            Ok(a) => f(a),
            Err(_) => unreachable!("mooncake: a shared array changed length"),
        })
    }
}

impl<T: Copy, const N: usize> SharedArray<T, N> {
    /// A copy of the array.
    #[inline]
    pub fn to_array(&self) -> [T; N] {
        self.with_array(|a| *a)
    }
}

/// A shared cell holding one `Copy` value: the shadow of a scalar behind a reference
/// (`&f64`, `&mut f64`), and the handle through which reverse-mode rules mutate it.
///
/// ```
/// use mooncake_runtime::shared::SharedCell;
///
/// let shadow = SharedCell::new(1.0_f64);
/// shadow.clone().add(0.5);
/// assert_eq!(shadow.get(), 1.5);
/// ```
pub struct SharedCell<T>(Rc<Cell<T>>);

impl<T> Clone for SharedCell<T> {
    #[inline(always)]
    fn clone(&self) -> Self {
        SharedCell(Rc::clone(&self.0))
    }
}

impl<T: Copy + fmt::Debug> fmt::Debug for SharedCell<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("SharedCell").field(&self.0.get()).finish()
    }
}

impl<T: Copy + PartialEq> PartialEq for SharedCell<T> {
    fn eq(&self, other: &Self) -> bool {
        self.0.get() == other.0.get()
    }
}

impl<T: Copy> SharedCell<T> {
    /// A new cell holding `value`.
    #[inline]
    pub fn new(value: T) -> Self {
        SharedCell(Rc::new(Cell::new(value)))
    }

    /// The value.
    #[inline(always)]
    pub fn get(&self) -> T {
        self.0.get()
    }

    /// Overwrites the value, returning the old one.
    #[inline(always)]
    pub fn set(&self, value: T) -> T {
        self.0.replace(value)
    }

    /// Whether `self` and `other` are handles to the same cell (they alias).
    #[inline(always)]
    pub fn ptr_eq(&self, other: &Self) -> bool {
        Rc::ptr_eq(&self.0, &other.0)
    }
}

impl<T: Copy + std::ops::AddAssign> SharedCell<T> {
    /// Adds `value`: the increment of a gradient.
    #[inline(always)]
    pub fn add(&self, value: T) {
        let mut v = self.0.get();
        v += value;
        self.0.set(v);
    }
}

/// A shared cell holding one value that is not `Copy` (a `String`, say): the handle through
/// which reverse-mode rules mutate such a value behind `&mut`, and the shadow of nalgebra's heap
/// matrices.
///
/// A shadow made by [`SharedRef::constant`] is *constant*: it belongs to a value whose gradient
/// nobody reads (an argument passed `Const(&x)`, the result of a `zero_adjoint!` rule), so a
/// rule may skip the work of adding into it ([`SharedRef::is_live`], [`SharedRef::accumulate`];
/// nalgebra's rules do). Adding into it anyway is harmless. Only for values no rule writes into
/// in place: a write of a live value into one would need its gradient.
pub struct SharedRef<T>(Rc<RefShared<T>>);

/// The allocation behind a [`SharedRef`].
struct RefShared<T> {
    value: RefCell<T>,
    live: bool,
}

impl<T> Clone for SharedRef<T> {
    #[inline(always)]
    fn clone(&self) -> Self {
        SharedRef(Rc::clone(&self.0))
    }
}

impl<T: fmt::Debug> fmt::Debug for SharedRef<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("SharedRef").field(&*self.0.value.borrow()).finish()
    }
}

impl<T> SharedRef<T> {
    /// A new cell holding `value`.
    pub fn new(value: T) -> Self {
        SharedRef(Rc::new(RefShared { value: RefCell::new(value), live: true }))
    }

    /// A new cell holding `value`, marked constant: the shadow of an argument passed
    /// `Const(&x)`, whose gradient is not wanted (see the type's documentation).
    ///
    /// ```
    /// use mooncake_runtime::shared::SharedRef;
    /// assert!(SharedRef::new(0.0).is_live());
    /// assert!(!SharedRef::constant(0.0).is_live());
    /// ```
    pub fn constant(value: T) -> Self {
        SharedRef(Rc::new(RefShared { value: RefCell::new(value), live: false }))
    }

    /// Whether anything reads what is added into this shadow: false for one made by
    /// [`SharedRef::constant`], whose additions a rule may skip.
    #[inline(always)]
    pub fn is_live(&self) -> bool {
        self.0.live
    }

    /// Runs `f` on a shared view of the value.
    pub fn with<R>(&self, f: impl FnOnce(&T) -> R) -> R {
        f(&self.0.value.borrow())
    }

    /// Runs `f` on a mutable view of the value.
    pub fn with_mut<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        f(&mut self.0.value.borrow_mut())
    }

    /// Runs `f`, a pullback's addition into this shadow, on a mutable view of the value, or
    /// skips it for a constant shadow ([`SharedRef::constant`]).
    #[inline]
    pub fn accumulate(&self, f: impl FnOnce(&mut T)) {
        if self.0.live {
            f(&mut self.0.value.borrow_mut());
        }
    }

    /// Whether the two handles share one value.
    pub fn ptr_eq(&self, other: &Self) -> bool {
        Rc::ptr_eq(&self.0, &other.0)
    }
}
