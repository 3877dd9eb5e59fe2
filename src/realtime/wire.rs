//! WebSocket frames straight on the TCP stream, with buffers that exist only while they hold
//! bytes. An idle connection then costs no buffer at all, where actix-http's HTTP/1 dispatcher
//! keeps 8 KiB to read and 8 KiB to write for a WebSocket's whole life (docs/benchmarks.md).
//!
//! [`FrameReader`] is the stream of frames the client sends; [`FrameWriter`] is how the
//! connection's actor writes; [`Flush::run`] is the future that writes what the actor queued, and
//! ends once the actor is gone and its last frames are out (or the client stopped reading).
//! What the socket does not take waits in memory up to a bound; past it the frames are dropped
//! and the connection is cut ([`FrameWriter::overflowed`]).

use std::cell::RefCell;
use std::future::poll_fn;
use std::io;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker, ready};
use std::time::Duration;

use actix_codec::{Decoder, Encoder};
use actix_http::ws::{CloseReason, Codec, Frame, Message, ProtocolError};
use bytes::{Buf, Bytes, BytesMut};
use bytestring::ByteString;
use futures_util::Stream;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};

/// Bytes read from the socket in one go. Read onto the stack: only what does not make a whole
/// frame yet is kept on the heap.
const READ_CHUNK: usize = 4096;

/// Frames from the client, decoded as they arrive.
pub(crate) struct FrameReader {
    /// Always present until dropped; then it goes to `flush`, to read what the client still sends.
    io: Option<OwnedReadHalf>,
    /// Bytes of frames not complete yet; empty (and unallocated) between frames.
    pending: BytesMut,
    codec: Codec,
    done: bool,
    /// Where the socket's read half goes when the reader is dropped.
    flush: Option<Rc<RefCell<Outgoing>>>,
}

impl FrameReader {
    /// `early` is what the HTTP layer already read past the upgrade request.
    pub fn new(io: OwnedReadHalf, early: BytesMut, max_frame: usize) -> Self {
        Self {
            io: Some(io),
            // The dispatcher's read buffer, 8 KiB, would stay allocated for nothing.
            pending: if early.is_empty() {
                BytesMut::new()
            } else {
                early
            },
            codec: Codec::new().max_size(max_frame),
            done: false,
            flush: None,
        }
    }

    /// Once this reader is dropped, `flush` reads (and discards) what the client still sends
    /// after the last frames went out, as a closing HTTP server lingers: closing a socket with
    /// unread bytes makes the kernel reset the connection, which can lose those last frames.
    pub fn returning_to(mut self, flush: &Flush) -> Self {
        self.flush = Some(flush.0.clone());
        self
    }
}

impl Drop for FrameReader {
    fn drop(&mut self) {
        if let (Some(flush), Some(io)) = (&self.flush, self.io.take()) {
            flush.borrow_mut().reader = Some(io);
        }
    }
}

impl Stream for FrameReader {
    type Item = Result<Frame, ProtocolError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if this.done {
                return Poll::Ready(None);
            }
            if !this.pending.is_empty() {
                match this.codec.decode(&mut this.pending) {
                    Ok(Some(frame)) => {
                        if this.pending.is_empty() {
                            // A frame's payload shares the buffer; the next frame gets its own.
                            this.pending = BytesMut::new();
                        }
                        return Poll::Ready(Some(Ok(frame)));
                    }
                    Ok(None) => {}
                    Err(error) => {
                        this.done = true;
                        return Poll::Ready(Some(Err(error)));
                    }
                }
            }
            let Some(io) = this.io.as_mut() else {
                return Poll::Ready(None);
            };
            let mut chunk = [MaybeUninit::<u8>::uninit(); READ_CHUNK];
            let mut read = ReadBuf::uninit(&mut chunk);
            match ready!(Pin::new(io).poll_read(cx, &mut read)) {
                Ok(()) if read.filled().is_empty() => {
                    this.done = true;
                    return Poll::Ready(None);
                }
                Ok(()) => this.pending.extend_from_slice(read.filled()),
                Err(error) => {
                    this.done = true;
                    return Poll::Ready(Some(Err(ProtocolError::Io(error))));
                }
            }
        }
    }
}

struct Outgoing {
    /// Encoded frames not written yet; unallocated once written.
    queued: BytesMut,
    codec: Codec,
    /// No more frames: the flush ends once the queued ones are out.
    finished: bool,
    /// Frames queue without being written until [`FrameWriter::release`] (the actor's turn is
    /// not over: what else it sends in it goes in the same system call).
    held: bool,
    /// The flush, waiting for frames.
    waiting: Option<Waker>,
    /// The socket's read half, once the reader is gone.
    reader: Option<OwnedReadHalf>,
    /// The socket's write half, until the flush ends.
    socket: Option<OwnedWriteHalf>,
    /// Most bytes `queued` may hold beyond what the socket takes (`None`: no bound).
    limit: Option<usize>,
    /// The client left more than `limit` unread: the frames were dropped, no more are taken, and
    /// the socket is reset rather than closed.
    overflowed: bool,
}

impl Outgoing {
    fn over_limit(&self) -> bool {
        self.limit.is_some_and(|limit| self.queued.len() > limit)
    }
}

/// The connection's writing end: frames are queued at once and written by its [`Flush`], in
/// order, several in one system call when they come together. Dropping it finishes it.
pub(crate) struct FrameWriter(Rc<RefCell<Outgoing>>);

/// What writes a [`FrameWriter`]'s frames to the socket.
pub(crate) struct Flush(Rc<RefCell<Outgoing>>);

/// Takes `n` written bytes off the front of `queued`; once it is empty its memory goes back.
fn written(queued: &mut BytesMut, n: usize) {
    queued.advance(n);
    if queued.is_empty() {
        *queued = BytesMut::new();
    }
}

/// Writes the queued frames at once, in the actor's own turn, while the socket takes them; the
/// flush task is woken only for what it does not take (or to see an error). What the socket does
/// not take beyond the bound overflows: a client that reads nothing would otherwise make the
/// server hold whatever it is sent.
fn write_now(out: &mut Outgoing) {
    if let Some(socket) = out.socket.as_ref() {
        while !out.queued.is_empty() {
            match socket.try_write(&out.queued) {
                Ok(n) if n > 0 => written(&mut out.queued, n),
                _ => break,
            }
        }
        if out.queued.is_empty() {
            return;
        }
    }
    if out.over_limit() {
        out.overflowed = true;
        out.finished = true;
        out.queued = BytesMut::new();
    }
    if let Some(waker) = out.waiting.take() {
        waker.wake();
    }
}

/// A writer on `socket` and the flush that goes with it; at most `limit` bytes wait for the
/// client beyond what the socket takes.
pub(crate) fn frame_writer(socket: OwnedWriteHalf, limit: Option<usize>) -> (FrameWriter, Flush) {
    let shared = Rc::new(RefCell::new(Outgoing {
        queued: BytesMut::new(),
        codec: Codec::new(),
        finished: false,
        held: false,
        waiting: None,
        reader: None,
        socket: Some(socket),
        limit,
        overflowed: false,
    }));
    (FrameWriter(shared.clone()), Flush(shared))
}

impl FrameWriter {
    fn queue(&self, message: Message) {
        let mut out = self.0.borrow_mut();
        if out.finished {
            return;
        }
        let Outgoing { queued, codec, .. } = &mut *out;
        if let Err(error) = codec.encode(message, queued) {
            tracing::debug!(%error, "WebSocket frame not encoded");
            return;
        }
        // A turn's frames wait for its end, unless they pass the bound: then the socket takes
        // what it will at once, and the rest overflows.
        if !out.held || out.over_limit() {
            write_now(&mut out);
        }
    }

    /// Whether the client left more than the bound unread: its frames were dropped and the
    /// connection is to be closed (the socket is reset).
    pub fn overflowed(&self) -> bool {
        self.0.borrow().overflowed
    }

    /// Holds the frames queued from now on until [`FrameWriter::release`]; `true` if this call
    /// began the hold.
    pub fn hold(&self) -> bool {
        !std::mem::replace(&mut self.0.borrow_mut().held, true)
    }

    /// Writes what was held, and each frame at once again from now on.
    pub fn release(&self) {
        let mut out = self.0.borrow_mut();
        out.held = false;
        write_now(&mut out);
    }

    pub fn text(&self, text: String) {
        self.queue(Message::Text(ByteString::from(text)));
    }

    pub fn binary(&self, data: Bytes) {
        self.queue(Message::Binary(data));
    }

    pub fn pong(&self, data: Bytes) {
        self.queue(Message::Pong(data));
    }

    /// A close frame, the last: nothing queued after it is sent.
    pub fn close(&self, reason: Option<CloseReason>) {
        self.queue(Message::Close(reason));
        self.finish();
    }

    /// No more frames; what is queued still goes out.
    pub fn finish(&self) {
        let mut out = self.0.borrow_mut();
        out.finished = true;
        if let Some(waker) = out.waiting.take() {
            waker.wake();
        }
    }
}

impl Drop for FrameWriter {
    fn drop(&mut self) {
        self.finish();
    }
}

impl Flush {
    /// Writes what the writer queues to `io` until the writer finished and its frames are out.
    /// A client that stops reading gets `linger` after the writer finished, then the connection
    /// ends.
    pub async fn run(self, linger: Duration) {
        let shared = self.0;
        let mut deadline: Option<Pin<Box<tokio::time::Sleep>>> = None;
        let written = poll_fn(|cx| {
            let mut out = shared.borrow_mut();
            let Outgoing {
                queued,
                finished,
                waiting,
                socket,
                overflowed,
                ..
            } = &mut *out;
            let Some(socket) = socket.as_mut() else {
                return Poll::Ready(Err(io::ErrorKind::NotConnected.into()));
            };
            if *overflowed {
                return Poll::Ready(Err(io::Error::other("the client stopped reading")));
            }
            while !queued.is_empty() {
                match Pin::new(&mut *socket).poll_write(cx, queued) {
                    Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                    Poll::Ready(Ok(n)) => written(queued, n),
                    Poll::Ready(Err(error)) => return Poll::Ready(Err(error)),
                    Poll::Pending => {
                        // Woken when the socket can take more, or when the writer finishes.
                        *waiting = Some(cx.waker().clone());
                        if *finished {
                            let sleep = deadline
                                .get_or_insert_with(|| Box::pin(tokio::time::sleep(linger)));
                            if sleep.as_mut().poll(cx).is_ready() {
                                return Poll::Ready(Err(io::ErrorKind::TimedOut.into()));
                            }
                        }
                        return Poll::Pending;
                    }
                }
            }
            if *finished {
                return Poll::Ready(Ok(()));
            }
            *waiting = Some(cx.waker().clone());
            Poll::Pending
        })
        .await;
        // Whatever could not be written is dropped, and nothing more is queued.
        let (socket, overflowed) = {
            let mut out = shared.borrow_mut();
            out.finished = true;
            out.queued = BytesMut::new();
            (out.socket.take(), out.overflowed)
        };
        let Some(mut socket) = socket else { return };
        if overflowed {
            // What the kernel still holds for the client goes too: the socket is reset once
            // closed, instead of waiting for the client to read it.
            let _ = socket.as_ref().set_zero_linger();
        }
        match written {
            // A TCP write half shuts down at once (it sends the FIN); nothing to wait for.
            Ok(()) => {
                let _ = poll_fn(|cx| Pin::new(&mut socket).poll_shutdown(cx)).await;
                let reader = shared.borrow_mut().reader.take();
                if let Some(reader) = reader {
                    // Boxed: only a closing socket pays for the timer.
                    let _ = Box::pin(tokio::time::timeout(DRAIN, drain(reader))).await;
                }
            }
            Err(error) => tracing::debug!(%error, "WebSocket write ended"),
        }
    }
}

/// How long a closed socket reads what the client still sends (its close frame, mostly): what
/// actix-http's `client_disconnect_timeout` gave the WebSockets it carried.
const DRAIN: Duration = Duration::from_secs(1);

/// Reads and drops what arrives until the client closes its side.
async fn drain(mut reader: OwnedReadHalf) {
    use tokio::io::AsyncReadExt;
    let mut sink = [0u8; 1024];
    while let Ok(read) = reader.read(&mut sink).await {
        if read == 0 {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    use futures_util::StreamExt;

    /// The whole frames a client decodes from `bytes`.
    fn frames_in(bytes: &[u8]) -> Vec<Frame> {
        let mut received = BytesMut::from(bytes);
        let mut decoder = Codec::new().client_mode();
        let mut frames = Vec::new();
        while let Some(frame) = decoder.decode(&mut received).expect("decode") {
            frames.push(frame);
        }
        frames
    }

    async fn pair() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let address = listener.local_addr().expect("address");
        let (client, accepted) = tokio::join!(TcpStream::connect(address), listener.accept());
        (client.expect("connect"), accepted.expect("accept").0)
    }

    /// A frame as a browser sends it: masked.
    fn client_frame(message: Message) -> BytesMut {
        let mut buf = BytesMut::new();
        Codec::new()
            .client_mode()
            .encode(message, &mut buf)
            .expect("encode");
        buf
    }

    #[tokio::test]
    async fn frames_split_across_reads_and_read_early_come_out_whole() {
        let (mut client, server) = pair().await;
        let (read, _write) = server.into_split();
        let first = client_frame(Message::Text("4hello".into()));
        let second = client_frame(Message::Binary(Bytes::from_static(b"\x01\x02")));
        // The first frame was read with the upgrade request; the second arrives in two pieces.
        let mut reader = FrameReader::new(read, first, 1024);
        client.write_all(&second[..3]).await.expect("write");
        client.flush().await.expect("flush");
        assert_eq!(
            reader.next().await.expect("frame").expect("ok"),
            Frame::Text(Bytes::from_static(b"4hello"))
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
        client.write_all(&second[3..]).await.expect("write");
        assert_eq!(
            reader.next().await.expect("frame").expect("ok"),
            Frame::Binary(Bytes::from_static(b"\x01\x02"))
        );
        assert!(
            reader.pending.capacity() == 0,
            "nothing kept between frames"
        );
        drop(client);
        assert!(
            reader.next().await.is_none(),
            "the stream ends with the connection"
        );
    }

    #[tokio::test]
    async fn a_frame_past_the_limit_is_an_error() {
        let (mut client, server) = pair().await;
        let (read, _write) = server.into_split();
        let mut reader = FrameReader::new(read, BytesMut::new(), 8);
        client
            .write_all(&client_frame(Message::Text("0123456789".into())))
            .await
            .expect("write");
        assert!(matches!(reader.next().await, Some(Err(_))));
        assert!(reader.next().await.is_none());
    }

    #[tokio::test]
    async fn frames_held_for_a_turn_go_out_together_when_released() {
        let (mut client, server) = pair().await;
        let (_read, write) = server.into_split();
        let (writer, _flush) = frame_writer(write, None);
        assert!(writer.hold(), "the first write of a turn begins the hold");
        writer.text("42[\"typing\"]".to_owned());
        assert!(!writer.hold(), "the hold goes on");
        writer.text("43[\"ack\"]".to_owned());
        let mut buffer = [0u8; 64];
        let early = tokio::time::timeout(Duration::from_millis(50), client.read(&mut buffer)).await;
        assert!(early.is_err(), "nothing is written while held");
        writer.release();
        // Both frames, in order, arrive in one read: they went out in one write.
        let n = client.read(&mut buffer).await.expect("read");
        assert_eq!(
            frames_in(&buffer[..n]),
            vec![
                Frame::Text(Bytes::from_static(b"42[\"typing\"]")),
                Frame::Text(Bytes::from_static(b"43[\"ack\"]")),
            ]
        );
        // Released, a frame is written at once again.
        writer.text("3".to_owned());
        let n = client.read(&mut buffer).await.expect("read");
        assert_eq!(&buffer[..n], b"\x81\x013");
    }

    #[tokio::test]
    async fn queued_frames_go_out_in_order_and_the_flush_ends_after_the_close() {
        let local = tokio::task::LocalSet::new();
        local
            .run_until(async {
                let (mut client, server) = pair().await;
                let (_read, write) = server.into_split();
                let (writer, flush) = frame_writer(write, None);
                writer.text("0{}".to_owned());
                let flushing = tokio::task::spawn_local(flush.run(Duration::from_secs(5)));
                writer.binary(Bytes::from_static(b"\x07"));
                writer.close(None);
                writer.text("not sent".to_owned());
                flushing.await.expect("flush");
                let mut received = Vec::new();
                client.read_to_end(&mut received).await.expect("read");
                assert_eq!(
                    frames_in(&received),
                    vec![
                        Frame::Text(Bytes::from_static(b"0{}")),
                        Frame::Binary(Bytes::from_static(b"\x07")),
                        Frame::Close(None),
                    ]
                );
            })
            .await;
    }

    /// Closing a socket with bytes unread makes the kernel reset the connection, which on a real
    /// network can drop the close frame still on its way: after the close, the socket reads what
    /// the client still sends until the client closes too (or a second passes).
    #[tokio::test]
    async fn after_the_close_the_socket_reads_until_the_client_closes() {
        let local = tokio::task::LocalSet::new();
        local
            .run_until(async {
                let (mut client, server) = pair().await;
                let (read, write) = server.into_split();
                let (writer, flush) = frame_writer(write, None);
                let reader = FrameReader::new(read, BytesMut::new(), 1024).returning_to(&flush);
                // Bytes the connection never got to read.
                client
                    .write_all(&client_frame(Message::Text("4late".into())))
                    .await
                    .expect("write");
                writer.close(None);
                drop(reader);
                drop(writer);
                let flushing = tokio::task::spawn_local(flush.run(Duration::from_secs(5)));
                let mut received = Vec::new();
                client.read_to_end(&mut received).await.expect("read");
                let mut received = BytesMut::from(&received[..]);
                assert_eq!(
                    Codec::new()
                        .client_mode()
                        .decode(&mut received)
                        .expect("decode"),
                    Some(Frame::Close(None))
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
                assert!(!flushing.is_finished(), "the socket still reads");
                // The client answers the close and hangs up: the socket is let go at once.
                client
                    .write_all(&client_frame(Message::Close(None)))
                    .await
                    .expect("close reply");
                drop(client);
                tokio::time::timeout(Duration::from_millis(500), flushing)
                    .await
                    .expect("done once the client closed")
                    .expect("flush");
            })
            .await;
    }

    #[tokio::test]
    async fn a_client_that_leaves_more_than_the_bound_unread_is_cut_off_at_once() {
        let local = tokio::task::LocalSet::new();
        local
            .run_until(async {
                let (mut client, server) = pair().await;
                let (read, write) = server.into_split();
                drop(read);
                let (writer, flush) = frame_writer(write, Some(64 * 1024));
                let flushing = tokio::task::spawn_local(flush.run(Duration::from_secs(60)));
                let mut sent = 0;
                while !writer.overflowed() {
                    assert!(sent < 64, "16 MB unread and still queued");
                    writer.binary(Bytes::from(vec![0u8; 256 * 1024]));
                    sent += 1;
                }
                assert!(
                    writer.0.borrow().queued.is_empty(),
                    "the frames are dropped"
                );
                writer.text("after the overflow".to_owned());
                assert!(writer.0.borrow().queued.is_empty(), "and no more are taken");
                // The flush ends without its linger, and the socket is reset: what the kernel
                // held for the client is dropped too.
                tokio::time::timeout(Duration::from_secs(10), flushing)
                    .await
                    .expect("the flush ends")
                    .expect("flush");
                let mut received = Vec::new();
                let read = client.read_to_end(&mut received).await;
                assert_eq!(
                    read.map_err(|error| error.kind()),
                    Err(io::ErrorKind::ConnectionReset)
                );
            })
            .await;
    }

    #[tokio::test]
    async fn a_client_that_stops_reading_is_let_go_after_the_linger() {
        let local = tokio::task::LocalSet::new();
        local
            .run_until(async {
                let (_client, server) = pair().await;
                let (_read, write) = server.into_split();
                let (writer, flush) = frame_writer(write, None);
                // Far more than the socket buffers take while the client reads nothing.
                for _ in 0..64 {
                    writer.binary(Bytes::from(vec![0u8; 256 * 1024]));
                }
                writer.finish();
                tokio::time::timeout(
                    Duration::from_secs(10),
                    flush.run(Duration::from_millis(200)),
                )
                .await
                .expect("the flush gives up");
                assert!(writer.0.borrow().queued.is_empty());
            })
            .await;
    }
}
