//! Events: [`EventRecorder`] (`recorder`, built by `builder`) records `events.k8s.io/v1`
//! Events about objects as client-go's `tools/events` does, without ever making its caller
//! wait. [`ObjectReference`] (`reference`) names the objects, [`EventType`] (`event_type`)
//! is `Normal` or `Warning`; `series` folds repeats into an Event's `series`, `rate_limit`
//! keeps a token bucket per object, both bounded by `lru`; `event` is the written JSON,
//! `name` the Events' names, `writer` the background task that sends the writes, `stats`
//! what [`EventRecorder::stats`] reports.
//!
//! [`EventRecorder`]: crate::EventRecorder
//! [`EventRecorder::stats`]: crate::EventRecorder::stats
//! [`ObjectReference`]: crate::ObjectReference
//! [`EventType`]: crate::EventType

pub(crate) mod builder;
pub(crate) mod event;
pub(crate) mod event_type;
mod lru;
mod name;
pub(crate) mod rate_limit;
pub(crate) mod recorder;
pub(crate) mod reference;
pub(crate) mod series;
pub(crate) mod stats;
mod writer;
