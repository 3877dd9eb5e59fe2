//! Prometheus metrics, served as text at `/metrics`: HTTP requests and latency by route pattern,
//! open connections, and the process's own memory and CPU.

use std::sync::Arc;
use std::time::Instant;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use actix_web::web;
use prometheus::{
    Encoder, HistogramOpts, HistogramVec, IntCounterVec, IntGauge, Opts, Registry, TextEncoder,
};

/// Every metric of the server, registered in one registry.
#[derive(Clone)]
pub struct Metrics {
    registry: Registry,
    pub http_requests: IntCounterVec,
    pub http_latency: HistogramVec,
    /// TCP connections the HTTP server holds open right now (WebSockets included).
    pub open_connections: IntGauge,
    /// Engine.IO connections of the real-time channel, over any transport.
    pub realtime_connections: IntGauge,
}

impl Metrics {
    pub fn new() -> Result<Self, prometheus::Error> {
        let registry = Registry::new_custom(Some("helpnow".to_owned()), None)?;
        let http_requests = IntCounterVec::new(
            Opts::new(
                "http_requests_total",
                "HTTP requests answered, by method, route pattern and status",
            ),
            &["method", "route", "status"],
        )?;
        let http_latency = HistogramVec::new(
            HistogramOpts::new(
                "http_request_duration_seconds",
                "Time to answer an HTTP request",
            )
            .buckets(vec![
                0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
            ]),
            &["method", "route"],
        )?;
        let open_connections = IntGauge::new(
            "open_connections",
            "TCP connections open to the HTTP server",
        )?;
        let realtime_connections = IntGauge::new(
            "realtime_connections",
            "Real-time (Socket.IO) connections open, WebSocket and long-polling",
        )?;
        registry.register(Box::new(realtime_connections.clone()))?;
        registry.register(Box::new(http_requests.clone()))?;
        registry.register(Box::new(http_latency.clone()))?;
        registry.register(Box::new(open_connections.clone()))?;
        #[cfg(target_os = "linux")]
        registry.register(Box::new(
            prometheus::process_collector::ProcessCollector::for_self(),
        ))?;
        Ok(Self {
            registry,
            http_requests,
            http_latency,
            open_connections,
            realtime_connections,
        })
    }

    /// The Prometheus text exposition of every metric.
    pub fn render(&self) -> Result<String, prometheus::Error> {
        let mut buffer = Vec::new();
        TextEncoder::new().encode(&self.registry.gather(), &mut buffer)?;
        String::from_utf8(buffer).map_err(|err| prometheus::Error::Msg(err.to_string()))
    }
}

/// Counts a connection while it is open: the server keeps one in each connection's extensions,
/// and dropping it with the connection takes the count down again.
pub struct ConnectionGuard(IntGauge);

impl ConnectionGuard {
    pub fn open(gauge: &IntGauge) -> Self {
        gauge.inc();
        Self(gauge.clone())
    }
}

impl Drop for ConnectionGuard {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// Standard methods by name; anything else is `OTHER`, so clients cannot mint label values.
fn method_label(method: &actix_web::http::Method) -> &'static str {
    use actix_web::http::Method;
    match *method {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::OPTIONS => "OPTIONS",
        _ => "OTHER",
    }
}

/// Middleware: one count and one latency observation per request, labelled by the matched route
/// pattern (never the raw path, which would let clients create unbounded label values).
pub async fn track_requests(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let metrics = req.app_data::<web::Data<Arc<Metrics>>>().cloned();
    let method = method_label(req.method());
    let started = Instant::now();
    let response = next.call(req).await?;
    if let Some(metrics) = metrics {
        let route = response
            .request()
            .match_pattern()
            .unwrap_or_else(|| "unmatched".to_owned());
        let status = response.status().as_u16().to_string();
        metrics
            .http_requests
            .with_label_values(&[method, &route, &status])
            .inc();
        metrics
            .http_latency
            .with_label_values(&[method, &route])
            .observe(started.elapsed().as_secs_f64());
    }
    Ok(response)
}
