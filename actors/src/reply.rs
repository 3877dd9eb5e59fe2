//! `Reply`: the one answer an actor owes a client's request (a Socket.IO acknowledgement in the
//! server), sent at most once, possibly after async work.

/// A one-shot answer to a client.
pub struct Reply<T>(Option<Box<dyn FnOnce(T) + Send>>);

impl<T> Reply<T> {
    pub fn new(send: impl FnOnce(T) + Send + 'static) -> Self {
        Self(Some(Box::new(send)))
    }

    /// For a client that did not ask for an answer.
    pub fn none() -> Self {
        Self(None)
    }

    pub(crate) fn send(mut self, value: T) {
        if let Some(send) = self.0.take() {
            send(value);
        }
    }
}

impl<T> std::fmt::Debug for Reply<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Reply"
        } else {
            "Reply(none)"
        })
    }
}
