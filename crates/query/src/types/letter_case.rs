//! `upper`, `lower` and `initcap` as PostgreSQL computes them: one character at a time, each to the one
//! character its case maps to (the C library's `towupper`), so no text grows or shrinks. Rust's
//! `to_uppercase` follows Unicode's full mappings instead: `upper('ß')` was `SS` where PostgreSQL keeps
//! `ß`, and `lower('İ')` was two characters.

fn upper_char(c: char) -> char {
    let mut m = c.to_uppercase();
    match (m.next(), m.next()) {
        (Some(u), None) => u,
        _ => c,
    }
}

fn lower_char(c: char) -> char {
    // The one whose full mapping is `i` and a combining dot: the C library's is `i`.
    if c == '\u{130}' {
        return 'i';
    }
    let mut m = c.to_lowercase();
    match (m.next(), m.next()) {
        (Some(l), None) => l,
        _ => c,
    }
}

pub fn upper(s: &str) -> String {
    s.chars().map(upper_char).collect()
}

pub fn lower(s: &str) -> String {
    s.chars().map(lower_char).collect()
}

/// The first letter of each word upper case, the rest lower; words are runs of letters and digits.
pub fn initcap(s: &str) -> String {
    let mut in_word = false;
    s.chars()
        .map(|c| {
            let out = if in_word { lower_char(c) } else { upper_char(c) };
            in_word = c.is_alphanumeric();
            out
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_character_for_one() {
        assert_eq!(upper("straße ß"), "STRAßE ß");
        assert_eq!(lower("İSTANBUL"), "istanbul");
        assert_eq!(initcap("hello wORLD 2nd-place ßa"), "Hello World 2nd-Place ßa");
        assert_eq!(upper("ǆ"), "Ǆ");
    }
}
