//! `Object` for every k8s-openapi type with `ObjectMeta` (feature `k8s-openapi`).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::Object;

impl<K> Object for K
where
    K: k8s_openapi::Metadata<Ty = ObjectMeta> + Send + Sync + 'static,
{
    fn name(&self) -> Option<&str> {
        self.metadata().name.as_deref()
    }
    fn namespace(&self) -> Option<&str> {
        self.metadata().namespace.as_deref()
    }
    fn resource_version(&self) -> Option<&str> {
        self.metadata().resource_version.as_deref()
    }
    fn uid(&self) -> Option<&str> {
        self.metadata().uid.as_deref()
    }
    fn labels(&self) -> Option<&BTreeMap<String, String>> {
        self.metadata().labels.as_ref()
    }
    fn annotations(&self) -> Option<&BTreeMap<String, String>> {
        self.metadata().annotations.as_ref()
    }
    fn is_being_deleted(&self) -> bool {
        self.metadata().deletion_timestamp.is_some()
    }
    fn generation(&self) -> Option<i64> {
        self.metadata().generation
    }
    fn owner_references(&self) -> Vec<crate::OwnerReference> {
        crate::ObjectMetadata::owner_references(self.metadata())
    }
}
