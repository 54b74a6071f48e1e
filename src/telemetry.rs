//! Logs to stderr, and with the `otel` feature, OpenTelemetry traces.
//!
//! Logging is `tracing` to stderr (stdout is the MCP channel), filtered by
//! `COHORT_LOG`/`RUST_LOG`. With the `otel` feature, the spans cohort makes with
//! [`cohort_backends::otel_span!`] (target `cohort::otel`: every tool call, backend
//! command and wait, with the tool, session, agent, team, verdict, layer and exit
//! status) are exported over OTLP when the standard environment asks for it:
//!
//! - `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) set, or
//!   `OTEL_TRACES_EXPORTER=otlp`, turns export on; `OTEL_TRACES_EXPORTER=none` or
//!   `OTEL_SDK_DISABLED=true` keeps it off;
//! - `OTEL_EXPORTER_OTLP_PROTOCOL` (or `…_TRACES_PROTOCOL`): `grpc`, or
//!   `http/protobuf` (the default);
//! - `OTEL_SERVICE_NAME` (default `cohort`), `OTEL_RESOURCE_ATTRIBUTES`,
//!   `OTEL_TRACES_SAMPLER`, `OTEL_BSP_*` and the exporter's own `OTEL_EXPORTER_OTLP_*`
//!   variables (headers, timeout) as the OpenTelemetry SDK reads them.
//!
//! Without the feature none of this is compiled and the spans are `Span::none()`.

use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::Layer;

/// What must live as long as the process logs: with OpenTelemetry on, dropping it
/// flushes the spans not yet exported.
#[derive(Debug, Default)]
#[must_use = "dropping it ends the export of traces"]
pub struct Telemetry {
    #[cfg(feature = "otel")]
    provider: Option<opentelemetry_sdk::trace::SdkTracerProvider>,
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        #[cfg(feature = "otel")]
        if let Some(provider) = self.provider.take() {
            if let Err(e) = provider.shutdown() {
                eprintln!("cohort: could not flush the last traces: {e}");
            }
        }
    }
}

/// Starts logging at `verbose` (0: warnings, 1: info and cohort's debug, more: all
/// debug) unless `COHORT_LOG`/`RUST_LOG` says otherwise, and OpenTelemetry when built
/// in and asked for. Call it inside the Tokio runtime (the gRPC exporter needs it).
pub fn init(verbose: u8) -> Telemetry {
    let default = match verbose {
        0 => "warn",
        1 => "info,cohort=debug",
        _ => "debug",
    };
    let filter = std::env::var("COHORT_LOG")
        .or_else(|_| std::env::var("RUST_LOG"))
        .unwrap_or_else(|_| default.to_string());
    let logs = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_filter(tracing_subscriber::EnvFilter::new(filter));
    #[cfg(feature = "otel")]
    {
        let provider = match otel::provider_from_env() {
            Ok(provider) => provider,
            Err(e) => {
                eprintln!("cohort: OpenTelemetry is off: {e}");
                None
            }
        };
        let traces = provider.as_ref().map(otel::layer);
        let _ = tracing_subscriber::registry()
            .with(logs)
            .with(traces)
            .try_init();
        Telemetry { provider }
    }
    #[cfg(not(feature = "otel"))]
    {
        let _ = tracing_subscriber::registry().with(logs).try_init();
        Telemetry::default()
    }
}

/// OpenTelemetry's side (the `otel` feature).
#[cfg(feature = "otel")]
pub mod otel {
    use opentelemetry::trace::TracerProvider as _;
    use opentelemetry_otlp::{Protocol, WithExportConfig};
    use opentelemetry_sdk::trace::SdkTracerProvider;
    use opentelemetry_sdk::Resource;
    use tracing_subscriber::filter::Targets;
    use tracing_subscriber::Layer;

    /// The target of cohort's spans ([`cohort_backends::otel_span!`]).
    pub const TARGET: &str = "cohort::otel";

    /// A layer that sends cohort's spans (and only those) to `provider`.
    pub fn layer<S>(provider: &SdkTracerProvider) -> impl Layer<S> + Send + Sync
    where
        S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a> + Send + Sync,
    {
        tracing_opentelemetry::layer()
            .with_tracer(provider.tracer("cohort"))
            .with_filter(Targets::new().with_target(TARGET, tracing::Level::TRACE))
    }

    /// The resource spans are reported under: `service.name` from
    /// `OTEL_SERVICE_NAME`, else `cohort`, plus `OTEL_RESOURCE_ATTRIBUTES`.
    pub fn resource() -> Resource {
        let builder = Resource::builder();
        let named = std::env::var("OTEL_SERVICE_NAME").is_ok_and(|n| !n.is_empty());
        if named {
            builder.build()
        } else {
            builder.with_service_name("cohort").build()
        }
    }

    /// The tracer provider the environment asks for (see the module docs), or
    /// `None` when it asks for none; an error says which setting is wrong.
    pub fn provider_from_env() -> Result<Option<SdkTracerProvider>, String> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        if var("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
            return Ok(None);
        }
        let endpoint = var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
            .or_else(|| var("OTEL_EXPORTER_OTLP_ENDPOINT"))
            .is_some();
        match var("OTEL_TRACES_EXPORTER").as_deref() {
            None if !endpoint => return Ok(None),
            None | Some("otlp") => {}
            Some("none") => return Ok(None),
            Some(other) => {
                return Err(format!(
                    "OTEL_TRACES_EXPORTER={other} is not supported: use otlp or none"
                ))
            }
        }
        let protocol = var("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
            .or_else(|| var("OTEL_EXPORTER_OTLP_PROTOCOL"))
            .unwrap_or_else(|| "http/protobuf".into());
        let exporter = match protocol.as_str() {
            "grpc" => opentelemetry_otlp::SpanExporter::builder()
                .with_tonic()
                .build(),
            "http/protobuf" => opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .with_protocol(Protocol::HttpBinary)
                .build(),
            other => {
                return Err(format!(
                "OTEL_EXPORTER_OTLP_PROTOCOL={other} is not supported: use grpc or http/protobuf"
            ))
            }
        }
        .map_err(|e| format!("the OTLP exporter could not be made: {e}"))?;
        Ok(Some(
            SdkTracerProvider::builder()
                .with_batch_exporter(exporter)
                .with_resource(resource())
                .build(),
        ))
    }
}
