//! Spans for OpenTelemetry, compiled in only with the `otel` feature.
//!
//! [`otel_span!`](crate::otel_span) takes the arguments of `tracing::info_span!`
//! (a name, then fields) and makes a span under the target `cohort::otel`, which
//! cohort exports when its `otel` feature is on and the `OTEL_*` environment asks
//! for it. Without the feature it is `tracing::Span::none()` and its field
//! expressions are not even evaluated, so the instrumented code costs nothing.

/// A span for OpenTelemetry (see the module docs): `otel_span!("name", field = value, …)`.
#[cfg(feature = "otel")]
#[macro_export]
macro_rules! otel_span {
    ($($arguments:tt)*) => {
        ::tracing::info_span!(target: "cohort::otel", $($arguments)*)
    };
}

/// A span for OpenTelemetry (see the module docs); without the `otel` feature it is
/// `tracing::Span::none()` and its arguments are not evaluated.
#[cfg(not(feature = "otel"))]
#[macro_export]
macro_rules! otel_span {
    ($($arguments:tt)*) => {
        ::tracing::Span::none()
    };
}
