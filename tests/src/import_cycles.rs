//! The "no file import cycle" rule: inside one crate, no source file may refer to an item of
//! another file that (directly or through further files) refers back to it. The checker reads
//! each member's `src/` lexically with `syn`, builds the file graph and reports every strongly
//! connected component of more than one file as a readable sentence.
//!
//! What counts as an edge `A -> B`: a path in A's code (a private `use`, or a `crate::`,
//! `super::`, `self::` or imported-name path in items, expressions, types, patterns and macro
//! bodies) that resolves to an item *defined* in B. A `mod` declaration is no edge, and neither
//! is a `pub use` re-export by itself: re-exports and glob imports are followed to the file
//! that defines the item, so `use crate::m::Thing` where `m.rs` re-exports `thing::Thing` is
//! an edge to `m/thing.rs`. Test code (`#[cfg(test)]` items, `mod tests`, `#[test]` functions)
//! is skipped, and a path that leaves the crate (another crate, the standard library) is no
//! edge. The resolution is deliberately lexical: method calls and trait-driven dispatch do
//! not show, which is fine because importing the trait or type that enables them already does.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::fmt;
use std::path::{Path, PathBuf};

use proc_macro2::{Spacing, TokenStream, TokenTree};
use syn::ext::IdentExt as _;
use syn::visit::Visit;

/// Why the sources could not be read: the checker fails loudly rather than passing on less.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// A file or directory cannot be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file or directory.
        path: PathBuf,
        /// The system's reason.
        #[source]
        source: std::io::Error,
    },
    /// A file does not parse (as Rust, or the manifest as TOML).
    #[error("cannot parse {}: {reason}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parser's words.
        reason: String,
    },
    /// The manifest lists no workspace members.
    #[error("{} has no [workspace] members", .0.display())]
    NoMembers(PathBuf),
}

type Result<T> = std::result::Result<T, CheckError>;

fn read_err(path: &Path) -> impl FnOnce(std::io::Error) -> CheckError + '_ {
    move |source| CheckError::Read {
        path: path.to_path_buf(),
        source,
    }
}

fn parse_err(path: &Path) -> impl FnOnce(String) -> CheckError + '_ {
    move |reason| CheckError::Parse {
        path: path.to_path_buf(),
        reason,
    }
}

/// One cycle between files of a crate: a strongly connected component of the file graph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cycle {
    /// Crate directory (workspace member), e.g. `node-agent`.
    pub krate: String,
    /// A closed walk through every file of the component, starting and ending at the same
    /// file; paths relative to the crate directory.
    pub walk: Vec<String>,
    /// Every edge inside the component and the paths that make it, for fixing it.
    pub edges: Vec<EdgeWhy>,
}

/// One edge of a cycle and the references that create it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EdgeWhy {
    /// Referring file.
    pub from: String,
    /// File that defines what is referred to.
    pub to: String,
    /// The paths as written in `from`, with the item they resolve to.
    pub paths: Vec<String>,
}

impl fmt::Display for Cycle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.krate, self.walk.join(" -> "))
    }
}

impl Cycle {
    /// Why each file of the cycle depends on the next, one line per edge.
    pub fn why(&self) -> Vec<String> {
        self.edges
            .iter()
            .map(|e| format!("  {} -> {}: {}", e.from, e.to, e.paths.join(", ")))
            .collect()
    }
}

/// Cycles in every member of the workspace at `root` (members from its `Cargo.toml`),
/// as sentences like `node-agent: src/a.rs -> src/b.rs -> src/a.rs`.
pub fn workspace_cycles(root: &Path) -> Result<Vec<String>> {
    Ok(find_in_workspace(root)?
        .iter()
        .map(ToString::to_string)
        .collect())
}

/// Cycles in every member of the workspace at `root`, with the references behind each edge.
pub fn find_in_workspace(root: &Path) -> Result<Vec<Cycle>> {
    let members = workspace_members(root)?;
    let dirs: Vec<&str> = members.iter().map(String::as_str).collect();
    find(root, &dirs)
}

/// Cycles in the given crate directories (relative to `root`).
pub fn find(root: &Path, crate_dirs: &[&str]) -> Result<Vec<Cycle>> {
    let mut out = Vec::new();
    for dir in crate_dirs {
        out.extend(crate_cycles(&root.join(dir), dir)?);
    }
    Ok(out)
}

/// The `[workspace] members` of the `Cargo.toml` at `root`, as written (no glob expansion:
/// this workspace lists its members by name).
pub fn workspace_members(root: &Path) -> Result<Vec<String>> {
    let path = root.join("Cargo.toml");
    let text = std::fs::read_to_string(&path).map_err(read_err(&path))?;
    let table: toml::Table = toml::from_str(&text).map_err(|e| parse_err(&path)(e.to_string()))?;
    let Some(members) = table
        .get("workspace")
        .and_then(|w| w.get("members"))
        .and_then(toml::Value::as_array)
    else {
        return Err(CheckError::NoMembers(path));
    };
    Ok(members
        .iter()
        .filter_map(|m| m.as_str().map(str::to_string))
        .collect())
}

/// Cycles in one crate whose directory is `crate_dir`; `name` labels the sentences.
pub fn crate_cycles(crate_dir: &Path, name: &str) -> Result<Vec<Cycle>> {
    let model = Crate::load(crate_dir)?;
    let edges = model.edges();
    Ok(components(&edges)
        .into_iter()
        .map(|comp| {
            let walk = closed_walk(&comp, &edges)
                .into_iter()
                .map(|f| model.files[f].clone())
                .collect();
            let mut why = Vec::new();
            for (&(from, to), paths) in &edges {
                if comp.contains(&from) && comp.contains(&to) {
                    why.push(EdgeWhy {
                        from: model.files[from].clone(),
                        to: model.files[to].clone(),
                        paths: paths.iter().cloned().collect(),
                    });
                }
            }
            Cycle {
                krate: name.to_string(),
                walk,
                edges: why,
            }
        })
        .collect())
}

/// File-to-file edges, each with the written paths that create it.
type Edges = BTreeMap<(usize, usize), BTreeSet<String>>;

/// A module: a file or an inline `mod x { .. }` block, with the names it binds.
#[derive(Debug, Default)]
struct Module {
    root: usize,
    parent: Option<usize>,
    children: HashMap<String, usize>,
    /// Items defined here, by name, with the file that holds their definition.
    items: HashMap<String, usize>,
    uses: Vec<Binding>,
    globs: Vec<Binding>,
}

/// A name brought into a module by `use` (for a glob, `name` is empty).
#[derive(Debug)]
struct Binding {
    name: String,
    path: Vec<String>,
    /// Written inside a function body: only that module's own code sees it.
    block_local: bool,
}

/// A written path that may refer to an item of another file.
#[derive(Debug)]
struct Reference {
    module: usize,
    file: usize,
    path: Vec<String>,
}

/// What a path resolves to.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    Module(usize),
    Item { file: usize, name: String },
}

/// Which namespace a lookup prefers: a path segment followed by more segments is most likely
/// a module; the last one most likely the item itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Want {
    Middle,
    Last,
}

/// Re-exports chained deeper than this are treated as unresolvable (it also stops `use`
/// bindings that refer to each other from looping).
const MAX_DEPTH: usize = 48;

/// One crate's module trees (library, binaries) and the references their files make.
#[derive(Debug, Default)]
struct Crate {
    dir: PathBuf,
    files: Vec<String>,
    file_ids: HashMap<String, usize>,
    modules: Vec<Module>,
    references: Vec<Reference>,
}

impl Crate {
    fn load(dir: &Path) -> Result<Crate> {
        let mut model = Crate {
            dir: dir.to_path_buf(),
            ..Crate::default()
        };
        let src = dir.join("src");
        let mut roots: Vec<PathBuf> = ["lib.rs", "main.rs"]
            .iter()
            .map(|r| src.join(r))
            .filter(|p| p.is_file())
            .collect();
        let bin = src.join("bin");
        if bin.is_dir() {
            let mut bins = Vec::new();
            for entry in std::fs::read_dir(&bin).map_err(read_err(&bin))? {
                let path = entry.map_err(read_err(&bin))?.path();
                if path.extension().is_some_and(|e| e == "rs") {
                    bins.push(path);
                } else if path.join("main.rs").is_file() {
                    bins.push(path.join("main.rs"));
                }
            }
            bins.sort();
            roots.extend(bins);
        }
        for root in roots {
            let id = model.modules.len();
            model.modules.push(Module {
                root: id,
                ..Module::default()
            });
            let child_dir = root.parent().map(Path::to_path_buf).unwrap_or_default();
            model.load_file(&root, id, child_dir)?;
        }
        Ok(model)
    }

    fn file_id(&mut self, path: &Path) -> usize {
        let rel = path
            .strip_prefix(&self.dir)
            .unwrap_or(path)
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/");
        if let Some(&id) = self.file_ids.get(&rel) {
            return id;
        }
        let id = self.files.len();
        self.files.push(rel.clone());
        self.file_ids.insert(rel, id);
        id
    }

    /// Parses the file that holds `module`'s body; `child_dir` is where its `mod x;` files live.
    fn load_file(&mut self, path: &Path, module: usize, child_dir: PathBuf) -> Result<()> {
        let text = std::fs::read_to_string(path).map_err(read_err(path))?;
        let parsed = syn::parse_file(&text).map_err(|e| parse_err(path)(e.to_string()))?;
        let file = self.file_id(path);
        let here = path.parent().map(Path::to_path_buf).unwrap_or_default();
        self.walk_items(&parsed.items, module, file, &Dirs { child_dir, here })
    }

    fn walk_items(
        &mut self,
        items: &[syn::Item],
        module: usize,
        file: usize,
        dirs: &Dirs,
    ) -> Result<()> {
        for item in items {
            if is_test_only(item_attrs(item)) {
                continue;
            }
            match item {
                syn::Item::Mod(m) => self.walk_mod(m, module, file, dirs)?,
                syn::Item::Use(u) => {
                    // A re-export (`pub use`, `pub(crate) use`) is no edge by itself: the
                    // files that use the name through it get the edge instead.
                    let reexport = !matches!(u.vis, syn::Visibility::Inherited);
                    self.add_use(&u.tree, module, file, false, !reexport);
                }
                _ => {
                    for name in item_names(item) {
                        self.modules[module].items.insert(name.clone(), file);
                        if is_exported_macro(item) {
                            let root = self.modules[module].root;
                            self.modules[root].items.insert(name, file);
                        }
                    }
                    let mut refs = RefCollector {
                        krate: self,
                        module,
                        file,
                    };
                    refs.visit_item(item);
                }
            }
        }
        Ok(())
    }

    fn walk_mod(
        &mut self,
        m: &syn::ItemMod,
        parent: usize,
        file: usize,
        dirs: &Dirs,
    ) -> Result<()> {
        let name = m.ident.unraw().to_string();
        if name == "tests" {
            return Ok(());
        }
        let id = self.modules.len();
        let root = self.modules[parent].root;
        self.modules.push(Module {
            root,
            parent: Some(parent),
            ..Module::default()
        });
        self.modules[parent].children.insert(name.clone(), id);
        let explicit = path_attr(&m.attrs);
        match &m.content {
            Some((_, items)) => {
                let inner = Dirs {
                    child_dir: dirs.child_dir.join(explicit.as_deref().unwrap_or(&name)),
                    here: dirs.child_dir.join(&name),
                };
                self.walk_items(items, id, file, &inner)
            }
            None => {
                let path = match explicit {
                    Some(p) => dirs.here.join(p),
                    None => {
                        let flat = dirs.child_dir.join(format!("{name}.rs"));
                        if flat.is_file() {
                            flat
                        } else {
                            dirs.child_dir.join(&name).join("mod.rs")
                        }
                    }
                };
                let child_dir = if path.file_name().is_some_and(|f| f == "mod.rs") {
                    path.parent().map(Path::to_path_buf).unwrap_or_default()
                } else {
                    path.with_extension("")
                };
                self.load_file(&path, id, child_dir)
            }
        }
    }

    /// Records a `use` tree as bindings of `module`; `is_reference` also makes each imported
    /// path a reference from `file` (a private import is a use of what it imports).
    fn add_use(
        &mut self,
        tree: &syn::UseTree,
        module: usize,
        file: usize,
        block_local: bool,
        is_reference: bool,
    ) {
        let mut leaves = Vec::new();
        flatten_use(tree, &mut Vec::new(), &mut leaves);
        for (name, path) in leaves {
            if path.is_empty() {
                continue;
            }
            if is_reference {
                self.references.push(Reference {
                    module,
                    file,
                    path: path.clone(),
                });
            }
            let binding = Binding {
                name: name.clone().unwrap_or_default(),
                path,
                block_local,
            };
            match name {
                Some(n) if n == "_" => {}
                Some(_) => self.modules[module].uses.push(binding),
                None => self.modules[module].globs.push(binding),
            }
        }
    }

    fn add_reference(&mut self, module: usize, file: usize, path: Vec<String>) {
        if !path.is_empty() {
            self.references.push(Reference { module, file, path });
        }
    }

    /// Resolves every reference to the file that defines its item.
    fn edges(&self) -> Edges {
        let mut edges = Edges::new();
        for r in &self.references {
            if let Some(Target::Item { file, name }) =
                self.resolve(r.module, &r.path, Want::Last, true, 0)
                && file != r.file
            {
                let written = r.path.join("::");
                let why = if r.path.last() == Some(&name) {
                    written
                } else {
                    format!("{written} ({name})")
                };
                edges.entry((r.file, file)).or_default().insert(why);
            }
        }
        edges
    }

    fn resolve(
        &self,
        module: usize,
        path: &[String],
        want_last: Want,
        block_local: bool,
        depth: usize,
    ) -> Option<Target> {
        if depth > MAX_DEPTH {
            return None;
        }
        let want_at = |i: usize| {
            if i + 1 == path.len() {
                want_last
            } else {
                Want::Middle
            }
        };
        let first = path.first()?;
        let (mut current, mut i) = match first.as_str() {
            "crate" => (Target::Module(self.modules[module].root), 1),
            "self" => (Target::Module(module), 1),
            "super" => {
                let mut m = module;
                let mut i = 0;
                while path.get(i).is_some_and(|s| s == "super") {
                    m = self.modules[m].parent?;
                    i += 1;
                }
                (Target::Module(m), i)
            }
            "Self" => return None,
            name => (
                self.lookup(module, name, want_at(0), block_local, depth + 1)?,
                1,
            ),
        };
        while i < path.len() {
            match current {
                // An associated item or enum variant: the item's file is the answer.
                Target::Item { .. } => return Some(current),
                Target::Module(m) => {
                    current = self.lookup(m, &path[i], want_at(i), false, depth + 1)?;
                }
            }
            i += 1;
        }
        Some(current)
    }

    fn lookup(
        &self,
        module: usize,
        name: &str,
        want: Want,
        block_local: bool,
        depth: usize,
    ) -> Option<Target> {
        if depth > MAX_DEPTH {
            return None;
        }
        let m = &self.modules[module];
        let mut found = Vec::new();
        if let Some(&child) = m.children.get(name) {
            found.push(Target::Module(child));
        }
        if let Some(&file) = m.items.get(name) {
            found.push(Target::Item {
                file,
                name: name.to_string(),
            });
        }
        for b in &m.uses {
            if b.name == name && (block_local || !b.block_local) {
                // A `use` binds the name in every namespace its path has; ask for the
                // namespace this lookup wants.
                if let Some(t) = self.resolve(module, &b.path, want, b.block_local, depth + 1) {
                    found.push(t);
                }
            }
        }
        let pick = |found: &[Target]| {
            let module_first = want == Want::Middle;
            found
                .iter()
                .find(|t| matches!(t, Target::Module(_)) == module_first)
                .or_else(|| found.first())
                .cloned()
        };
        if let Some(t) = pick(&found) {
            return Some(t);
        }
        for g in &m.globs {
            if !block_local && g.block_local {
                continue;
            }
            match self.resolve(module, &g.path, Want::Middle, g.block_local, depth + 1) {
                Some(Target::Module(source)) if source != module => {
                    if let Some(t) = self.lookup(source, name, want, false, depth + 1) {
                        return Some(t);
                    }
                }
                _ => {}
            }
        }
        None
    }
}

/// Where a module's files are: `child_dir` holds its `mod x;` children, `here` is what a
/// `#[path]` attribute is relative to.
#[derive(Debug)]
struct Dirs {
    child_dir: PathBuf,
    here: PathBuf,
}

/// Collects the paths written inside one item (and the `use`s and items nested in its
/// function bodies).
struct RefCollector<'a> {
    krate: &'a mut Crate,
    module: usize,
    file: usize,
}

impl<'ast> Visit<'ast> for RefCollector<'_> {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        if is_test_only(item_attrs(item)) {
            return;
        }
        if let syn::Item::Use(u) = item {
            // Inside a function body: only this module's code sees it.
            self.krate
                .add_use(&u.tree, self.module, self.file, true, true);
            return;
        }
        syn::visit::visit_item(self, item);
    }

    fn visit_impl_item(&mut self, item: &'ast syn::ImplItem) {
        let attrs: &[syn::Attribute] = match item {
            syn::ImplItem::Const(i) => &i.attrs,
            syn::ImplItem::Fn(i) => &i.attrs,
            syn::ImplItem::Type(i) => &i.attrs,
            syn::ImplItem::Macro(i) => &i.attrs,
            _ => &[],
        };
        if !is_test_only(attrs) {
            syn::visit::visit_impl_item(self, item);
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        if path.leading_colon.is_none() {
            let segments = path
                .segments
                .iter()
                .map(|s| s.ident.unraw().to_string())
                .collect();
            self.krate.add_reference(self.module, self.file, segments);
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.visit_path(&mac.path);
        for path in token_paths(mac.tokens.clone()) {
            self.krate.add_reference(self.module, self.file, path);
        }
    }

    // Attributes and `pub(in path)` name no items of the crate that matter here.
    fn visit_attribute(&mut self, _: &'ast syn::Attribute) {}
    fn visit_visibility(&mut self, _: &'ast syn::Visibility) {}
}

/// Paths written in a macro body, found lexically: `a::b::c` and lone identifiers (a lone
/// identifier that names nothing in the module resolves to nothing and costs nothing).
/// `$crate::x` in a `macro_rules!` body counts as `crate::x`.
fn token_paths(tokens: TokenStream) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut current: Vec<String> = Vec::new();
    // Whether the path so far ends in `::` and waits for its next segment.
    let mut open = false;
    let mut skip_next_ident = false;
    let mut leading_colon = false;
    let mut colons = 0;
    let flush = |current: &mut Vec<String>, leading: &mut bool, out: &mut Vec<Vec<String>>| {
        if !current.is_empty() && !*leading {
            out.push(std::mem::take(current));
        }
        current.clear();
        *leading = false;
    };
    for tt in tokens {
        match tt {
            TokenTree::Ident(ident) => {
                let name = ident.unraw().to_string();
                if skip_next_ident && name != "crate" {
                    // `$name:frag` metavariables are not paths.
                    skip_next_ident = false;
                    flush(&mut current, &mut leading_colon, &mut out);
                    continue;
                }
                skip_next_ident = false;
                if !open {
                    flush(&mut current, &mut leading_colon, &mut out);
                }
                current.push(name);
                open = false;
                colons = 0;
            }
            TokenTree::Punct(p) if p.as_char() == ':' => {
                colons += 1;
                if colons == 1 && p.spacing() == Spacing::Joint {
                    continue;
                }
                if colons == 2 {
                    if current.is_empty() {
                        leading_colon = true;
                    }
                    open = true;
                } else {
                    flush(&mut current, &mut leading_colon, &mut out);
                    open = false;
                }
                colons = 0;
            }
            TokenTree::Punct(p) => {
                flush(&mut current, &mut leading_colon, &mut out);
                open = false;
                colons = 0;
                skip_next_ident = p.as_char() == '$';
            }
            TokenTree::Group(g) => {
                flush(&mut current, &mut leading_colon, &mut out);
                open = false;
                colons = 0;
                out.extend(token_paths(g.stream()));
            }
            TokenTree::Literal(_) => {
                flush(&mut current, &mut leading_colon, &mut out);
                open = false;
                colons = 0;
            }
        }
    }
    flush(&mut current, &mut leading_colon, &mut out);
    out
}

/// The leaves of a `use` tree: `(Some(bound name), path)`, or `(None, path)` for a glob.
/// A leading `::` names another crate and yields nothing.
fn flatten_use(
    tree: &syn::UseTree,
    prefix: &mut Vec<String>,
    out: &mut Vec<(Option<String>, Vec<String>)>,
) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.unraw().to_string());
            flatten_use(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => {
            let ident = n.ident.unraw().to_string();
            if ident == "self" {
                out.push((prefix.last().cloned(), prefix.clone()));
            } else {
                let mut path = prefix.clone();
                path.push(ident.clone());
                out.push((Some(ident), path));
            }
        }
        syn::UseTree::Rename(r) => {
            let ident = r.ident.unraw().to_string();
            let mut path = prefix.clone();
            if ident != "self" {
                path.push(ident);
            }
            out.push((Some(r.rename.unraw().to_string()), path));
        }
        syn::UseTree::Glob(_) => out.push((None, prefix.clone())),
        syn::UseTree::Group(g) => {
            for t in &g.items {
                flatten_use(t, prefix, out);
            }
        }
    }
}

fn item_attrs(item: &syn::Item) -> &[syn::Attribute] {
    match item {
        syn::Item::Const(i) => &i.attrs,
        syn::Item::Enum(i) => &i.attrs,
        syn::Item::ExternCrate(i) => &i.attrs,
        syn::Item::Fn(i) => &i.attrs,
        syn::Item::ForeignMod(i) => &i.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Macro(i) => &i.attrs,
        syn::Item::Mod(i) => &i.attrs,
        syn::Item::Static(i) => &i.attrs,
        syn::Item::Struct(i) => &i.attrs,
        syn::Item::Trait(i) => &i.attrs,
        syn::Item::TraitAlias(i) => &i.attrs,
        syn::Item::Type(i) => &i.attrs,
        syn::Item::Union(i) => &i.attrs,
        syn::Item::Use(i) => &i.attrs,
        _ => &[],
    }
}

/// The names an item defines in its module.
fn item_names(item: &syn::Item) -> Vec<String> {
    let ident = match item {
        syn::Item::Const(i) => Some(&i.ident),
        syn::Item::Enum(i) => Some(&i.ident),
        syn::Item::Fn(i) => Some(&i.sig.ident),
        syn::Item::Macro(i) => i.ident.as_ref(),
        syn::Item::Static(i) => Some(&i.ident),
        syn::Item::Struct(i) => Some(&i.ident),
        syn::Item::Trait(i) => Some(&i.ident),
        syn::Item::TraitAlias(i) => Some(&i.ident),
        syn::Item::Type(i) => Some(&i.ident),
        syn::Item::Union(i) => Some(&i.ident),
        syn::Item::ForeignMod(f) => {
            return f
                .items
                .iter()
                .filter_map(|i| match i {
                    syn::ForeignItem::Fn(f) => Some(f.sig.ident.unraw().to_string()),
                    syn::ForeignItem::Static(s) => Some(s.ident.unraw().to_string()),
                    syn::ForeignItem::Type(t) => Some(t.ident.unraw().to_string()),
                    _ => None,
                })
                .collect();
        }
        _ => None,
    };
    ident.map(|i| i.unraw().to_string()).into_iter().collect()
}

fn is_exported_macro(item: &syn::Item) -> bool {
    matches!(item, syn::Item::Macro(m) if m.attrs.iter().any(|a| a.path().is_ident("macro_export")))
}

/// `#[cfg(test)]` (or a `cfg` that needs `test` and does not negate it) and `#[test]`.
fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        if a.path().is_ident("test") {
            return true;
        }
        if !a.path().is_ident("cfg") {
            return false;
        }
        let Ok(list) = a.meta.require_list() else {
            return false;
        };
        let words: Vec<String> = token_paths(list.tokens.clone())
            .into_iter()
            .flatten()
            .collect();
        words.iter().any(|w| w == "test") && !words.iter().any(|w| w == "not" || w == "any")
    })
}

/// The value of a `#[path = "..."]` attribute.
fn path_attr(attrs: &[syn::Attribute]) -> Option<String> {
    attrs.iter().find_map(|a| match &a.meta {
        syn::Meta::NameValue(nv) if nv.path.is_ident("path") => match &nv.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    })
}

/// Strongly connected components with more than one file (Tarjan), each sorted, in the
/// order of their smallest file.
fn components(edges: &Edges) -> Vec<BTreeSet<usize>> {
    let mut adjacency: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for &(from, to) in edges.keys() {
        adjacency.entry(from).or_default().push(to);
        adjacency.entry(to).or_default();
    }
    let mut tarjan = Tarjan {
        adjacency: &adjacency,
        index: HashMap::new(),
        low: HashMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for &node in adjacency.keys() {
        if !tarjan.index.contains_key(&node) {
            tarjan.connect(node);
        }
    }
    let mut out: Vec<BTreeSet<usize>> = tarjan.out.into_iter().filter(|c| c.len() > 1).collect();
    out.sort();
    out
}

struct Tarjan<'a> {
    adjacency: &'a BTreeMap<usize, Vec<usize>>,
    index: HashMap<usize, usize>,
    low: HashMap<usize, usize>,
    stack: Vec<usize>,
    on_stack: BTreeSet<usize>,
    next: usize,
    out: Vec<BTreeSet<usize>>,
}

impl Tarjan<'_> {
    fn connect(&mut self, v: usize) {
        self.index.insert(v, self.next);
        self.low.insert(v, self.next);
        self.next += 1;
        self.stack.push(v);
        self.on_stack.insert(v);
        let adjacency = self.adjacency;
        for &w in adjacency.get(&v).into_iter().flatten() {
            if !self.index.contains_key(&w) {
                self.connect(w);
                let low = self.low[&v].min(self.low[&w]);
                self.low.insert(v, low);
            } else if self.on_stack.contains(&w) {
                let low = self.low[&v].min(self.index[&w]);
                self.low.insert(v, low);
            }
        }
        if self.low[&v] == self.index[&v] {
            let mut comp = BTreeSet::new();
            while let Some(w) = self.stack.pop() {
                self.on_stack.remove(&w);
                comp.insert(w);
                if w == v {
                    break;
                }
            }
            self.out.push(comp);
        }
    }
}

/// A closed walk from the component's first file through all its files and back, taking the
/// shortest way (inside the component) to the nearest file not yet visited.
fn closed_walk(comp: &BTreeSet<usize>, edges: &Edges) -> Vec<usize> {
    let Some(&start) = comp.first() else {
        return Vec::new();
    };
    let mut walk = vec![start];
    let mut seen: BTreeSet<usize> = BTreeSet::from([start]);
    let mut at = start;
    loop {
        let done = seen.len() == comp.len();
        let Some(path) = shortest(at, comp, edges, |n| {
            if done { n == start } else { !seen.contains(&n) }
        }) else {
            break;
        };
        for &n in &path {
            seen.insert(n);
        }
        at = path.last().copied().unwrap_or(start);
        walk.extend(path);
        if done {
            break;
        }
    }
    walk
}

/// The shortest non-empty path (excluding `from`) inside `comp` to a node that satisfies `goal`.
fn shortest(
    from: usize,
    comp: &BTreeSet<usize>,
    edges: &Edges,
    goal: impl Fn(usize) -> bool,
) -> Option<Vec<usize>> {
    let mut previous: BTreeMap<usize, usize> = BTreeMap::new();
    let mut queue = VecDeque::from([from]);
    let mut visited = BTreeSet::new();
    while let Some(n) = queue.pop_front() {
        for (&(a, b), _) in edges.range((n, 0)..=(n, usize::MAX)) {
            debug_assert_eq!(a, n);
            if !comp.contains(&b) || !visited.insert(b) {
                continue;
            }
            previous.insert(b, n);
            if goal(b) {
                let mut path = vec![b];
                let mut cur = b;
                while let Some(&p) = previous.get(&cur) {
                    if p == from {
                        break;
                    }
                    path.push(p);
                    cur = p;
                }
                path.reverse();
                return Some(path);
            }
            queue.push_back(b);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes `files` (path relative to the crate dir, text) into a fresh crate `demo`.
    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let path = dir.path().join("demo").join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        dir
    }

    fn sentences(dir: &tempfile::TempDir) -> Vec<String> {
        find(dir.path(), &["demo"])
            .unwrap()
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn a_two_file_cycle_is_found() {
        let dir = tree(&[
            ("src/lib.rs", "mod a;\nmod b;\n"),
            (
                "src/a.rs",
                "use crate::b::B;\npub struct A;\npub fn f(_: B) {}\n",
            ),
            ("src/b.rs", "pub struct B;\npub fn g(_: crate::a::A) {}\n"),
        ]);
        assert_eq!(sentences(&dir), ["demo: src/a.rs -> src/b.rs -> src/a.rs"]);
    }

    #[test]
    fn a_re_export_is_resolved_to_the_defining_file() {
        let dir = tree(&[
            ("src/lib.rs", "mod a;\nmod m;\n"),
            ("src/a.rs", "use crate::m::Thing;\npub fn f(_: Thing) {}\n"),
            // m.rs only re-exports: it is no part of the cycle.
            ("src/m.rs", "mod thing;\npub use thing::Thing;\n"),
            (
                "src/m/thing.rs",
                "pub struct Thing;\npub fn g() { crate::a::f(Thing) }\n",
            ),
        ]);
        assert_eq!(
            sentences(&dir),
            ["demo: src/a.rs -> src/m/thing.rs -> src/a.rs"]
        );
    }

    #[test]
    fn a_glob_import_is_resolved_to_the_defining_file() {
        let dir = tree(&[
            ("src/lib.rs", "mod a;\nmod m;\n"),
            ("src/a.rs", "use crate::m::*;\npub fn f(_: Thing) {}\n"),
            ("src/m.rs", "mod thing;\npub use thing::*;\n"),
            (
                "src/m/thing.rs",
                "pub struct Thing;\npub fn g() { crate::a::f(Thing) }\n",
            ),
        ]);
        assert_eq!(
            sentences(&dir),
            ["demo: src/a.rs -> src/m/thing.rs -> src/a.rs"]
        );
    }

    #[test]
    fn parent_and_child_form_a_cycle_only_when_both_refer_to_each_other() {
        let child = "pub struct C;\npub fn g() -> super::P { super::P }\n";
        let both = tree(&[
            ("src/lib.rs", "mod parent;\n"),
            (
                "src/parent.rs",
                "mod child;\npub struct P;\npub fn f() -> child::C { child::C }\n",
            ),
            ("src/parent/child.rs", child),
        ]);
        assert_eq!(
            sentences(&both),
            ["demo: src/parent.rs -> src/parent/child.rs -> src/parent.rs"]
        );
        // The parent only declares and re-exports the child: one direction, no cycle.
        let one = tree(&[
            ("src/lib.rs", "mod parent;\n"),
            (
                "src/parent.rs",
                "mod child;\npub use child::C;\npub struct P;\n",
            ),
            ("src/parent/child.rs", child),
        ]);
        assert!(sentences(&one).is_empty(), "{:?}", sentences(&one));
    }

    #[test]
    fn a_tree_without_cycles_passes() {
        let dir = tree(&[
            (
                "src/lib.rs",
                "pub mod high;\npub mod low;\npub use low::Low;\n",
            ),
            (
                "src/low.rs",
                "pub struct Low;\nimpl Low { pub fn new() -> Self { Low } }\n",
            ),
            (
                "src/high.rs",
                "use crate::Low;\npub fn make() -> Low { crate::low::Low::new() }\n\
                 #[cfg(test)]\nmod tests { use crate::high::make; fn t() { make(); } }\n",
            ),
            ("src/main.rs", "mod cli;\nfn main() { cli::run() }\n"),
            (
                "src/cli.rs",
                "pub fn run() { let _ = demo::high::make(); }\n",
            ),
        ]);
        assert!(sentences(&dir).is_empty(), "{:?}", sentences(&dir));
    }

    #[test]
    fn test_code_does_not_count() {
        let dir = tree(&[
            ("src/lib.rs", "mod a;\nmod b;\n"),
            ("src/a.rs", "pub struct A;\npub fn f(_: crate::b::B) {}\n"),
            (
                "src/b.rs",
                "pub struct B;\n#[cfg(test)]\nfn t() { let _ = crate::a::A; }\n\
                 #[cfg(test)]\n#[path = \"b_tests.rs\"]\nmod tests;\n",
            ),
            ("src/b_tests.rs", "use crate::a::A;\n"),
        ]);
        assert!(sentences(&dir).is_empty(), "{:?}", sentences(&dir));
    }

    #[test]
    fn paths_in_macro_bodies_count() {
        let dir = tree(&[
            ("src/lib.rs", "mod a;\nmod b;\n"),
            (
                "src/a.rs",
                "pub const A: u8 = 1;\npub fn f() { let _ = crate::b::B; }\n",
            ),
            (
                "src/b.rs",
                "pub struct B;\npub fn g() -> String { format!(\"{}\", crate::a::A) }\n",
            ),
        ]);
        let found = find(dir.path(), &["demo"]).unwrap();
        assert_eq!(found.len(), 1);
        assert!(
            found[0].why().iter().any(|l| l.contains("crate::a::A")),
            "{:?}",
            found[0].why()
        );
    }

    #[test]
    fn macro_tokens_are_read_as_paths() {
        let tokens: TokenStream = "x, crate::a::B, $crate::c::D, $v, ::std::x, (super::e)"
            .parse()
            .unwrap();
        let paths: Vec<String> = token_paths(tokens).iter().map(|p| p.join("::")).collect();
        assert_eq!(
            paths,
            ["x", "crate::a::B", "crate::c::D", "super::e"],
            "{paths:?}"
        );
    }

    #[test]
    fn workspace_members_are_read_from_the_manifest() {
        let dir = tree(&[]);
        std::fs::write(
            dir.path().join("Cargo.toml"),
            "[workspace]\nmembers = [\"demo\", \"other\"]\n",
        )
        .unwrap();
        assert_eq!(workspace_members(dir.path()).unwrap(), ["demo", "other"]);
    }
}
