//! Rows as generated: question `i` (its text, author, time, reviews and
//! likes) from a random generator seeded by the seed and `i` alone.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Zipf};

use super::text::TextSource;

pub(super) const THREE_YEARS_MS: i64 = 3 * 365 * 24 * 3600 * 1000;
/// `created_at` of the first question (2023-11-14): fixed, so that a seed
/// gives the same rows on any day. The last ones are three years later.
pub(super) const START_MS: i64 = 1_700_000_000_000;

/// One question as generated, with its reviews and likes.
#[derive(Debug, Clone, PartialEq)]
pub struct GeneratedQuestion {
    pub author: i64,
    pub title: String,
    pub content: String,
    pub created_at: i64,
    pub reviews: Vec<GeneratedReview>,
    /// Users who like it: `likes` consecutive users from `first_liker`.
    pub likes: u64,
    pub first_liker: i64,
}

impl GeneratedQuestion {
    /// The searchable text of each row: the question (title and content,
    /// on two lines, so no keyword spans them), then each review.
    pub(super) fn rows(&self) -> impl Iterator<Item = String> + '_ {
        std::iter::once(format!("{}\n{}", self.title, self.content))
            .chain(self.reviews.iter().map(|r| r.content.clone()))
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct GeneratedReview {
    pub author: i64,
    pub content: String,
    pub created_at: i64,
    /// ★1 to ★5, or none (one review in twenty).
    pub rating: Option<i64>,
}

/// Review `r` of question `index`'s rating, from a hash of the seed and
/// both (not from the row's generator, whose draws the text follows), with
/// the skew of real review sites: most are ★5 and ★4.
fn rating(seed: u64, index: u64, r: u32) -> Option<i64> {
    let h = (seed ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .wrapping_add(u64::from(r) + 1)
        .wrapping_mul(0xD1B5_4A32_D192_ED03);
    // 20 buckets: 1 none, 1 ★1, 1 ★2, 3 ★3, 6 ★4, 8 ★5.
    match (h >> 32) % 20 {
        0 => None,
        1 => Some(1),
        2 => Some(2),
        3..=5 => Some(3),
        6..=11 => Some(4),
        _ => Some(5),
    }
}

/// What a seed run generates, row by row.
pub struct Generator<'a> {
    pub seed: u64,
    pub rows: u64,
    pub users: u64,
    pub first_user: i64,
    /// `created_at` of question 0.
    pub start: i64,
    pub text: &'a TextSource,
}

impl Generator<'_> {
    pub(super) fn step(&self) -> i64 {
        (THREE_YEARS_MS / self.rows.max(1) as i64).max(1)
    }

    /// Question `index` of this run, from `seed` and `index` alone.
    pub fn question(&self, index: u64) -> GeneratedQuestion {
        let mut rng = StdRng::seed_from_u64(self.seed ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let step = self.step();
        // Increasing with the index, jittered within the first half of the step.
        let created_at = self.start + index as i64 * step + rng.random_range(0..step.max(2) / 2);
        let user = |rng: &mut StdRng| self.first_user + rng.random_range(0..self.users) as i64;
        let author = user(&mut rng);
        let title = self.text.title(&mut rng);
        let mut content = self.text.body(&mut rng);
        if index % 1000 == 7 {
            content.push(' ');
            content.push_str(&unique_word(index));
        }
        let reviews = (0..rng.random_range(0..=4u32))
            .map(|r| GeneratedReview {
                author: user(&mut rng),
                content: self.text.body(&mut rng),
                created_at: created_at + 60_000 * i64::from(r + 1) + rng.random_range(0..60_000),
                rating: rating(self.seed, index, r),
            })
            .collect();
        // P(k likes) ∝ (k + 1)^-2.5: three in four questions have none.
        let zipf = Zipf::new(self.users as f64, 2.5).expect("valid zipf");
        let likes = (zipf.sample(&mut rng) as u64 - 1).min(self.users);
        let first_liker = user(&mut rng);
        GeneratedQuestion {
            author,
            title,
            content,
            created_at,
            reviews,
            likes,
            first_liker,
        }
    }
}

/// A word that occurs in question `index` only: a rare syllable and four
/// syllables spelling the index.
pub fn unique_word(index: u64) -> String {
    let mut word = String::from("뷁");
    let mut n = index.wrapping_mul(2_654_435_761) % 11_172u64.pow(4);
    for _ in 0..4 {
        word.push(char::from_u32(0xAC00 + (n % 11_172) as u32).expect("hangul syllable"));
        n /= 11_172;
    }
    word
}
