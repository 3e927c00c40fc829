//! The resource attributes of a pushed profile, from its query string and
//! headers. Later sources replace earlier ones with the same key:
//! `X-Resource-Attr: KEY=VALUE, KEY2=VALUE2` headers, then the
//! `X-Service-Name` header, then `attr.KEY=VALUE` query parameters, then
//! the `service.name` (or `service_name`) query parameter.

use axum::http::HeaderMap;

use profbridge_translate::otlp::KeyValue;

use crate::receivers::from_pprof::string_attributes;

const RESOURCE_ATTR_HEADER: &str = "x-resource-attr";
const SERVICE_NAME_HEADER: &str = "x-service-name";
const ATTR_PREFIX: &str = "attr.";
const SERVICE_NAME: &str = "service.name";

/// Resource attributes a request cannot give; each names where they were.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum AttributeError {
    #[error("X-Resource-Attr is not visible ASCII text")]
    ResourceAttrNotText,
    #[error("X-Resource-Attr item {0:?} is not KEY=VALUE")]
    NotKeyValue(String),
    #[error("X-Service-Name is not visible ASCII text")]
    ServiceNameNotText,
    /// `.0` names the header or the query parameter.
    #[error("{0}: an attribute with an empty key")]
    EmptyKey(&'static str),
}

pub(super) fn resource_attributes(
    query: &[(String, String)],
    headers: &HeaderMap,
) -> Result<Vec<KeyValue>, AttributeError> {
    let mut pairs = Vec::new();
    for value in headers.get_all(RESOURCE_ATTR_HEADER) {
        let text = value
            .to_str()
            .map_err(|_| AttributeError::ResourceAttrNotText)?;
        for item in text
            .split(',')
            .map(str::trim)
            .filter(|item| !item.is_empty())
        {
            let (key, value) = item
                .split_once('=')
                .ok_or_else(|| AttributeError::NotKeyValue(item.to_owned()))?;
            pairs.push(checked(key.trim(), value.trim(), "X-Resource-Attr")?);
        }
    }
    if let Some(value) = headers.get(SERVICE_NAME_HEADER) {
        let name = value
            .to_str()
            .map_err(|_| AttributeError::ServiceNameNotText)?;
        pairs.push((SERVICE_NAME.to_owned(), name.trim().to_owned()));
    }
    for (name, value) in query {
        if let Some(key) = name.strip_prefix(ATTR_PREFIX) {
            pairs.push(checked(key, value, "query parameter attr.KEY")?);
        }
    }
    for (name, value) in query {
        if name == SERVICE_NAME || name == "service_name" {
            pairs.push((SERVICE_NAME.to_owned(), value.clone()));
        }
    }
    Ok(string_attributes(pairs))
}

fn checked(
    key: &str,
    value: &str,
    source: &'static str,
) -> Result<(String, String), AttributeError> {
    if key.is_empty() {
        return Err(AttributeError::EmptyKey(source));
    }
    Ok((key.to_owned(), value.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;
    use profbridge_translate::otlp::any_value::Value;

    fn texts(attributes: &[KeyValue]) -> Vec<(String, String)> {
        attributes
            .iter()
            .map(|kv| {
                let value = match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                    Some(Value::StringValue(text)) => text.clone(),
                    other => format!("{other:?}"),
                };
                (kv.key.clone(), value)
            })
            .collect()
    }

    fn pair(key: &str, value: &str) -> (String, String) {
        (key.to_owned(), value.to_owned())
    }

    #[test]
    fn the_query_wins_over_headers() {
        let mut headers = HeaderMap::new();
        headers.append(
            RESOURCE_ATTR_HEADER,
            HeaderValue::from_static("team=core, host.name=a"),
        );
        headers.append(RESOURCE_ATTR_HEADER, HeaderValue::from_static("region=eu"));
        headers.append(SERVICE_NAME_HEADER, HeaderValue::from_static("from-header"));
        let query = [
            pair("attr.host.name", "b"),
            pair("service_name", "checkout"),
            pair("seconds", "30"),
        ];
        let attributes = resource_attributes(&query, &headers).unwrap_or_default();
        assert_eq!(
            texts(&attributes),
            [
                pair("team", "core"),
                pair("region", "eu"),
                pair("host.name", "b"),
                pair("service.name", "checkout"),
            ]
        );
    }

    #[test]
    fn malformed_items_are_named() {
        let mut headers = HeaderMap::new();
        headers.append(RESOURCE_ATTR_HEADER, HeaderValue::from_static("team"));
        let error = resource_attributes(&[], &headers)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(error.contains("\"team\" is not KEY=VALUE"), "{error}");
        let error = resource_attributes(&[pair("attr.", "x")], &HeaderMap::new())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(error.contains("empty key"), "{error}");
    }
}
