//! A TCP proxy that puts a fault between two parts of a deployment (issue 49): what goes through
//! passes, is delayed, is held (a partition that heals), or is cut (every connection reset and new
//! ones refused: a partition the peers notice), set at any moment. The fault run puts one between
//! each helpnow process and Redis, the SurrealDB server and the balancer. Loopback only: it refuses
//! an upstream elsewhere.
//!
//! What a proxy cannot do is lose packets: TCP sends a lost segment again, so loss on a link shows
//! up as delay and stalls, which is what this emulates (`Lossy`: a piece lost is sent again after
//! TCP's retransmission time-out, 200 ms doubling, and everything behind it waits, in order). Toxiproxy's toxics are
//! the model (latency, timeout, reset_peer); its Rust port `noxious` runs as a server of its own
//! and is no longer maintained, so this is the few lines the fault run needs, in its process.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// What the proxy does to what goes through it, in both directions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Everything passes at once.
    Pass,
    /// Each piece passes this long after it arrived, in order.
    Delay(Duration),
    /// Nothing passes, nothing is closed: what arrives is held until the fault changes, then
    /// passes in order (a partition that heals; the peers notice only by their own time-outs).
    Stall,
    /// Every connection is reset, and new ones are reset as soon as they are taken.
    Cut,
    /// Each piece is lost with this chance in percent, and passes once TCP would have sent it
    /// again: after 200 ms, then 400 ms more if lost again, and so on; what follows waits behind it.
    Lossy(u8),
}

/// TCP's least retransmission time-out on Linux (`TCP_RTO_MIN`).
const RETRANSMISSION: Duration = Duration::from_millis(200);

/// When a piece read now passes, under `fault`.
fn due(fault: Fault) -> Instant {
    let now = Instant::now();
    match fault {
        Fault::Delay(delay) => now + delay,
        Fault::Lossy(percent) => {
            let chance = f64::from(percent.min(99)) / 100.0;
            let mut wait = Duration::ZERO;
            let mut timeout = RETRANSMISSION;
            while rand::random_bool(chance) {
                wait += timeout;
                timeout *= 2;
            }
            now + wait
        }
        Fault::Pass | Fault::Stall | Fault::Cut => now,
    }
}

/// How many pieces wait in one direction of a connection before the proxy stops reading it (and
/// TCP's own window holds the sender).
const WAITING: usize = 256;

/// The largest piece read at once.
const PIECE: usize = 16 * 1024;

/// A proxy on a loopback port of its own to `upstream`; stopped (with its connections) when
/// dropped.
pub struct FaultProxy {
    address: SocketAddr,
    fault: watch::Sender<Fault>,
    accepting: JoinHandle<()>,
}

impl FaultProxy {
    /// Listens on `127.0.0.1:0` and passes every connection on to `upstream` (a loopback
    /// address), with `Fault::Pass`.
    pub async fn start(upstream: SocketAddr) -> io::Result<Self> {
        if !upstream.ip().is_loopback() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("faults stay on this machine's loopback: {upstream} is not"),
            ));
        }
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let address = listener.local_addr()?;
        let (fault, faults) = watch::channel(Fault::Pass);
        let accepting = tokio::spawn(accept(listener, upstream, faults));
        Ok(Self {
            address,
            fault,
            accepting,
        })
    }

    /// Where the part that should go through the proxy connects.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Sets the fault from now on, for the connections open and those to come.
    pub fn set(&self, fault: Fault) {
        self.fault.send_replace(fault);
    }

    pub fn fault(&self) -> Fault {
        *self.fault.borrow()
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.accepting.abort();
        // The connections' tasks see the fault's sender gone and close.
    }
}

async fn accept(listener: TcpListener, upstream: SocketAddr, faults: watch::Receiver<Fault>) {
    loop {
        let Ok((inbound, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        if *faults.borrow() == Fault::Cut {
            reset(&inbound);
            continue;
        }
        tokio::spawn(connection(inbound, upstream, faults.clone()));
    }
}

/// Closes `stream` with a reset rather than a FIN, when it is dropped.
fn reset(stream: &TcpStream) {
    let _ = stream.set_zero_linger();
}

/// One connection: a piece read on one side is written on the other when the fault lets it.
async fn connection(inbound: TcpStream, upstream: SocketAddr, mut faults: watch::Receiver<Fault>) {
    let Ok(outbound) = TcpStream::connect(upstream).await else {
        reset(&inbound);
        return;
    };
    let _ = (inbound.set_nodelay(true), outbound.set_nodelay(true));
    let (inbound, outbound) = (Arc::new(inbound), Arc::new(outbound));
    let (mut readers, mut writers) = (tokio::task::JoinSet::new(), tokio::task::JoinSet::new());
    for (from, to) in [
        (inbound.clone(), outbound.clone()),
        (outbound.clone(), inbound.clone()),
    ] {
        let (pieces, waiting) = mpsc::channel(WAITING);
        readers.spawn(read_side(from, pieces, faults.clone()));
        writers.spawn(write_side(to, waiting, faults.clone()));
    }
    tokio::select! {
        // One side closed (and what it sent before was passed on: its writer ends once its
        // reader ended and the pieces waiting were written), or a write failed: the whole
        // connection is closed.
        _ = writers.join_next() => {}
        cut = faults.wait_for(|fault| *fault == Fault::Cut) => {
            if cut.is_ok() {
                reset(&inbound);
                reset(&outbound);
            }
        }
    }
    readers.abort_all();
    writers.abort_all();
    while readers.join_next().await.is_some() {}
    while writers.join_next().await.is_some() {}
}

/// Reads pieces from `from`, each with the moment it is due on the other side.
async fn read_side(
    from: Arc<TcpStream>,
    pieces: mpsc::Sender<(Instant, Vec<u8>)>,
    faults: watch::Receiver<Fault>,
) {
    let mut buffer = vec![0; PIECE];
    loop {
        if from.readable().await.is_err() {
            return;
        }
        let read = match from.try_read(&mut buffer) {
            // Closed by its peer.
            Ok(0) => return,
            Ok(read) => read,
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => continue,
            Err(_) => return,
        };
        let due = due(*faults.borrow());
        if pieces.send((due, buffer[..read].to_vec())).await.is_err() {
            return;
        }
    }
}

/// Writes the pieces to `to` when they are due and nothing holds them.
async fn write_side(
    to: Arc<TcpStream>,
    mut waiting: mpsc::Receiver<(Instant, Vec<u8>)>,
    mut faults: watch::Receiver<Fault>,
) {
    while let Some((due, piece)) = waiting.recv().await {
        tokio::time::sleep_until(due).await;
        if faults
            .wait_for(|fault| *fault != Fault::Stall)
            .await
            .is_err()
        {
            return;
        }
        let mut rest = piece.as_slice();
        while !rest.is_empty() {
            if to.writable().await.is_err() {
                return;
            }
            match to.try_write(rest) {
                Ok(written) => rest = &rest[written..],
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => {}
                Err(_) => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// A server that sends back what it reads.
    async fn echo() -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bound");
        let address = listener.local_addr().expect("address");
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut buffer = [0; 1024];
                    while let Ok(read) = stream.read(&mut buffer).await {
                        if read == 0 || stream.write_all(&buffer[..read]).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        address
    }

    async fn round_trip(stream: &mut TcpStream, text: &[u8], within: Duration) -> Option<Vec<u8>> {
        stream.write_all(text).await.expect("written");
        let mut back = vec![0; text.len()];
        tokio::time::timeout(within, stream.read_exact(&mut back))
            .await
            .ok()
            .and_then(Result::ok)
            .map(|_| back)
    }

    #[tokio::test]
    async fn it_passes_delays_holds_and_cuts() {
        let proxy = FaultProxy::start(echo().await).await.expect("started");
        let mut client = TcpStream::connect(proxy.address())
            .await
            .expect("connected");
        let second = Duration::from_secs(1);
        assert_eq!(
            round_trip(&mut client, b"hello", second).await.as_deref(),
            Some(&b"hello"[..])
        );

        // Delayed both ways: the echo comes no sooner than twice the delay.
        proxy.set(Fault::Delay(Duration::from_millis(150)));
        let sent = std::time::Instant::now();
        assert_eq!(
            round_trip(&mut client, b"slow", second).await.as_deref(),
            Some(&b"slow"[..])
        );
        assert!(
            sent.elapsed() >= Duration::from_millis(300),
            "{:?}",
            sent.elapsed()
        );

        // Held: nothing comes back, until it heals; then all of it, in order.
        proxy.set(Fault::Stall);
        assert_eq!(
            round_trip(&mut client, b"held", Duration::from_millis(300)).await,
            None
        );
        client.write_all(b"-more").await.expect("written");
        proxy.set(Fault::Pass);
        let mut back = vec![0; 9];
        tokio::time::timeout(second, client.read_exact(&mut back))
            .await
            .expect("released")
            .expect("read");
        assert_eq!(back, b"held-more");

        // Cut: the open connection is reset, and so is a new one, until it heals.
        proxy.set(Fault::Cut);
        let mut buffer = [0; 8];
        let read = tokio::time::timeout(second, client.read(&mut buffer))
            .await
            .expect("the cut is seen at once");
        assert!(
            matches!(&read, Err(error) if error.kind() == io::ErrorKind::ConnectionReset),
            "reset: {read:?}"
        );
        let mut refused = TcpStream::connect(proxy.address()).await.expect("taken");
        let read = tokio::time::timeout(second, refused.read(&mut buffer))
            .await
            .expect("reset at once");
        assert!(matches!(read, Err(_) | Ok(0)), "{read:?}");
        proxy.set(Fault::Pass);
        let mut client = TcpStream::connect(proxy.address())
            .await
            .expect("connected");
        assert_eq!(
            round_trip(&mut client, b"again", second).await.as_deref(),
            Some(&b"again"[..])
        );
    }

    /// What a client sent before it closed reaches the other side, also when it was delayed.
    #[tokio::test]
    async fn what_was_sent_before_a_close_still_passes() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bound");
        let upstream = listener.local_addr().expect("address");
        let received = tokio::spawn(async move {
            let (mut stream, _) = listener.accept().await.expect("accepted");
            let mut all = Vec::new();
            let _ = stream.read_to_end(&mut all).await;
            all
        });
        let proxy = FaultProxy::start(upstream).await.expect("started");
        proxy.set(Fault::Delay(Duration::from_millis(100)));
        let mut client = TcpStream::connect(proxy.address())
            .await
            .expect("connected");
        client.write_all(b"bye").await.expect("written");
        client.shutdown().await.expect("closed");
        let all = tokio::time::timeout(Duration::from_secs(2), received)
            .await
            .expect("the upstream saw the end")
            .expect("joined");
        assert_eq!(all, b"bye");
    }

    /// A lossy link loses nothing and reorders nothing: a piece lost waits a retransmission time-out.
    #[tokio::test]
    async fn a_lossy_link_passes_everything_in_order_some_of_it_late() {
        let proxy = FaultProxy::start(echo().await).await.expect("started");
        proxy.set(Fault::Lossy(50));
        let mut client = TcpStream::connect(proxy.address())
            .await
            .expect("connected");
        let mut slowest = Duration::ZERO;
        for n in 0..20 {
            let piece = format!("piece {n:02}");
            let sent = std::time::Instant::now();
            let back = round_trip(&mut client, piece.as_bytes(), Duration::from_secs(30)).await;
            assert_eq!(back.as_deref(), Some(piece.as_bytes()));
            slowest = slowest.max(sent.elapsed());
        }
        // Each way loses half the pieces: twenty round trips without one retransmission would
        // happen once in 4^20.
        assert!(slowest >= RETRANSMISSION, "{slowest:?}");
    }

    #[tokio::test]
    async fn it_stays_on_loopback() {
        let elsewhere: SocketAddr = "192.0.2.1:6379".parse().expect("address");
        let refused = FaultProxy::start(elsewhere).await;
        assert!(matches!(refused, Err(error) if error.kind() == io::ErrorKind::InvalidInput));
    }
}
