//! Locks over plain data: a panic while one was held leaves the data as it was, so the server
//! keeps serving with it rather than failing every later caller.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Locks `mutex`, taking the data over from a holder that panicked.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Reads `lock`, taking the data over from a writer that panicked.
pub(crate) fn read<T>(lock: &std::sync::RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(PoisonError::into_inner)
}

/// Writes `lock`, taking the data over from a holder that panicked.
pub(crate) fn write<T>(lock: &std::sync::RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(PoisonError::into_inner)
}
