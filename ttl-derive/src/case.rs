//! `rename_all`: serde's case names and serde's conversions.
//!
//! Hand-written rather than taken from `heck` on purpose: users come with
//! structs and enums already annotated for serde and expect the same
//! qualifier or stored name for the same `rename_all`. The two disagree on
//! names with acronyms and digits (`HTTPCode` to snake case is `h_t_t_p_code`
//! for serde, `http_code` for heck), and a column name that differs from the
//! one serde would give is a silent schema change. Field names are taken as
//! `snake_case` and variant names as `PascalCase`, as serde does.

/// One of serde's `rename_all` rules.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Case {
    Lower,
    Upper,
    Pascal,
    Camel,
    Snake,
    ScreamingSnake,
    Kebab,
    ScreamingKebab,
}

/// The accepted names, in serde's order (for the "unknown case" message).
pub const CASES: &[(&str, Case)] = &[
    ("lowercase", Case::Lower),
    ("UPPERCASE", Case::Upper),
    ("PascalCase", Case::Pascal),
    ("camelCase", Case::Camel),
    ("snake_case", Case::Snake),
    ("SCREAMING_SNAKE_CASE", Case::ScreamingSnake),
    ("kebab-case", Case::Kebab),
    ("SCREAMING-KEBAB-CASE", Case::ScreamingKebab),
];

impl Case {
    pub fn from_name(name: &str) -> Option<Case> {
        CASES.iter().find(|(n, _)| *n == name).map(|(_, c)| *c)
    }

    /// `"lowercase", "UPPERCASE", … or "SCREAMING-KEBAB-CASE"`.
    pub fn accepted() -> String {
        let names: Vec<String> = CASES.iter().map(|(n, _)| format!("{n:?}")).collect();
        names.join(", ")
    }

    /// A `snake_case` field name in this case.
    pub fn field(self, field: &str) -> String {
        match self {
            Case::Lower | Case::Snake => field.to_owned(),
            Case::Upper | Case::ScreamingSnake => field.to_ascii_uppercase(),
            Case::Pascal => {
                let mut pascal = String::with_capacity(field.len());
                let mut capitalize = true;
                for ch in field.chars() {
                    if ch == '_' {
                        capitalize = true;
                    } else if capitalize {
                        pascal.push(ch.to_ascii_uppercase());
                        capitalize = false;
                    } else {
                        pascal.push(ch);
                    }
                }
                pascal
            }
            Case::Camel => lower_first(&Case::Pascal.field(field)),
            Case::Kebab => field.replace('_', "-"),
            Case::ScreamingKebab => field.to_ascii_uppercase().replace('_', "-"),
        }
    }

    /// A `PascalCase` variant name in this case.
    pub fn variant(self, variant: &str) -> String {
        match self {
            Case::Pascal => variant.to_owned(),
            Case::Lower => variant.to_ascii_lowercase(),
            Case::Upper => variant.to_ascii_uppercase(),
            Case::Camel => lower_first(variant),
            Case::Snake => {
                let mut snake = String::with_capacity(variant.len() + 4);
                for (i, ch) in variant.char_indices() {
                    if i > 0 && ch.is_uppercase() {
                        snake.push('_');
                    }
                    snake.push(ch.to_ascii_lowercase());
                }
                snake
            }
            Case::ScreamingSnake => Case::Snake.variant(variant).to_ascii_uppercase(),
            Case::Kebab => Case::Snake.variant(variant).replace('_', "-"),
            Case::ScreamingKebab => Case::ScreamingSnake.variant(variant).replace('_', "-"),
        }
    }
}

fn lower_first(s: &str) -> String {
    let mut chars = s.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_ascii_lowercase().to_string() + chars.as_str()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table of serde's own `rename_all` tests (`serde_derive`'s
    /// `internals/case.rs`), so the two never drift apart.
    #[test]
    fn fields_convert_as_serde_does() {
        let rows = [
            (
                "outcome",
                [
                    "outcome", "OUTCOME", "Outcome", "outcome", "outcome", "OUTCOME", "outcome",
                    "OUTCOME",
                ],
            ),
            (
                "very_tasty",
                [
                    "very_tasty",
                    "VERY_TASTY",
                    "VeryTasty",
                    "veryTasty",
                    "very_tasty",
                    "VERY_TASTY",
                    "very-tasty",
                    "VERY-TASTY",
                ],
            ),
            ("a", ["a", "A", "A", "a", "a", "A", "a", "A"]),
            (
                "z42",
                ["z42", "Z42", "Z42", "z42", "z42", "Z42", "z42", "Z42"],
            ),
        ];
        for (field, expected) in rows {
            for ((name, case), want) in CASES.iter().zip(expected) {
                assert_eq!(case.field(field), want, "{field} as {name}");
            }
        }
    }

    #[test]
    fn variants_convert_as_serde_does() {
        let rows = [
            (
                "Outcome",
                [
                    "outcome", "OUTCOME", "Outcome", "outcome", "outcome", "OUTCOME", "outcome",
                    "OUTCOME",
                ],
            ),
            (
                "VeryTasty",
                [
                    "verytasty",
                    "VERYTASTY",
                    "VeryTasty",
                    "veryTasty",
                    "very_tasty",
                    "VERY_TASTY",
                    "very-tasty",
                    "VERY-TASTY",
                ],
            ),
            ("A", ["a", "A", "A", "a", "a", "A", "a", "A"]),
            (
                "Z42",
                ["z42", "Z42", "Z42", "z42", "z42", "Z42", "z42", "Z42"],
            ),
        ];
        for (variant, expected) in rows {
            for ((name, case), want) in CASES.iter().zip(expected) {
                assert_eq!(case.variant(variant), want, "{variant} as {name}");
            }
        }
    }
}
