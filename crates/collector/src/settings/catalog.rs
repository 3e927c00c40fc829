//! The catalog of component types the parser asks for their options.

use config::Value;

use super::model::Section;
use super::options::ComponentConfig;
use super::problems::Problem;

/// The component types the parser knows, each with its options parser.
pub trait Catalog {
    /// The types of a section, in the order messages list them.
    fn types(&self, section: Section) -> Vec<&'static str>;

    /// The options of a `kind` component found at key `path`; `None` when
    /// the section has no such type.
    fn parse(
        &self,
        section: Section,
        kind: &str,
        value: Value,
        path: &str,
    ) -> Option<Result<ComponentConfig, Problem>>;
}
