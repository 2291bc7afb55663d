//! Label selectors between kcache ([`Selector`], [`Requirement`]) and kube-rs
//! ([`kube::core::Selector`](KubeSelector), [`Expression`]), both ways.
//!
//! They are functions rather than `TryFrom` impls because Rust's orphan rule forbids a trait
//! impl in this crate between two types defined elsewhere, and `kcache-store` stays free of
//! kube-rs. Both directions can fail, so both return a `Result`:
//!
//! - kcache to kube-rs fails on `key>n` and `key<n` ([`Operator::GreaterThan`],
//!   [`Operator::LessThan`]), which kube-rs's `Expression` cannot express;
//! - kube-rs to kcache fails when kube-rs's selector does not follow the Kubernetes grammar:
//!   kube-rs does not validate keys and values, nor reject an empty `in ()` set, while kcache
//!   parses them as the API server does.
//!
//! Both keep meaning: `key=value` becomes `Equal`, `key!=value` `NotEqual`, `in`/`notin` the
//! same sets, `key` `Exists` and `!key` `DoesNotExist`. kcache sorts requirements by key (as
//! the API server prints them); kube-rs keeps the order it was given.
//!
//! ```
//! use kcache_client_http::kube::{from_kube_selector, to_kube_selector};
//! use kcache_store::Selector;
//! use kube_client::core::{Expression, Selector as KubeSelector};
//!
//! let ours: Selector = "app in (api,web),!canary".parse()?;
//! let theirs = to_kube_selector(&ours)?;
//! assert_eq!(theirs.to_string(), "app in (api,web),!canary");
//!
//! let theirs: KubeSelector = Expression::NotEqual("tier".into(), "cache".into()).into();
//! assert_eq!(from_kube_selector(&theirs)?.to_string(), "tier!=cache");
//!
//! // kube-rs has no `>`.
//! assert!(to_kube_selector(&"replicas>2".parse()?).is_err());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use kcache_store::{Operator, Requirement, Selector};
use kube_client::core::{Expression, Selector as KubeSelector};

use crate::Error;

/// kcache's selector as kube-rs's: one [`Expression`] per requirement, in kcache's (key) order.
///
/// # Errors
///
/// [`Error::Selector`] (naming the whole selector) when a requirement is `key>n` or `key<n`.
pub fn to_kube_selector(selector: &Selector) -> Result<KubeSelector, Error> {
    selector
        .requirements()
        .iter()
        .map(|r| expression(r).map_err(|symbol| unsupported(selector.to_string(), symbol)))
        .collect()
}

/// One kcache requirement as a kube-rs [`Expression`].
///
/// # Errors
///
/// [`Error::Selector`] when it is `key>n` or `key<n`.
pub fn to_kube_expression(requirement: &Requirement) -> Result<Expression, Error> {
    expression(requirement).map_err(|symbol| unsupported(requirement.to_string(), symbol))
}

/// `requirement` as an [`Expression`], or the operator kube-rs cannot express, as the error
/// message names it (`` `>` ``).
fn expression(requirement: &Requirement) -> Result<Expression, &'static str> {
    let key = requirement.key().to_owned();
    let values = requirement.values();
    let first = || values.first().cloned().unwrap_or_default();
    Ok(match requirement.operator() {
        Operator::Equals => Expression::Equal(key, first()),
        Operator::NotEquals => Expression::NotEqual(key, first()),
        Operator::In => Expression::In(key, values.iter().cloned().collect()),
        Operator::NotIn => Expression::NotIn(key, values.iter().cloned().collect()),
        Operator::Exists => Expression::Exists(key),
        Operator::DoesNotExist => Expression::DoesNotExist(key),
        Operator::GreaterThan => return Err("`>`"),
        Operator::LessThan => return Err("`<`"),
        _ => return Err("this operator"),
    })
}

/// The [`Error::Selector`] of `selector` (its text), whose operator `symbol` kube-rs lacks.
fn unsupported(selector: String, symbol: &str) -> Error {
    Error::Selector {
        selector,
        reason: format!("kube-rs label selectors have no {symbol}"),
        source: None,
    }
}

/// kube-rs's selector as kcache's, read with the Kubernetes grammar (its requirements come out
/// sorted by key).
///
/// # Errors
///
/// [`Error::Selector`] (its source the parser's error, with the position) when the selector
/// is not valid Kubernetes syntax: an invalid key or value, an empty `in ()` set.
pub fn from_kube_selector(selector: &KubeSelector) -> Result<Selector, Error> {
    parse(&selector.to_string())
}

/// One kube-rs [`Expression`] as a kcache selector of one requirement.
///
/// # Errors
///
/// As [`from_kube_selector`].
pub fn from_kube_expression(expression: &Expression) -> Result<Selector, Error> {
    parse(&expression.to_string())
}

fn parse(text: &str) -> Result<Selector, Error> {
    Selector::parse(text).map_err(|e| Error::Selector {
        selector: text.to_owned(),
        reason: "not a valid Kubernetes label selector".to_owned(),
        source: Some(e),
    })
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use super::*;

    fn set(values: &[&str]) -> BTreeSet<String> {
        values.iter().map(|&v| v.to_owned()).collect()
    }

    #[test]
    fn every_operator_kube_has_maps_both_ways() {
        let ours: Selector = "a=1,b!=2,c in (x,y),d notin (z),e,!f".parse().unwrap();
        let theirs = to_kube_selector(&ours).unwrap();
        let expressions: Vec<Expression> = theirs.clone().into_iter().collect();
        assert_eq!(
            expressions,
            [
                Expression::Equal("a".into(), "1".into()),
                Expression::NotEqual("b".into(), "2".into()),
                Expression::In("c".into(), set(&["x", "y"])),
                Expression::NotIn("d".into(), set(&["z"])),
                Expression::Exists("e".into()),
                Expression::DoesNotExist("f".into()),
            ]
        );
        assert_eq!(from_kube_selector(&theirs).unwrap(), ours);
    }

    #[test]
    fn conversions_keep_what_matches() {
        use kube_client::core::SelectorExt;
        let ours: Selector = "app in (web,api),tier!=cache,!canary,zone".parse().unwrap();
        let theirs = to_kube_selector(&ours).unwrap();
        for labels in [
            &[("app", "web"), ("zone", "a")][..],
            &[("app", "web"), ("zone", "a"), ("tier", "cache")],
            &[("app", "api"), ("zone", "b"), ("canary", "1")],
            &[("app", "db"), ("zone", "a")],
            &[("zone", "a")],
            &[],
        ] {
            let labels: BTreeMap<String, String> = labels
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect();
            assert_eq!(
                ours.matches(Some(&labels)),
                theirs.matches(&labels),
                "{labels:?}"
            );
        }
    }

    #[test]
    fn kube_order_and_empty_selectors() {
        let theirs: KubeSelector = [
            Expression::Exists("z".into()),
            Expression::Equal("a".into(), "1".into()),
        ]
        .into_iter()
        .collect();
        assert_eq!(from_kube_selector(&theirs).unwrap().to_string(), "a=1,z");
        assert!(
            from_kube_selector(&KubeSelector::default())
                .unwrap()
                .is_empty()
        );
        assert!(
            to_kube_selector(&Selector::everything())
                .unwrap()
                .selects_all()
        );
        assert_eq!(
            from_kube_expression(&Expression::In("k".into(), set(&["b", "a"])))
                .unwrap()
                .to_string(),
            "k in (a,b)"
        );
    }

    #[test]
    fn greater_and_less_than_do_not_convert() {
        let e = to_kube_selector(&"app=web,replicas>2".parse().unwrap()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "label selector `app=web,replicas>2` cannot be converted: kube-rs label selectors have no `>`"
        );
        let lt: Selector = "n<3".parse().unwrap();
        let e = to_kube_expression(&lt.requirements()[0]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "label selector `n<3` cannot be converted: kube-rs label selectors have no `<`"
        );
    }

    #[test]
    fn invalid_kube_selectors_are_errors_with_the_parser_as_source() {
        for bad in [
            Expression::In("k".into(), BTreeSet::new()),
            Expression::Equal("bad key".into(), "v".into()),
            Expression::Equal("k".into(), "a b".into()),
        ] {
            let e = from_kube_expression(&bad).unwrap_err();
            let Error::Selector { source, .. } = &e else {
                panic!("{e:?}")
            };
            assert!(source.is_some(), "{e}");
            assert!(std::error::Error::source(&e).is_some());
        }
    }
}
