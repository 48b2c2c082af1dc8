//! Where a study file sets each key: its text with the parser's spans, so
//! that an error names the line of the setting at fault.

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use crate::plan::study::{StudyFile, label};

/// A study's text with the spans of its keys: where each setting is written.
pub(super) struct Lines<'t> {
    text: &'t str,
    doc: Option<Spanned<DeTable<'t>>>,
    /// Running at `--scale original`: a key set in `[original]` wins.
    original: bool,
}

/// A value of a study's text, as parsed with its span.
type Node<'a, 't> = &'a Spanned<DeValue<'t>>;

impl<'t> Lines<'t> {
    /// The spans of `text` (none if it does not parse: then no lines).
    pub(super) fn new(text: &'t str, original: bool) -> Self {
        Lines {
            text,
            doc: DeTable::parse(text).ok(),
            original,
        }
    }

    /// The line (from 1) of byte `at`.
    pub(super) fn line(&self, at: usize) -> usize {
        self.text[..at.min(self.text.len())].matches('\n').count() + 1
    }

    /// `origin:line`, or `origin` alone without a line.
    pub(super) fn at(&self, origin: &str, line: Option<usize>) -> String {
        match line {
            Some(l) => format!("{origin}:{l}"),
            None => origin.to_string(),
        }
    }

    /// The value at `path` (keys; a number indexes an array, e.g.
    /// `["target", "2", "cache_start"]`) and the byte its key (or element)
    /// starts at; else `Err` with the start of the deepest table reached.
    pub(super) fn walk_node(&self, path: &[&str]) -> Result<(Node<'_, 't>, usize), Option<usize>> {
        let doc = self.doc.as_ref().ok_or(None)?;
        let (first, rest) = path.split_first().ok_or(None)?;
        let (mut node, mut at) = key_of(doc.get_ref(), first).ok_or(None)?;
        for seg in rest {
            let deepest = Some(at);
            (node, at) = match node.get_ref() {
                DeValue::Table(t) => key_of(t, seg),
                DeValue::Array(a) => seg
                    .parse::<usize>()
                    .ok()
                    .and_then(|n| a.get(n))
                    .map(|e| (e, e.span().start)),
                _ => None,
            }
            .ok_or(deepest)?;
        }
        Ok((node, at))
    }

    /// The value at `path` (in `[original]` first at that scale) and the
    /// byte its key starts at.
    pub(super) fn node(&self, path: &[&str]) -> Option<(Node<'_, 't>, usize)> {
        let within = [&["original"], path].concat();
        self.original
            .then(|| self.walk_node(&within).ok())
            .flatten()
            .or_else(|| self.walk_node(path).ok())
    }

    /// The line of `path`'s key (`true`), else of the deepest table on the
    /// way (`false`).
    pub(super) fn walk(&self, path: &[&str]) -> Option<(usize, bool)> {
        match self.walk_node(path) {
            Ok((_, at)) => Some((self.line(at), true)),
            Err(deepest) => deepest.map(|at| (self.line(at), false)),
        }
    }

    /// The line where `path` is set (in `[original]` first at that scale),
    /// else that of the deepest table on the way (its header).
    pub(super) fn of(&self, path: &[&str]) -> Option<usize> {
        if let Some((_, at)) = self.node(path) {
            return Some(self.line(at));
        }
        self.walk(path).map(|(l, _)| l)
    }

    /// The line of `path`, and how plainly `msg` quotes its value (see
    /// [`Lines::quoted`]): of an array, the element it quotes most plainly;
    /// `None` when `path` is not set.
    pub(super) fn value_line(&self, path: &[&str], msg: &str) -> Option<(usize, u8)> {
        let (node, at) = self.node(path)?;
        if let DeValue::Array(a) = node.get_ref()
            && let Some((e, q)) = best(a.iter().map(|e| (e, self.quoted(e, msg))))
        {
            return Some((self.line(e.span().start), q));
        }
        Some((self.line(at), self.quoted(node, msg)))
    }

    /// How plainly `msg` holds `v`'s text (a string's content): 2 in quotes
    /// (`'1/2'`), 1 as a whole word, 0 not at all.
    pub(super) fn quoted(&self, v: Node<'_, 't>, msg: &str) -> u8 {
        let text = match v.get_ref() {
            DeValue::String(s) => s.as_ref(),
            DeValue::Array(_) | DeValue::Table(_) => return 0,
            _ => &self.text[v.span()],
        };
        let word = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '.');
        let quote = |c: Option<char>| matches!(c, Some('\'' | '"'));
        if text.is_empty() {
            return 0;
        }
        msg.match_indices(text)
            .map(|(i, _)| {
                let (before, after) = (
                    msg[..i].chars().next_back(),
                    msg[i + text.len()..].chars().next(),
                );
                match (quote(before) && quote(after), word(before) || word(after)) {
                    (true, _) => 2,
                    (false, false) => 1,
                    (false, true) => 0,
                }
            })
            .max()
            .unwrap_or(0)
    }

    /// The line of the key of table `table` that `msg` names first (a value
    /// it quotes, where several are listed); `target` last.
    pub(super) fn in_table(&self, table: &[&str], msg: &str) -> Option<usize> {
        let words = msg
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|w| !w.is_empty() && *w != "target");
        words
            .chain(["target"])
            .find_map(|w| self.value_line(&[table, &[w]].concat(), msg))
            .map(|(l, _)| l)
    }

    /// The line of the key a message from [`expand`] names: the key it
    /// starts with (`workload.ratio: …`) where set, in `[sweep]`,
    /// `[workload]` or `[load]`, or a target (the first that holds the value
    /// it quotes, else the first set); within the target it names (`target
    /// 'x': …`), else that target's key it names.
    pub(super) fn blame(&self, s: &StudyFile, msg: &str) -> Option<usize> {
        let scope = msg
            .strip_prefix("target '")
            .and_then(|r| r.split_once("': "))
            .and_then(|(name, rest)| {
                let i = s.targets.iter().position(|t| label(t) == name)?;
                Some((i.to_string(), rest))
            });
        let rest = scope.as_ref().map_or(msg, |(_, r)| r);
        let head = rest
            .split(|c: char| !(c.is_ascii_alphanumeric() || "_.-".contains(c)))
            .next()
            .unwrap_or_default();
        let path: Vec<&str> = head.split('.').collect();
        let name = path.last().copied().unwrap_or_default();
        let indices: Vec<String> = (0..s.targets.len()).map(|i| i.to_string()).collect();
        let mut candidates: Vec<Vec<&str>> = Vec::new();
        if path.len() > 1 || scope.is_none() {
            candidates.push(path.clone());
            candidates.extend(["sweep", "workload", "load"].map(|t| vec![t, name]));
        }
        if scope.is_none() {
            candidates.extend(indices.iter().map(|i| vec!["target", i, name]));
        }
        let picked =
            best(candidates.iter().filter_map(|p| self.value_line(p, msg))).map(|(l, _)| l);
        picked.or_else(|| {
            let (i, rest) = scope.as_ref()?;
            self.in_table(&["target", i], rest)
        })
    }

    /// The line of the first key named `name` anywhere under table `table`.
    pub(super) fn named_under(&self, table: &str, name: &str) -> Option<usize> {
        fn dfs(v: &Spanned<DeValue<'_>>, name: &str) -> Option<usize> {
            match v.get_ref() {
                DeValue::Table(t) => t.iter().find_map(|(k, v)| match k.get_ref() == name {
                    true => Some(k.span().start),
                    false => dfs(v, name),
                }),
                DeValue::Array(a) => a.iter().find_map(|e| dfs(e, name)),
                _ => None,
            }
        }
        if name.is_empty() {
            return None;
        }
        let (node, _) = self.walk_node(&[table]).ok()?;
        dfs(node, name).map(|at| self.line(at))
    }
}

/// The first of `items` with the highest score.
fn best<T>(items: impl Iterator<Item = (T, u8)>) -> Option<(T, u8)> {
    items.reduce(|a, b| if b.1 > a.1 { b } else { a })
}

/// The value of key `key` in `t`, and the byte the key starts at.
fn key_of<'a, 't>(t: &'a DeTable<'t>, key: &str) -> Option<(Node<'a, 't>, usize)> {
    t.iter()
        .find(|(k, _)| k.get_ref() == key)
        .map(|(k, v)| (v, k.span().start))
}
