use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;

use crate::settings::Options;
use crate::settings::Problem;

/// `processors.resource`: changes to make to every resource, in order.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResourceProcessorConfig {
    #[serde(default)]
    pub attributes: Vec<AttributeAction>,
}

/// One change to one resource attribute.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttributeAction {
    pub key: String,
    pub action: Action,
    /// The value to set (insert, update, upsert).
    #[serde(default)]
    pub value: Option<AttributeValue>,
    /// Instead of `value`: copy the value of this resource attribute, when
    /// the resource has it.
    #[serde(default)]
    pub from_attribute: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Adds the attribute when the resource does not have the key.
    Insert,
    /// Changes the attribute when the resource has the key.
    Update,
    /// Insert or update.
    Upsert,
    /// Removes the attribute.
    Delete,
}

impl Action {
    pub fn name(self) -> &'static str {
        match self {
            Self::Insert => "insert",
            Self::Update => "update",
            Self::Upsert => "upsert",
            Self::Delete => "delete",
        }
    }
}

/// A value as YAML writes it; text from `${env:…}` stays text.
#[derive(Debug, Clone, PartialEq)]
pub enum AttributeValue {
    String(String),
    Int(i64),
    Double(f64),
    Bool(bool),
}

impl ResourceProcessorConfig {
    /// Every problem in the options; empty when they are usable.
    pub fn problems(&self) -> Vec<Problem> {
        if self.attributes.is_empty() {
            return vec![Problem::new(
                "attributes",
                "no actions; list at least one, like {key: deployment.environment, value: prod, action: upsert}",
            )];
        }
        let mut problems = Vec::new();
        for (index, action) in self.attributes.iter().enumerate() {
            action.check(&format!("attributes[{index}]"), &mut problems);
        }
        problems
    }
}

impl AttributeAction {
    fn check(&self, path: &str, problems: &mut Vec<Problem>) {
        let mut problem = |key: &str, message: String| {
            problems.push(Problem::new(format!("{path}.{key}"), message));
        };
        if self.key.is_empty() {
            problem("key", "is empty; name the attribute to change".to_owned());
        }
        let action = self.action.name();
        match (self.action, &self.value, &self.from_attribute) {
            (Action::Delete, None, None) => {}
            (Action::Delete, Some(_), _) => problem(
                "value",
                "action delete takes no value; remove the key".to_owned(),
            ),
            (Action::Delete, None, Some(_)) => problem(
                "from_attribute",
                "action delete takes no from_attribute; remove the key".to_owned(),
            ),
            (_, None, None) => problem(
                "value",
                format!("action {action} needs a value (or from_attribute)"),
            ),
            (_, Some(_), Some(_)) => problem(
                "from_attribute",
                "set either value or from_attribute, not both".to_owned(),
            ),
            (_, None, Some(source)) if source.is_empty() => problem(
                "from_attribute",
                "is empty; name the attribute to copy from".to_owned(),
            ),
            (_, _, _) => {}
        }
    }
}

struct AttributeValueVisitor;

impl Visitor<'_> for AttributeValueVisitor {
    type Value = AttributeValue;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a text, a number or a boolean")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Ok(AttributeValue::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(AttributeValue::Int(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        i64::try_from(v).map(AttributeValue::Int).map_err(|_| {
            E::custom(format!(
                "{v} is too large for an attribute (at most {})",
                i64::MAX
            ))
        })
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(AttributeValue::Double(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(AttributeValue::String(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(AttributeValue::String(v))
    }
}

impl<'de> Deserialize<'de> for AttributeValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(AttributeValueVisitor)
    }
}

impl Options for ResourceProcessorConfig {
    fn problems(&self) -> Vec<Problem> {
        Self::problems(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> Result<ResourceProcessorConfig, String> {
        serde_json::from_str(json).map_err(|e| e.to_string())
    }

    fn messages(json: &str) -> Vec<String> {
        parse(json)
            .unwrap()
            .problems()
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn values_keep_their_kind() {
        let config = parse(
            r#"{"attributes": [
                {"key": "a", "value": "text", "action": "insert"},
                {"key": "b", "value": 42, "action": "update"},
                {"key": "c", "value": 1.5, "action": "upsert"},
                {"key": "d", "value": true, "action": "upsert"},
                {"key": "e", "action": "delete"},
                {"key": "f", "from_attribute": "a", "action": "insert"}
            ]}"#,
        )
        .unwrap();
        let values: Vec<_> = config.attributes.iter().map(|a| a.value.clone()).collect();
        assert_eq!(
            values,
            [
                Some(AttributeValue::String("text".into())),
                Some(AttributeValue::Int(42)),
                Some(AttributeValue::Double(1.5)),
                Some(AttributeValue::Bool(true)),
                None,
                None,
            ]
        );
        assert_eq!(config.attributes[4].action, Action::Delete);
        assert_eq!(config.attributes[5].from_attribute.as_deref(), Some("a"));
        assert!(config.problems().is_empty());
    }

    #[test]
    fn unknown_keys_actions_and_values_are_refused() {
        assert!(
            parse(r#"{"attributes": [{"key": "a", "value": 1, "action": "hash"}]}"#)
                .unwrap_err()
                .contains("hash")
        );
        assert!(
            parse(r#"{"attributes": [{"key": "a", "valeu": 1, "action": "insert"}]}"#)
                .unwrap_err()
                .contains("valeu")
        );
        assert!(
            parse(r#"{"attributes": [{"key": "a", "value": [1], "action": "insert"}]}"#)
                .unwrap_err()
                .contains("a text, a number or a boolean")
        );
        assert!(parse(r#"{"attributes": [{"key": "a", "action": "insert"}], "x": 1}"#).is_err());
    }

    #[test]
    fn problems_name_the_action_and_key() {
        assert_eq!(
            messages(r#"{"attributes": []}"#)[0],
            "attributes: no actions; list at least one, like {key: deployment.environment, value: prod, action: upsert}"
        );
        assert_eq!(
            messages(r#"{"attributes": [{"key": "a", "action": "upsert"}]}"#),
            ["attributes[0].value: action upsert needs a value (or from_attribute)"]
        );
        assert_eq!(
            messages(
                r#"{"attributes": [{"key": "a", "action": "delete"}, {"key": "", "value": 1, "action": "delete"}]}"#
            ),
            [
                "attributes[1].key: is empty; name the attribute to change",
                "attributes[1].value: action delete takes no value; remove the key",
            ]
        );
        assert_eq!(
            messages(
                r#"{"attributes": [{"key": "a", "value": 1, "from_attribute": "b", "action": "insert"}]}"#
            ),
            ["attributes[0].from_attribute: set either value or from_attribute, not both"]
        );
        assert_eq!(
            messages(r#"{"attributes": [{"key": "a", "from_attribute": "b", "action": "delete"}]}"#),
            ["attributes[0].from_attribute: action delete takes no from_attribute; remove the key"]
        );
    }
}
