"""Twitter-COVID19 and Weibo-COVID19 (Lin et al., NAACL 2022; the ACLR4RUMOR release, which S2MAD
evaluates on) to one thread per line (moot.data.threads).

The release (github.com/DanielLin97/ACLR4RUMOR-NAACL2022, data/Twitter/COVID-19 and data/Weibo)
keeps each dataset as two tab-separated files:

- the posts (`Twitter_data_all.txt`, `weibo_covid19_data.txt`): one post per line, `root-id`,
  the index of its parent post in its tree (`None` for the root), its own index, its time delay
  after the root post, its text;
- the labels (`Twitter_label_all.txt`, `weibo_covid19_label.txt`): `root-id` and its label, 1
  (rumour) or 0 (non-rumour); the release's loaders also read `false` as rumour and `non-rumor`
  and `news` as non-rumour.

Each labelled tree becomes a thread in the label file's order: its root post the claim, the other
posts its comments (ids are their indexes, times the release's delays). A tree without posts or
without exactly one root, a post whose label file has no tree, and a label outside those above are
left out and counted (a label outside them is an error: the file is not this release).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from moot.data.threads import ConvertError, Post, Tally, Thread, text_lines

RUMOUR, NON_RUMOUR = "1", "0"
LABELS = {"1": RUMOUR, "false": RUMOUR, "0": NON_RUMOUR, "non-rumor": NON_RUMOUR, "news": NON_RUMOUR}
Tree = dict[str, Post]  # index -> post (the root's parent is None)


def read_labels(path: Path) -> dict[str, str]:
    """root-id -> "1" (rumour) or "0", in the file's order."""
    found: dict[str, str] = {}
    for number, line in text_lines(path):
        if line.strip():
            fields = line.rstrip("\r\n").split("\t")
            if len(fields) != 2 or fields[1].strip().lower() not in LABELS:
                raise ConvertError(f"{path}:{number}: expected `root-id<TAB>label` with a label of "
                                   f"{', '.join(LABELS)} (an ACLR4RUMOR label file)")
            found[fields[0].strip()] = LABELS[fields[1].strip().lower()]
    return found


def read_trees(path: Path) -> dict[str, Tree]:
    """root-id -> its posts by index."""
    trees: dict[str, Tree] = {}
    for number, line in text_lines(path):
        if line.strip():
            fields = line.rstrip("\r\n").split("\t", 4)
            try:
                root, parent, index, delay, text = fields
                post = Post(str(int(index)), text, float(delay), None if parent == "None" else str(int(parent)))
            except ValueError:
                raise ConvertError(f"{path}:{number}: expected `root-id<TAB>parent index or None<TAB>index<TAB>"
                                   "time delay<TAB>text` (an ACLR4RUMOR posts file)") from None
            trees.setdefault(root, {})[post.id] = post
    return trees


def convert(posts: Path, labels: Path) -> tuple[list[Thread], Tally]:
    """The labelled trees as threads, and what was left out (module docstring)."""
    trees, tally = read_trees(posts), Tally()
    threads = []
    wanted = read_labels(labels)
    tally.add("posts of trees the label file does not name", sum(len(t) for r, t in trees.items() if r not in wanted))
    for root_id, label in wanted.items():
        tree = trees.get(root_id)
        if tree is None:
            tally.add("labelled trees without posts")
            continue
        root = _root(tree, tally)
        if root is None:
            continue
        comments = tuple(Post(p.id, p.text, p.time, root_id if p.parent == root.id else p.parent)
                         for p in tree.values() if p is not root)
        threads.append(Thread(Post(root_id, root.text, 0.0, None), label, comments))
    return threads, tally


def _root(tree: Tree, tally: Tally) -> Optional[Post]:
    roots = [p for p in tree.values() if p.parent is None]
    if len(roots) != 1:
        tally.add(f"trees with {'no' if not roots else 'several'} root post(s)")
        return None
    return roots[0]
