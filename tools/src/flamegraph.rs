//! `sqtt flamegraph`: folded stacks `frame;frame;... cycles`.
//!
//! Per wave instance the stack starts with the kernel frame; from the wave's start every
//! interval up to the next scope marker adds its cycles to the current stack, an exit pops
//! before an enter pushes (fused exit+enter), and the last interval runs to the wave's end.
//! Point markers and payload records never become frames.

use std::io::Write;

use crate::diag::{kind, Diagnostics};
use crate::engine::{Marker, Names, ScopeOp, Sink, Wave};
use sqtt_files::output::printable;

/// Stack trie with cycle weights.
#[derive(Debug, Default)]
pub struct Flamegraph {
    /// The nodes, one cache line each; node 0 is the root.
    nodes: Vec<Node>,
    /// Open-addressing table of the children that did not fit in their parent's
    /// [`Node::kids`], keyed by their `nodes` entry, 0 = empty (the root is no one's child).
    table: Vec<u32>,
    /// Children in `table`.
    spilled: usize,
    slots: Vec<FState>,
    pub unmatched_enter: u64,
    pub unmatched_exit: u64,
    first_unmatched: Option<String>,
}

/// Children kept in their parent's node.
const KIDS: usize = 6;

/// A stack: its weight, its parent and frame, and its first [`KIDS`] children, so that entering
/// a child mostly reads the one cache line of the parent (a program's scope mostly has a few
/// distinct children; a hash table of all children missed cache on tens of thousands of stacks).
#[derive(Debug, Default, Clone, Copy)]
#[repr(C, align(64))]
struct Node {
    weight: u64,
    parent: u32,
    frame: u32,
    /// Frames of the children in `kid`.
    kid_frame: [u32; KIDS],
    /// The first children, in the order they were entered first; 0 = empty.
    kid: [u32; KIDS],
}

#[derive(Debug, Default, Clone, Copy)]
struct FState {
    node: u32,

    depth: u32,
    last: u64,
}

/// Initial entries of [`Flamegraph::table`] (a power of two; kept at most half full).
const TABLE_START: usize = 64;
/// The stacks a flamegraph has room for from the start (4 MiB of address space).
const NODES_START: usize = 1 << 16;

#[inline]
fn line(parent: u32, frame: u32, mask: usize) -> usize {
    let key = (u64::from(parent) << 32) | u64::from(frame);
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as usize & mask
}

/// Asks for the cache line of `n`: the wave's next marker reads it (its weight, parent and
/// children), tens of records later, and with tens of thousands of stacks it has mostly left the
/// cache by then; a load would stall here instead, a prefetch does not.
#[inline(always)]
fn prefetch(n: &Node) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint: it reads nothing into the program and cannot fault
    // (the address is that of a live node anyway).
    unsafe {
        use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(n).cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = n;
}

impl Flamegraph {
    pub fn new() -> Flamegraph {
        // Room for many stacks from the start, in memory touched only as they come: a vector of
        // 64-byte-aligned nodes grows by copying into fresh pages (no in-place realloc at that
        // alignment), each faulted in again.
        let mut nodes = Vec::with_capacity(NODES_START);
        nodes.push(Node {
            frame: u32::MAX,
            ..Node::default()
        });
        Flamegraph {
            nodes,
            table: vec![0; TABLE_START],
            ..Default::default()
        }
    }

    #[inline]
    fn child(&mut self, parent: u32, frame: u32) -> u32 {
        let n = &self.nodes[parent as usize];
        for i in 0..KIDS {
            if n.kid[i] == 0 {
                return self.add_kid(parent, i, frame);
            }
            if n.kid_frame[i] == frame {
                return n.kid[i];
            }
        }
        self.child_table(parent, frame)
    }

    /// A new node for the `i`th child of `parent`.
    #[cold]
    fn add_kid(&mut self, parent: u32, i: usize, frame: u32) -> u32 {
        let id = self.push(parent, frame);
        let n = &mut self.nodes[parent as usize];
        n.kid_frame[i] = frame;
        n.kid[i] = id;
        id
    }

    fn push(&mut self, parent: u32, frame: u32) -> u32 {
        let id = self.nodes.len() as u32;
        self.nodes.push(Node {
            parent,
            frame,
            ..Node::default()
        });
        id
    }

    fn child_table(&mut self, parent: u32, frame: u32) -> u32 {
        let mask = self.table.len() - 1;
        let mut i = line(parent, frame, mask);
        loop {
            let c = self.table[i];
            if c == 0 {
                break;
            }
            let n = &self.nodes[c as usize];
            if n.parent == parent && n.frame == frame {
                return c;
            }
            i = (i + 1) & mask;
        }
        let id = self.push(parent, frame);
        self.table[i] = id;
        self.spilled += 1;
        if 2 * self.spilled > self.table.len() {
            self.grow();
        }
        id
    }

    #[cold]
    fn grow(&mut self) {
        self.table = vec![0; 2 * self.table.len()];
        let mask = self.table.len() - 1;
        for c in 1..self.nodes.len() {
            let n = self.nodes[c];
            if self.nodes[n.parent as usize].kid.contains(&(c as u32)) {
                continue;
            }
            let mut i = line(n.parent, n.frame, mask);
            while self.table[i] != 0 {
                i = (i + 1) & mask;
            }
            self.table[i] = c as u32;
        }
    }

    #[inline]
    fn advance(&mut self, slot: usize, t: u64) {
        let st = &mut self.slots[slot];
        let dt = t.saturating_sub(st.last);
        st.last = st.last.max(t);
        self.nodes[st.node as usize].weight += dt;
    }

    /// Folded stacks sorted by stack text, zero counts left out.
    pub fn folded(&self, names: &Names) -> Folded {
        let folded = self.folded_names(names);
        match walk_ranks(&folded) {
            Some(rank) => self.folded_in_walk_order(&folded, &rank),
            None => self.folded_sorted(&folded),
        }
    }

    /// Each frame's folded name, by frame index (the names of the run; `None` for a frame in no
    /// stack): made once, not once per stack it is in.
    fn folded_names<'n>(&self, names: &'n Names) -> Vec<Option<std::borrow::Cow<'n, str>>> {
        let mut folded = vec![None; names.len()];
        for node in self.nodes.iter().skip(1) {
            folded[node.frame as usize].get_or_insert_with(|| folded_frame(names.get(node.frame)));
        }
        folded
    }

    /// The stacks in the order of a walk of the tree that takes each node's line, then its
    /// children's subtrees by their names' order: the stacks' text order when
    /// [`walk_ranks`] gives the names' ranks. No sort of the lines, and each line made by
    /// extending its parent's.
    fn folded_in_walk_order(
        &self,
        folded: &[Option<std::borrow::Cow<'_, str>>],
        rank: &[u32],
    ) -> Folded {
        let n = self.nodes.len();
        // Every node but the root, by parent (a counting sort: `first[p]` where the children of
        // `p` start), each parent's children then by their frames' ranks: each node's children
        // a run, in the walk's order.
        let mut first = vec![0u32; n + 1];
        for node in &self.nodes[1..] {
            first[node.parent as usize + 1] += 1;
        }
        for i in 0..n {
            first[i + 1] += first[i];
        }
        let mut kids = vec![0u32; n.saturating_sub(1)];
        let mut fill = first.clone();
        for c in 1..n as u32 {
            let at = &mut fill[self.nodes[c as usize].parent as usize];
            kids[*at as usize] = c;
            *at += 1;
        }
        for p in 0..n {
            let run = &mut kids[first[p] as usize..first[p + 1] as usize];
            if run.len() > 1 {
                run.sort_unstable_by_key(|&c| rank[self.nodes[c as usize].frame as usize]);
            }
        }
        let mut out = Folded::with_lines(self.nodes.iter().filter(|n| n.weight != 0).count());
        let mut path = String::new();
        // (node, the path's length before it); the root's children first, pushed in reverse so
        // that the first comes off first.
        let mut stack: Vec<(u32, usize)> = Vec::new();
        let push_kids = |stack: &mut Vec<(u32, usize)>, node: u32, len: usize| {
            let (from, to) = (first[node as usize], first[node as usize + 1]);
            for &c in kids[from as usize..to as usize].iter().rev() {
                stack.push((c, len));
            }
        };
        push_kids(&mut stack, 0, 0);
        while let Some((c, len)) = stack.pop() {
            path.truncate(len);
            let node = &self.nodes[c as usize];
            if node.parent != 0 {
                path.push(';');
            }
            path.push_str(folded[node.frame as usize].as_deref().unwrap_or_default());
            if node.weight != 0 {
                out.push(&path, node.weight);
            }
            push_kids(&mut stack, c, path.len());
        }
        out
    }

    /// The stacks, each made from its frames, sorted by their text.
    fn folded_sorted(&self, folded: &[Option<std::borrow::Cow<'_, str>>]) -> Folded {
        let mut lines = Vec::new();
        let mut frames: Vec<&str> = Vec::new();
        for (i, node) in self.nodes.iter().enumerate() {
            let w = node.weight;
            if w == 0 || i == 0 {
                continue;
            }
            frames.clear();
            let mut n = i as u32;
            while n != 0 {
                let node = &self.nodes[n as usize];
                frames.push(folded[node.frame as usize].as_deref().unwrap_or_default());
                n = node.parent;
            }
            frames.reverse();
            lines.push((frames.join(";"), w));
        }
        lines.sort_unstable();
        let mut out = Folded::with_lines(lines.len());
        for (stack, count) in &lines {
            out.push(stack, *count);
        }
        out
    }

    /// Adds the unmatched counts to `diag`.
    pub fn report(&self, diag: &mut Diagnostics) {
        let ex = self.first_unmatched.clone().unwrap_or_default();
        diag.warn_n(kind::UNMATCHED_ENTER, self.unmatched_enter, || ex);
        diag.warn_n(kind::UNMATCHED_EXIT, self.unmatched_exit, String::new);
    }
}

/// The rank of each frame's folded name in byte order, when a walk of the tree that takes each
/// node's line, then its children's subtrees in that order, gives the lines in text order: no two
/// frames have the same name (two sibling subtrees would interleave), and no name is another's
/// followed by a byte that sorts before `;` (`a;x` sorts after `a0`, a sibling of `a`). None
/// otherwise.
fn walk_ranks(folded: &[Option<std::borrow::Cow<'_, str>>]) -> Option<Vec<u32>> {
    let mut by_name: Vec<(&str, usize)> = folded
        .iter()
        .enumerate()
        .filter_map(|(i, n)| n.as_deref().map(|n| (n, i)))
        .collect();
    by_name.sort_unstable();
    // The names that start with `a` follow it in byte order, the one with the lowest byte after
    // `a` first: each name's successor alone tells (linear, where checking every name `a`
    // prefixes took a square of the names' count and length for names `x`, `xx`, `xxx`, ...).
    for pair in by_name.windows(2) {
        let (a, b) = (pair[0].0, pair[1].0);
        if b.starts_with(a) && (b.len() == a.len() || b.as_bytes()[a.len()] < b';') {
            return None;
        }
    }
    let mut rank = vec![0u32; folded.len()];
    for (r, &(_, i)) in by_name.iter().enumerate() {
        rank[i] = r as u32;
    }
    Some(rank)
}

/// A frame name as the folded format can hold it: [`printable`] (a newline would split the
/// line, an escape sequence reach the terminal), and `;`, the frame separator, as `\x3b`.
pub fn folded_frame(name: &str) -> std::borrow::Cow<'_, str> {
    match printable(name) {
        n if n.contains(';') => std::borrow::Cow::Owned(n.replace(';', "\\x3b")),
        n => n,
    }
}

impl Sink for Flamegraph {
    fn wave_start(&mut self, _names: &Names, slot: usize, wave: &Wave) {
        if self.slots.len() <= slot {
            self.slots.resize(slot + 1, FState::default());
        }
        let base = self.child(0, wave.kernel);
        self.slots[slot] = FState {
            node: base,

            depth: 0,
            last: wave.begin,
        };
    }

    fn scope(&mut self, _names: &Names, slot: usize, time: u64, op: ScopeOp, m: &Marker) {
        self.advance(slot, time);
        let st = self.slots[slot];
        let mut node = st.node;
        let mut depth = st.depth;
        if matches!(op, ScopeOp::Exit | ScopeOp::ExitEnter) {
            if depth == 0 {
                self.unmatched_exit += 1;
            } else {
                node = self.nodes[node as usize].parent;
                depth -= 1;
            }
        }
        if matches!(op, ScopeOp::Enter | ScopeOp::ExitEnter) {
            node = self.child(node, m.frame);
            depth += 1;
        }
        if let Some(n) = self.nodes.get(node as usize) {
            prefetch(n);
        }
        let st = &mut self.slots[slot];
        st.node = node;
        st.depth = depth;
    }

    fn wave_end(&mut self, names: &Names, slot: usize, wave: &Wave, end: u64) {
        self.advance(slot, end);
        let st = self.slots[slot];
        if st.depth > 0 {
            self.unmatched_enter += u64::from(st.depth);
            if self.first_unmatched.is_none() {
                self.first_unmatched = Some(format!(
                    "{} in se {} cu {} simd {} wave {} #{}",
                    names.get(self.nodes[st.node as usize].frame),
                    wave.se,
                    wave.cu,
                    wave.simd,
                    wave.wave_id,
                    wave.instance
                ));
            }
        }
    }
}

/// Writes folded lines.
pub fn write_folded<W: Write>(out: &mut W, folded: &Folded) -> std::io::Result<()> {
    out.write_all(folded.text.as_bytes())
}

/// Writes an SVG flamegraph of the folded stacks with inferno.
pub fn write_svg<W: Write>(out: W, folded: &Folded, title: &str) -> std::io::Result<()> {
    let mut opts = inferno::flamegraph::Options::default();
    opts.title = title.to_string();
    opts.count_name = "cycles".to_string();
    inferno::flamegraph::from_lines(&mut opts, folded.text.lines(), out)
}

/// Folded stacks as the text `sqtt flamegraph` prints (a line `frame;frame;... count` each, in
/// the order given), made once: each line written into one buffer as it is found, where a string
/// a stack cost an allocation each and a second pass to print.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Folded {
    text: String,
    /// Per line: where its stack starts and ends in `text`, and its count.
    lines: Vec<(usize, usize, u64)>,
}

impl Folded {
    fn with_lines(n: usize) -> Folded {
        Folded {
            text: String::new(),
            lines: Vec::with_capacity(n),
        }
    }

    /// Adds the line of `stack` with `count`.
    pub fn push(&mut self, stack: &str, count: u64) {
        let start = self.text.len();
        self.text.push_str(stack);
        let end = self.text.len();
        self.text.push(' ');
        self.text.push_str(itoa::Buffer::new().format(count));
        self.text.push('\n');
        self.lines.push((start, end, count));
    }

    /// The lines, each as its stack and count.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&str, u64)> + '_ {
        self.lines
            .iter()
            .map(|&(start, end, count)| (&self.text[start..end], count))
    }

    /// The text as printed.
    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn len(&self) -> usize {
        self.lines.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }
}

impl IntoIterator for Folded {
    type Item = (String, u64);
    type IntoIter = std::vec::IntoIter<(String, u64)>;
    /// The lines as owned stacks and counts (for tests and other readers that keep them).
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
            .map(|(s, c)| (s.to_string(), c))
            .collect::<Vec<_>>()
            .into_iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tree of `n` random stacks over `frames`, with weights on some nodes.
    fn random_tree(frames: &[&str], n: usize, seed: u64) -> (Flamegraph, Names) {
        let mut names = Names::default();
        let ids: Vec<u32> = frames.iter().map(|f| names.intern(f)).collect();
        let mut fg = Flamegraph::new();
        let mut rng = crate::test_rng::Rng(seed | 1);
        for _ in 0..n {
            let mut node = 0;
            for _ in 0..1 + rng.below(5) {
                node = fg.child(node, *rng.pick(&ids));
                if rng.below(3) == 0 {
                    fg.nodes[node as usize].weight += 1 + rng.below(100);
                }
            }
        }
        (fg, names)
    }

    /// The walk gives the lines in the text order a sort gives, whenever the frames' names let
    /// it; names one of which extends another with a byte before `;` (digits, spaces,
    /// parentheses), or that fold to the same text, take the sort.
    #[test]
    fn the_walk_s_order_is_the_text_order() {
        let plain: &[&str] = &["main", "kern", "fn_b", "fn_a", "x", "a;b", "", "zz"];
        let clash: &[&[&str]] = &[
            &["fn1", "fn10", "k"],
            &["f", "f(int)", "k"],
            &["f", "f g", "k"],
            &["a;b", "a\\x3bb", "k"],
            &["", "0", "k"],
            &["f", "fa", "f0", "k"],
            &["ab", "abc", "abz", "abc1", "k"],
        ];
        for seed in 0..20 {
            let (fg, names) = random_tree(plain, 300, seed);
            let folded = fg.folded_names(&names);
            let rank = walk_ranks(&folded).expect("names a walk can take in order");
            let walked = fg.folded_in_walk_order(&folded, &rank);
            let sorted = fg.folded_sorted(&folded);
            assert!(!sorted.is_empty());
            assert_eq!(walked, sorted, "seed {seed}");
            assert_eq!(fg.folded(&names), sorted);
        }
        for frames in clash {
            let (fg, names) = random_tree(frames, 300, 7);
            let folded = fg.folded_names(&names);
            assert!(walk_ranks(&folded).is_none(), "{frames:?}");
            let out = fg.folded(&names);
            assert!(out.iter().is_sorted(), "{frames:?}");
            // The walk with the names in byte order gives the same lines, but not in text order:
            // the check is what keeps these from it.
            let mut by_name: Vec<usize> = (0..folded.len()).collect();
            by_name.sort_by_key(|&i| folded[i].as_deref());
            let mut rank = vec![0u32; folded.len()];
            for (r, &i) in by_name.iter().enumerate() {
                rank[i] = r as u32;
            }
            let walked = fg.folded_in_walk_order(&folded, &rank);
            assert_ne!(walked, out, "{frames:?}: the walk would have been right");
            let mut resorted: Vec<(String, u64)> = walked.into_iter().collect();
            resorted.sort_unstable();
            let out: Vec<(String, u64)> = out.into_iter().collect();
            assert_eq!(resorted, out, "{frames:?}: the same lines");
        }
    }

    /// Names each of which extends the one before (`x`, `xx`, `xxx`, ...) are told apart in
    /// one pass: ranked by length when they extend with a byte after `;`, and a clash found
    /// when the last extends with one before it.
    #[test]
    fn nested_names_are_ranked_in_one_pass() {
        let n = 3000;
        let mut folded: Vec<Option<std::borrow::Cow<str>>> =
            (1..=n).rev().map(|k| Some("x".repeat(k).into())).collect();
        let rank = walk_ranks(&folded).expect("no clash");
        assert_eq!(rank, (0..n as u32).rev().collect::<Vec<_>>());
        folded.push(Some(format!("{}0", "x".repeat(n)).into()));
        assert!(walk_ranks(&folded).is_none());
    }

    /// The folded text is the lines as `format!` writes them (every count's digits, from 0 to
    /// u64::MAX), and its lines read back as pushed.
    #[test]
    fn folded_text_is_the_lines_printed() {
        let mut rng = crate::test_rng::Rng(0x5eed);
        let mut lines: Vec<(String, u64)> = vec![("k".into(), 0), ("k;a b".into(), u64::MAX)];
        for i in 0..2000u64 {
            let count = match i % 3 {
                0 => rng.below(10),
                1 => rng.below(1 << 40),
                _ => rng.below(u64::MAX),
            };
            lines.push((format!("k;f{i};g"), count));
        }
        let mut folded = Folded::default();
        for (stack, count) in &lines {
            folded.push(stack, *count);
        }
        let want: String = lines.iter().map(|(s, c)| format!("{s} {c}\n")).collect();
        assert_eq!(folded.text(), want);
        let mut written = Vec::new();
        write_folded(&mut written, &folded).unwrap();
        assert_eq!(written, want.as_bytes());
        assert_eq!(folded.len(), lines.len());
        assert!(folded
            .iter()
            .eq(lines.iter().map(|(s, c)| (s.as_str(), *c))));
        assert_eq!(folded.into_iter().collect::<Vec<_>>(), lines);
    }
}
