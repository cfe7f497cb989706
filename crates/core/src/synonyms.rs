//! Synonyms, applied at query time: `k8s = 쿠버네티스 = kubernetes`.
//!
//! A keyword that is one of a group's forms matches a row when any form of
//! the group is a substring of it, so the answer is the union of the forms'
//! `LIKE` sets, each row counted once, and the total stays exact. Nothing
//! about the index changes, so a new group needs no reindex. Forms are
//! normalized as keywords are; a form with a space (`"spring boot"`) is one
//! keyword with its space, as a quoted phrase is. A keyword is compared
//! whole: `k8s` expands, `k8s클러스터` does not.
//!
//! The groups come from the config file (`--config`, `CHAJA_CONFIG`):
//!
//! ```toml
//! [synonyms]
//! groups = [["k8s", "쿠버네티스", "kubernetes"], ["스프링부트", "스프링 부트", "spring boot"]]
//! ```

use std::collections::HashMap;

use serde::Deserialize;

use crate::text::{normalize, Keyword};

/// The `[synonyms]` section of the config file (`crate::sources::ConfigFile`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SynonymsSection {
    #[serde(default)]
    pub groups: Vec<Vec<String>>,
}

/// Groups of forms that mean the same, looked up by normalized form.
#[derive(Debug, Default, Clone)]
pub struct Synonyms {
    groups: Vec<Vec<Keyword>>,
    by_form: HashMap<String, usize>,
}

impl Synonyms {
    /// Builds the lookup; a form in two groups, or a group with fewer than
    /// two distinct forms, is a configuration mistake and says so.
    pub fn new(groups: &[Vec<String>]) -> Result<Synonyms, crate::ConfigError> {
        Synonyms::check(groups).map_err(crate::ConfigError)
    }

    fn check(groups: &[Vec<String>]) -> Result<Synonyms, String> {
        let mut synonyms = Synonyms::default();
        for (i, group) in groups.iter().enumerate() {
            let mut forms: Vec<Keyword> = Vec::new();
            for form in group {
                let normalized = normalize(form.trim());
                if normalized.trim().is_empty() || normalized.contains('"') {
                    return Err(format!(
                        "synonym group {}: {form:?} is not a keyword",
                        i + 1
                    ));
                }
                if forms.iter().any(|k| k.as_str() == normalized) {
                    continue;
                }
                if synonyms
                    .by_form
                    .insert(normalized.clone(), synonyms.groups.len())
                    .is_some()
                {
                    return Err(format!("synonym {form:?} is in two groups"));
                }
                forms.push(Keyword(normalized));
            }
            if forms.len() < 2 {
                return Err(format!("synonym group {} needs two different forms", i + 1));
            }
            synonyms.groups.push(forms);
        }
        Ok(synonyms)
    }

    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// The other forms of `keyword`'s group, if it is a form of one.
    pub fn others(&self, keyword: &Keyword) -> Vec<Keyword> {
        match self.by_form.get(keyword.as_str()) {
            Some(&group) => self.groups[group]
                .iter()
                .filter(|k| *k != keyword)
                .cloned()
                .collect(),
            None => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::parse_query;

    #[test]
    fn keywords_expand_to_their_group_whole_and_normalized() {
        let synonyms = Synonyms::new(&[
            vec!["k8s".into(), "쿠버네티스".into(), "Kubernetes".into()],
            vec![
                "스프링부트".into(),
                "스프링 부트".into(),
                "spring boot".into(),
            ],
        ])
        .unwrap();
        let forms = |q: &str| -> Vec<String> {
            synonyms
                .others(&parse_query(q)[0])
                .into_iter()
                .map(|k| k.0)
                .collect()
        };
        assert_eq!(forms("K8S"), ["쿠버네티스", "kubernetes"]);
        assert_eq!(forms("\"spring boot\""), ["스프링부트", "스프링 부트"]);
        assert!(forms("k8s클러스터").is_empty());
        assert!(Synonyms::new(&[vec!["a".into(), "A".into()]]).is_err());
        assert!(
            Synonyms::new(&[vec!["a".into(), "b".into()], vec!["b".into(), "c".into()]]).is_err()
        );
        let file =
            crate::sources::ConfigFile::parse("[synonyms]\ngroups = [[\"a\", \"b\"]]").unwrap();
        assert_eq!(file.synonyms.groups, [["a", "b"]]);
        assert!(crate::sources::ConfigFile::parse("[sources]\nx = 1").is_err());
    }
}
