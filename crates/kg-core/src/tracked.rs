//! [`Tracked`]: a value that knows whether data derived from it is still current.

use indexmap::{Equivalent, IndexMap};
use std::hash::Hash;

/// A stamp no other mutable access of any [`Tracked`] value has had.
pub(crate) fn fresh_stamp() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// A value whose every mutable access takes a fresh stamp, so that data derived from
/// it can tell whether it is still current. Reads go through `Deref`, writes through
/// `DerefMut`; stamps are unique across values, so even replacing the whole value (or
/// cloning one and changing the clone) can never revive a stale derivation.
#[derive(Debug)]
pub struct Tracked<T> {
    value: T,
    stamp: u64,
    /// Stays the same while a map is only appended to (see [`Tracked::get_or_append`]).
    lineage: u64,
}

impl<T> Tracked<T> {
    /// Track `value` under a stamp no derivation has seen, so anything derived from it
    /// is computed afresh.
    pub fn new(value: T) -> Tracked<T> {
        let stamp = fresh_stamp();
        Tracked {
            value,
            stamp,
            lineage: stamp,
        }
    }

    /// Changes whenever the value may have changed.
    pub fn stamp(&self) -> u64 {
        self.stamp
    }

    /// Changes whenever the value may have changed other than by appending: while it
    /// stays, every entry a map had then is still at its position under its key.
    pub fn lineage(&self) -> u64 {
        self.lineage
    }
}

/// The only ways to change a tracked map that keep its lineage: values changed in
/// place, and entries appended at the end. Nothing here can remove, reorder or rename
/// an entry, which is what `persist::GraphWriter` relies on to reuse the text
/// of entries it wrote before.
impl<K: Hash + Eq, V> Tracked<IndexMap<K, V>> {
    /// The value under `key`, to change in place; keys and positions stay, so the
    /// stamp does too (values track their own changes).
    pub fn get_mut_in_place<Q>(&mut self, key: &Q) -> Option<&mut V>
    where
        Q: ?Sized + Hash + Equivalent<K>,
    {
        self.value.get_mut(key)
    }

    /// The value at position `i`, to change in place (see [`Tracked::get_mut_in_place`]).
    pub fn get_index_mut_in_place(&mut self, i: usize) -> Option<&mut V> {
        self.value.get_index_mut(i).map(|(_, v)| v)
    }

    /// Every value, to change in place (see [`Tracked::get_mut_in_place`]).
    pub fn values_in_place(&mut self) -> impl Iterator<Item = &mut V> {
        self.value.values_mut()
    }

    /// The value under `key`; when there is none, the entry `make` returns is appended
    /// at the end, which takes a fresh stamp but keeps the lineage.
    pub fn get_or_append<Q>(&mut self, key: &Q, make: impl FnOnce() -> (K, V)) -> &mut V
    where
        Q: ?Sized + Hash + Equivalent<K>,
    {
        if let Some(i) = self.value.get_index_of(key) {
            return &mut self.value[i];
        }
        self.stamp = fresh_stamp();
        let (key, value) = make();
        let (i, _) = self.value.insert_full(key, value);
        &mut self.value[i]
    }
}

impl<T: Default> Default for Tracked<T> {
    fn default() -> Self {
        Tracked::new(T::default())
    }
}

impl<T: Clone> Clone for Tracked<T> {
    fn clone(&self) -> Self {
        // Same content, same stamp: a derivation of one is a derivation of the other.
        // A new lineage: the two may be appended to differently from here on.
        Tracked {
            value: self.value.clone(),
            stamp: self.stamp,
            lineage: fresh_stamp(),
        }
    }
}

impl<T: PartialEq> PartialEq for Tracked<T> {
    fn eq(&self, other: &Self) -> bool {
        self.value == other.value
    }
}

impl<T> std::ops::Deref for Tracked<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}

impl<T> std::ops::DerefMut for Tracked<T> {
    fn deref_mut(&mut self) -> &mut T {
        self.stamp = fresh_stamp();
        self.lineage = self.stamp;
        &mut self.value
    }
}

impl<'a, T> IntoIterator for &'a Tracked<T>
where
    &'a T: IntoIterator,
{
    type Item = <&'a T as IntoIterator>::Item;
    type IntoIter = <&'a T as IntoIterator>::IntoIter;
    fn into_iter(self) -> Self::IntoIter {
        (&self.value).into_iter()
    }
}

impl<'a, T> IntoIterator for &'a mut Tracked<T>
where
    &'a mut T: IntoIterator,
{
    type Item = <&'a mut T as IntoIterator>::Item;
    type IntoIter = <&'a mut T as IntoIterator>::IntoIter;
    fn into_iter(self) -> Self::IntoIter {
        (&mut **self).into_iter()
    }
}
