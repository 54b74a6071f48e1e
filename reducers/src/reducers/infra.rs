//! Outputs with a shape of their own: `terraform plan` (what happens to each resource),
//! `npm ls` (a tree whose problems matter), `pip list` / `pip freeze` (package lists).

use super::{re, write_list};
use crate::doc::{Out, Post, Src};
use crate::model::HiddenReason::{Capped, Detail, Noise};

re!(
    TF_HEADER,
    r"^\s+# \S+ (will be|must be|has been|is tainted|\(\w+\))"
);
re!(TF_CHANGE, r" -> |# forces replacement|\(sensitive value\)");
re!(
    TF_NOISE,
    r"^(Terraform used the selected providers|plan\. Resource actions are indicated|Terraform will perform the following actions:|Note: You didn't use the -out option|guarantee to take exactly these actions|Terraform has compared your real infrastructure|  [+~-] (create|update in-place|destroy)$|-/\+ destroy and then create|─+$)"
);

/// terraform plan / apply: each resource's `# … will be created` line and the attributes
/// that change (`a -> b`, `# forces replacement`) are kept; the attributes of a resource
/// created or destroyed whole, and the boilerplate around the plan, are hidden. The
/// `Plan:` line, outputs, warnings and errors stay.
pub(crate) fn terraform<'a>(src: &Src<'a>, post: Post) -> Option<Out<'a>> {
    if !src
        .lines
        .iter()
        .any(|l| TF_HEADER.is_match(l) || l.starts_with("Plan: "))
    {
        return None;
    }
    let mut out = Out::new(post);
    out.post.fold_similar = false;
    let mut in_resource = false;
    for i in 0..src.len() {
        let line = src.line(i);
        if TF_HEADER.is_match(line) {
            in_resource = true;
            out.keep(src, i);
        } else if in_resource && line.is_empty() {
            in_resource = false;
            out.keep(src, i);
        } else if in_resource && !TF_CHANGE.is_match(line) {
            out.hide(src, i, Detail);
        } else if TF_NOISE.is_match(line) {
            out.hide(src, i, Noise);
        } else {
            out.keep(src, i);
        }
    }
    Some(out)
}

re!(
    NPM_PROBLEM,
    r"UNMET (OPTIONAL )?DEPENDENCY|\binvalid\b|\bextraneous\b|\bmissing\b|\bELSPROBLEMS\b"
);

/// npm ls: the root, every node with a problem (`UNMET DEPENDENCY`, `invalid`,
/// `extraneous`, `missing`) with the nodes above it up to the root, and npm's own messages
/// are kept; the other nodes are hidden under one marker that counts them.
pub(crate) fn npm_ls<'a>(src: &Src<'a>, post: Post) -> Option<Out<'a>> {
    let depth = |l: &str| -> Option<usize> {
        let name = l.find(|c: char| !"│├└─┬ ".contains(c))?;
        let drawn = l[..name].chars().count();
        (drawn > 0 && l.starts_with(['│', '├', '└', ' '])).then_some(drawn / 2)
    };
    let n = src.len();
    let nodes: Vec<Option<usize>> = src.lines.iter().map(|l| depth(l)).collect();
    if nodes.iter().flatten().count() < 3 {
        return None;
    }
    // npm's own messages stay, but for its update notice.
    let notice = |i: usize| src.line(i).starts_with("npm notice");
    let mut keep: Vec<bool> = (0..n).map(|i| nodes[i].is_none() && !notice(i)).collect();
    for (i, node) in nodes.iter().enumerate() {
        let Some(d) = *node else { continue };
        if !NPM_PROBLEM.is_match(src.line(i)) {
            continue;
        }
        keep[i] = true;
        // The nodes above it: the nearest earlier node of each smaller depth.
        let mut want = d;
        for k in (0..i).rev() {
            if want == 0 {
                break;
            }
            if let Some(dk) = nodes[k] {
                if dk < want {
                    keep[k] = true;
                    want = dk;
                }
            }
        }
    }
    let mut out = Out::new(post);
    out.post.fold_similar = false;
    let hidden: Vec<usize> = (0..n).filter(|&i| !keep[i] && !notice(i)).collect();
    for (i, &kept) in keep.iter().enumerate() {
        if kept {
            out.keep(src, i);
        } else if notice(i) {
            out.hide(src, i, Noise);
        } else {
            out.hide_excerpt(i, Capped);
        }
    }
    if let (Some(&first), Some(&last)) = (hidden.first(), hidden.last()) {
        let what = "packages without problems hidden";
        let note = out.post.marker(hidden.len(), what, &(first..last + 1), 0);
        let at = (last + 1).min(n);
        out.note(note, at);
        out.entries.sort_by_key(|e| (e.raw, e.nraw != 0));
    }
    Some(out)
}

re!(PIP_ROW, r"^(\S+)\s{2,}(\S+)(\s+\S.*)?$");
re!(PIP_RULE, r"^-+( -+)+$");

/// pip list / pip freeze: the header kept, the packages listed whole several to a line
/// (`name version`, `name==version`), long lists cut to their first and last.
pub(crate) fn pip_list<'a>(src: &Src<'a>, post: Post) -> Option<Out<'a>> {
    let mut out = Out::new(post);
    out.post.fold_similar = false;
    let n = src.len();
    let mut i = 0;
    while i < n {
        let line = src.line(i);
        let row = |k: usize| {
            let l = src.line(k);
            let freeze = l.contains("==") && !l.contains(' ');
            let listed = PIP_ROW.is_match(l) && !l.starts_with("Package ");
            (freeze || listed) && !src.signal[k]
        };
        if PIP_RULE.is_match(line) {
            out.hide(src, i, Noise);
            i += 1;
            continue;
        }
        if !row(i) {
            out.keep(src, i);
            i += 1;
            continue;
        }
        let j = i + (i..n).take_while(|&k| row(k)).count();
        let items: Vec<String> = (i..j)
            .map(|k| src.line(k).split_whitespace().collect::<Vec<_>>().join(" "))
            .collect();
        write_list(&mut out, src, i, &items, "", "packages");
        i = j;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use crate::{reduce, Options};

    #[test]
    fn npm_ls_keeps_problems_with_their_parents() {
        let mut raw = String::from("app@1.0.0 /srv/app\n├─┬ express@4.19.2\n│ ├── body-parser@1.20.2\n│ └── cookie@0.5.0 invalid: \"~0.6.0\" from node_modules/express\n");
        for i in 0..20 {
            raw.push_str(&format!("├── util-{i}@1.0.0\n"));
        }
        raw.push_str("└── left@1.0.0 extraneous\n");
        let r = reduce("npm ls --all", raw.as_bytes(), &Options::default());
        assert_eq!(r.reducer, "npm-ls");
        assert_eq!(
            r.text,
            "app@1.0.0 /srv/app\n├─┬ express@4.19.2\n│ └── cookie@0.5.0 invalid: \"~0.6.0\" from node_modules/express\n\
             … 21 packages without problems hidden (3-24)\n└── left@1.0.0 extraneous"
        );
    }
}
