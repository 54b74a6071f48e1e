//! The README's tool reference is exactly what `cohort tools --markdown` prints, so
//! it never drifts from the schemas. Refresh it with `UPDATE_README=1 cargo test --test readme`.

#[test]
fn the_tool_reference_matches_the_schemas() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md");
    let readme = std::fs::read_to_string(&path).unwrap();
    let (start, end) = ("<!-- tools:start -->\n", "<!-- tools:end -->");
    let a = readme
        .find(start)
        .expect("README has the tools:start marker")
        + start.len();
    let b = readme.find(end).expect("README has the tools:end marker");
    let generated = cohort::mcp::tool_reference_markdown();
    if std::env::var("UPDATE_README").is_ok_and(|v| v == "1") {
        let updated = format!("{}{}{}", &readme[..a], generated, &readme[b..]);
        std::fs::write(&path, updated).unwrap();
        return;
    }
    assert!(
        readme[a..b] == generated,
        "README.md's tool reference is out of date: run `UPDATE_README=1 cargo test --test readme`"
    );
}
