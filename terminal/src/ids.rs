//! Short random ids, for what needs telling apart but is read by people: marks in
//! a command's output, watcher ids, socket and instance names.

/// `chars` random hex digits (at most 32).
pub fn short_id(chars: usize) -> String {
    let mut id = uuid::Uuid::new_v4().simple().to_string();
    id.truncate(chars);
    id
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_ids_have_the_length_asked_and_differ() {
        let (a, b) = (short_id(12), short_id(12));
        assert_eq!(a.len(), 12);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()), "{a}");
        assert_ne!(a, b);
        assert_eq!(short_id(99).len(), 32, "a uuid has 32 digits");
    }
}
