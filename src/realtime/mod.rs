//! The real-time channel: Engine.IO v4 below, Socket.IO v5 above, as the official client speaks them.
//! This layer holds the pure codecs; the transports and namespaces build on them.

pub mod engineio;
pub mod socketio;
