//! The decoding settings both lister-watcher builders share
//! ([`HttpListerWatcherBuilder`](crate::HttpListerWatcherBuilder) and, with the `kube` feature,
//! `KubeListerWatcherBuilder`): one definition, expanded into each builder, so their names,
//! defaults and documentation cannot drift apart.

/// Expands, inside `impl<T> Builder<T>` of a builder whose `inner.decoding` is a
/// [`Decoding`](crate::decode::response::Decoding), to `skip_managed_fields`,
/// `exact_capacities`, `max_event_size` and `max_list_bytes`.
macro_rules! decoding_setters {
    () => {
        /// Drop `metadata.managedFields` while parsing, so it is never built: about half the
        /// decode time and memory of a typical typed Pod. On by default (server-side apply's
        /// bookkeeping, which controllers do not read from a cache); turn it off to keep them.
        pub fn skip_managed_fields(mut self, skip: bool) -> Self {
            self.inner.decoding.options.skip_managed_fields = skip;
            self
        }

        /// Allocate every vector of a decoded object at its final size. On by default.
        ///
        /// `serde_json` gives no lengths, so a `Vec` grows by doubling and keeps the slack:
        /// about a sixth of a typed k8s-openapi `Pod`. With this on, each object is first
        /// scanned to count the elements of its arrays, and every vector is allocated once at
        /// its final size: less memory per cached object for a little more decoding time (the
        /// README's bench section has the figures; `cargo bench -p kcache-client-http --bench
        /// decode -- pod/` measures the scan). It pays for itself: less memory to touch makes
        /// the initial sync faster too. Types that ignore size hints (`DynamicObject`) gain
        /// nothing; turn it off to save the scan.
        pub fn exact_capacities(mut self, on: bool) -> Self {
            self.inner.decoding.options.exact_capacities = on;
            self
        }

        /// The largest watch event accepted, in bytes (default
        /// [`DEFAULT_MAX_EVENT_SIZE`](crate::DEFAULT_MAX_EVENT_SIZE)); a larger one is reported
        /// and skipped.
        pub fn max_event_size(mut self, bytes: usize) -> Self {
            self.inner.decoding.max_event_size = bytes.max(1);
            self
        }

        /// The largest list response accepted, in bytes (default
        /// [`DEFAULT_MAX_LIST_BYTES`](crate::DEFAULT_MAX_LIST_BYTES)): the body is never
        /// buffered past it, and a larger one fails the list with
        /// [`Error::Limit`](kcache_reflector::Error::Limit).
        pub fn max_list_bytes(mut self, bytes: usize) -> Self {
            self.inner.decoding.max_list_bytes = bytes.max(1);
            self
        }

        /// The most objects one list response may hold, undecodable ones included (default
        /// [`DEFAULT_MAX_LIST_OBJECTS`](kcache_reflector::DEFAULT_MAX_LIST_OBJECTS), the
        /// reflector's own bound on a whole list): items past it are not built, and the list
        /// fails with [`Error::Limit`](kcache_reflector::Error::Limit). `max_list_bytes`
        /// bounds the wire; this bounds the decoded objects, which take several times their
        /// JSON in memory, so that a list that never ends cannot take more than a few GiB.
        pub fn max_list_objects(mut self, objects: usize) -> Self {
            self.inner.decoding.max_list_objects = objects.max(1);
            self
        }
    };
}

/// Expands, inside `impl<K: DeserializeOwned + 'static> Builder<Compact<K>>`, to `codec`.
macro_rules! codec_setter {
    () => {
        /// The codec that builds the compact objects (by default `CompactCodec::new()`:
        /// managedFields dropped, dictionary learned from the first object). The serde options
        /// (`skip_managed_fields`, `exact_capacities`) do not apply to compact objects. The
        /// codec is given the resource's type
        /// ([`expect_type`](kcache_store::CompactCodec::expect_type)), so that the compact
        /// form refuses what a typed decode refuses. With
        /// [`protobuf`](Self::protobuf), protobuf answers are kept compact in protobuf by the
        /// same codec (see [`Compact::encoding`](kcache_store::Compact::encoding)).
        pub fn codec(mut self, codec: kcache_store::CompactCodec) -> Self {
            let codec =
                std::sync::Arc::new(codec.expect_type(self.inner.decoding.expected.r#type.clone()));
            self.inner.decoding.objects =
                Some($crate::decode::compact::compact_objects(codec.clone()));
            self.inner.decoding.proto_objects = Some(
                $crate::decode::compact_protobuf::compact_proto_objects(codec),
            );
            self
        }
    };
}

pub(crate) use {codec_setter, decoding_setters};
