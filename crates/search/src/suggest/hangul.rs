//! Hangul as it is typed: syllables to keystrokes, initial consonants, and
//! Latin letters typed on a Korean (2-beolsik) keyboard.
//!
//! Suggestions match on keystroke sequences: `클라우드` is `ㅋㅡㄹㄹㅏㅇㅜㄷㅡ`,
//! so a half-typed `클랑` (`ㅋㅡㄹㄹㅏㅇ`) or `클라ㅇ` is a plain prefix of it,
//! and `zmffkdnem`, the same keys on a Latin layout, maps to the same
//! sequence. Compound vowels and finals are split into the keys that type
//! them (`ㅘ` = `ㅗㅏ`, `ㄺ` = `ㄹㄱ`). Written by hand: the crates that
//! decompose Hangul stop at Unicode jamo and know nothing of keyboards.

const INITIALS: [char; 19] = [
    'ㄱ', 'ㄲ', 'ㄴ', 'ㄷ', 'ㄸ', 'ㄹ', 'ㅁ', 'ㅂ', 'ㅃ', 'ㅅ', 'ㅆ', 'ㅇ', 'ㅈ', 'ㅉ', 'ㅊ', 'ㅋ',
    'ㅌ', 'ㅍ', 'ㅎ',
];
const VOWELS: [&str; 21] = [
    "ㅏ", "ㅐ", "ㅑ", "ㅒ", "ㅓ", "ㅔ", "ㅕ", "ㅖ", "ㅗ", "ㅗㅏ", "ㅗㅐ", "ㅗㅣ", "ㅛ", "ㅜ",
    "ㅜㅓ", "ㅜㅔ", "ㅜㅣ", "ㅠ", "ㅡ", "ㅡㅣ", "ㅣ",
];
/// Index 0 is "no final".
const FINALS: [&str; 28] = [
    "", "ㄱ", "ㄲ", "ㄱㅅ", "ㄴ", "ㄴㅈ", "ㄴㅎ", "ㄷ", "ㄹ", "ㄹㄱ", "ㄹㅁ", "ㄹㅂ", "ㄹㅅ",
    "ㄹㅌ", "ㄹㅍ", "ㄹㅎ", "ㅁ", "ㅂ", "ㅂㅅ", "ㅅ", "ㅆ", "ㅇ", "ㅈ", "ㅊ", "ㅋ", "ㅌ", "ㅍ",
    "ㅎ",
];

/// Compatibility jamo (U+3131..U+3163) in keystrokes.
fn compat_keys(c: char) -> Option<&'static str> {
    const COMPAT: [&str; 51] = [
        "ㄱ", "ㄲ", "ㄱㅅ", "ㄴ", "ㄴㅈ", "ㄴㅎ", "ㄷ", "ㄸ", "ㄹ", "ㄹㄱ", "ㄹㅁ", "ㄹㅂ", "ㄹㅅ",
        "ㄹㅌ", "ㄹㅍ", "ㄹㅎ", "ㅁ", "ㅂ", "ㅃ", "ㅂㅅ", "ㅅ", "ㅆ", "ㅇ", "ㅈ", "ㅉ", "ㅊ", "ㅋ",
        "ㅌ", "ㅍ", "ㅎ", "ㅏ", "ㅐ", "ㅑ", "ㅒ", "ㅓ", "ㅔ", "ㅕ", "ㅖ", "ㅗ", "ㅗㅏ", "ㅗㅐ",
        "ㅗㅣ", "ㅛ", "ㅜ", "ㅜㅓ", "ㅜㅔ", "ㅜㅣ", "ㅠ", "ㅡ", "ㅡㅣ", "ㅣ",
    ];
    let i = (c as u32).checked_sub(0x3131)?;
    COMPAT.get(i as usize).copied()
}

/// Conjoining jamo (U+1100.., what NFKC turns compatibility jamo into) in
/// keystrokes.
fn conjoining_keys(c: char) -> Option<String> {
    let u = c as u32;
    match u {
        0x1100..=0x1112 => Some(INITIALS[(u - 0x1100) as usize].to_string()),
        0x1161..=0x1175 => Some(VOWELS[(u - 0x1161) as usize].to_owned()),
        0x11A8..=0x11C2 => Some(FINALS[(u - 0x11A7) as usize].to_owned()),
        _ => None,
    }
}

/// The keystrokes that type `text`; other characters stay as they are.
pub fn keystrokes(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    for c in text.chars() {
        let u = c as u32;
        if (0xAC00..=0xD7A3).contains(&u) {
            let s = u - 0xAC00;
            out.push(INITIALS[(s / 588) as usize]);
            out.push_str(VOWELS[((s % 588) / 28) as usize]);
            out.push_str(FINALS[(s % 28) as usize]);
        } else if let Some(keys) = compat_keys(c) {
            out.push_str(keys);
        } else if let Some(keys) = conjoining_keys(c) {
            out.push_str(&keys);
        } else {
            out.push(c);
        }
    }
    out
}

/// The initial consonants of `text` (초성), spaces dropped: `클라우드 네이티브`
/// is `ㅋㄹㅇㄷㄴㅇㅌㅂ`. Other characters stay.
pub fn initials(text: &str) -> String {
    text.chars()
        .filter(|c| !c.is_whitespace())
        .map(|c| {
            let u = c as u32;
            if (0xAC00..=0xD7A3).contains(&u) {
                INITIALS[((u - 0xAC00) / 588) as usize]
            } else if (0x1100..=0x1112).contains(&u) {
                INITIALS[(u - 0x1100) as usize]
            } else {
                c
            }
        })
        .collect()
}

/// True when `text` is only initial consonants (and spaces): a 초성 query.
pub fn is_initials(text: &str) -> bool {
    let mut any = false;
    for c in text.chars().filter(|c| !c.is_whitespace()) {
        let consonant = INITIALS.contains(&c) || (0x1100..=0x1112).contains(&(c as u32));
        if !consonant {
            return false;
        }
        any = true;
    }
    any
}

/// What `text`, typed on a Latin layout, would have typed on a Korean one,
/// as keystrokes; `None` unless it is only ASCII letters and spaces. Case
/// matters: shifted keys type double consonants and ㅒ, ㅖ.
pub fn from_latin_keyboard(text: &str) -> Option<String> {
    if !text.chars().any(|c| c.is_ascii_alphabetic())
        || !text.chars().all(|c| c.is_ascii_alphabetic() || c == ' ')
    {
        return None;
    }
    let key = |c: char| -> char {
        match c {
            'Q' => 'ㅃ',
            'W' => 'ㅉ',
            'E' => 'ㄸ',
            'R' => 'ㄲ',
            'T' => 'ㅆ',
            'O' => 'ㅒ',
            'P' => 'ㅖ',
            ' ' => ' ',
            other => {
                const LOWER: [char; 26] = [
                    'ㅁ', 'ㅠ', 'ㅊ', 'ㅇ', 'ㄷ', 'ㄹ', 'ㅎ', 'ㅗ', 'ㅑ', 'ㅓ', 'ㅏ', 'ㅣ', 'ㅡ',
                    'ㅜ', 'ㅐ', 'ㅔ', 'ㅂ', 'ㄱ', 'ㄴ', 'ㅅ', 'ㅕ', 'ㅍ', 'ㅈ', 'ㅌ', 'ㅛ', 'ㅋ',
                ];
                LOWER[(other.to_ascii_lowercase() as u8 - b'a') as usize]
            }
        }
    };
    Some(text.chars().map(key).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syllables_half_typed_syllables_and_keyboards_meet_in_keystrokes() {
        let full = keystrokes("클라우드");
        assert_eq!(full, "ㅋㅡㄹㄹㅏㅇㅜㄷㅡ");
        assert!(full.starts_with(&keystrokes("클랑")));
        assert!(full.starts_with(&keystrokes("클라ㅇ")));
        assert_eq!(from_latin_keyboard("zmffkdnem").unwrap(), full);
        // Compound vowel and final: 왔 = ㅇ ㅗㅏ ㅆ, 닭 = ㄷ ㅏ ㄹㄱ.
        assert_eq!(keystrokes("왔닭"), "ㅇㅗㅏㅆㄷㅏㄹㄱ");
        assert_eq!(from_latin_keyboard("dhkTekfr").unwrap(), "ㅇㅗㅏㅆㄷㅏㄹㄱ");
        assert!(keystrokes("닭").starts_with(&keystrokes("달ㄱ")));
        // NFKC turns compatibility jamo into conjoining ones; same keys.
        assert_eq!(keystrokes("\u{1105}\u{1161}\u{11a8}"), keystrokes("락"));
        assert_eq!(keystrokes("docker 3"), "docker 3");
        assert_eq!(from_latin_keyboard("docker 3"), None);
    }

    #[test]
    fn initials_of_words_and_queries() {
        assert_eq!(initials("클라우드 네이티브"), "ㅋㄹㅇㄷㄴㅇㅌㅂ");
        assert!(is_initials("ㅋㄹㅇㄷ"));
        assert!(is_initials("\u{110f}\u{1105}"));
        assert!(!is_initials("ㅋㄹ우"));
        assert!(!is_initials("ㅏ"));
        assert!(!is_initials(" "));
    }
}
