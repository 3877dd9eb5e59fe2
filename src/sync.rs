//! Locks over plain data: a panic while one was held leaves the data as it was, so the server
//! keeps serving with it rather than failing every later caller.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Locks `mutex`, taking the data over from a holder that panicked.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
