//! The forwarding every deserializer wrapper of this crate needs: a `Deserializer` whose
//! `deserialize_*` methods hand the call to the wrapped deserializer (`self.inner`) with the
//! visitor wrapped, and a `Visitor` whose primitive `visit_*` methods hand the value to the
//! wrapped visitor (`self.inner`) untouched.
//!
//! Used by [`SkipManagedFields`](crate::SkipManagedFields)' filter and by the exact-capacity
//! wrapper; each writes out only the methods it changes (sequences, maps, options, enums).

/// Expands, inside an `impl Deserializer<'de> for W` whose `inner` field is the wrapped
/// deserializer, to the listed `deserialize_*` methods (with their extra arguments), each
/// calling the same method of `self.inner` with the visitor wrapped as
/// `Wrapper { inner: visitor, field: self.field }`.
///
/// `common` stands for every method but `deserialize_newtype_struct` and
/// `deserialize_ignored_any`, which wrappers tend to treat on their own; more methods may follow
/// it after a `;`.
macro_rules! forward_deserialize {
    ($wrapper:ident { $field:ident }; common $(; $($rest:tt)*)?) => {
        $crate::decode::forward::forward_deserialize!(
            $wrapper { $field };
            deserialize_any(),
            deserialize_bool(),
            deserialize_i8(),
            deserialize_i16(),
            deserialize_i32(),
            deserialize_i64(),
            deserialize_i128(),
            deserialize_u8(),
            deserialize_u16(),
            deserialize_u32(),
            deserialize_u64(),
            deserialize_u128(),
            deserialize_f32(),
            deserialize_f64(),
            deserialize_char(),
            deserialize_str(),
            deserialize_string(),
            deserialize_bytes(),
            deserialize_byte_buf(),
            deserialize_option(),
            deserialize_unit(),
            deserialize_seq(),
            deserialize_map(),
            deserialize_identifier(),
            deserialize_unit_struct(name: &'static str),
            deserialize_tuple(len: usize),
            deserialize_tuple_struct(name: &'static str, len: usize),
            deserialize_struct(name: &'static str, fields: &'static [&'static str]),
            deserialize_enum(name: &'static str, variants: &'static [&'static str]),
        );
        $($crate::decode::forward::forward_deserialize!($wrapper { $field }; $($rest)*);)?
    };
    ($wrapper:ident { $field:ident }; $($method:ident($($arg:ident: $ty:ty),*)),* $(,)?) => {$(
        fn $method<V: serde::de::Visitor<'de>>(
            self,
            $($arg: $ty,)*
            visitor: V,
        ) -> Result<V::Value, Self::Error> {
            self.inner.$method($($arg,)* $wrapper { inner: visitor, $field: self.$field })
        }
    )*};
}

pub(crate) use forward_deserialize;

/// Expands, inside an `impl Visitor<'de> for W` whose `inner` field is the wrapped visitor, to
/// every primitive `visit_*` method forwarding to `self.inner`.
macro_rules! forward_primitive_visits {
    () => {
        $crate::decode::forward::forward_primitive_visits!(@each
            visit_bool(bool),
            visit_i8(i8),
            visit_i16(i16),
            visit_i32(i32),
            visit_i64(i64),
            visit_i128(i128),
            visit_u8(u8),
            visit_u16(u16),
            visit_u32(u32),
            visit_u64(u64),
            visit_u128(u128),
            visit_f32(f32),
            visit_f64(f64),
            visit_char(char),
            visit_str(&str),
            visit_borrowed_str(&'de str),
            visit_string(String),
            visit_bytes(&[u8]),
            visit_borrowed_bytes(&'de [u8]),
            visit_byte_buf(Vec<u8>),
        );

        fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            self.inner.visit_none()
        }

        fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            self.inner.visit_unit()
        }
    };
    (@each $($method:ident($ty:ty)),* $(,)?) => {$(
        fn $method<E: serde::de::Error>(self, v: $ty) -> Result<Self::Value, E> {
            self.inner.$method(v)
        }
    )*};
}

pub(crate) use forward_primitive_visits;
