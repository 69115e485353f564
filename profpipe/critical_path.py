"""The longest path through each critical-path graph: the `computed_by` function of the model
sql/intermediate/int_critical_path (HTA's critical_path_analysis takes networkx's dag_longest_path here).

Where it sits: stage 3 (profpipe/models.py runs it between SQL models). The graph's nodes, edges and weights are
SQL (int_critical_path_event, int_critical_path_graph); only the longest path, a sequential pass that SQL can only
express as a recursive relaxation (too slow on large traces), is computed here. Per window: the nodes are numbered
from 0 (the graph's dense numbers shifted); the graph is cut into chains (runs of edges through nodes with one edge
in and one out, found with numpy by pointer jumping: a thread's walk and a stream's activities are such runs, so a
few hundred chains hold a step's 100,000 edges); one topological pass (Kahn's algorithm) over the chains' end nodes
sets each one's longest distance from a node without predecessors and the chain it came by, and the nodes inside
the chains get their chain start's distance plus the weights up to them. The path ends at the farthest node (the
lowest-numbered, i.e. earliest, of equal ones) and is read back along those chains. Between equally long ways into
a node, the one from the later node (the one just before it) wins. A window whose graph has a cycle (possible only
with clocks damaged beyond repair) is cut where the cycle starts: the path may end there, and the nodes after it
are never reached.

Cost: O(edges log edges) numpy work per window and a Python pass over its chains only (one window at a time, so at
most a step's events are held): 0.04 s for the 182,000 edges of a 57 MB trace.
"""
from __future__ import annotations

from itertools import pairwise

import numpy as np
import pyarrow as pa

#: The window key, in the order the windows are walked.
_WINDOW = ("rank", "capture", "win")


def longest_path(graph: pa.Table) -> pa.Table:
    """The edges of `graph` (rank, capture, win, src, dst, edge_type, weight_ns) on each window's longest path,
    with their position along it (edge_index)."""
    keys = [graph[key].to_numpy(zero_copy_only=False) for key in _WINDOW]
    order = np.lexsort(keys[::-1])  # the rows by window
    keys = [key[order] for key in keys]
    change = np.flatnonzero(np.any([key[1:] != key[:-1] for key in keys], axis=0)) + 1 if graph.num_rows else []
    bounds = [0, *change, graph.num_rows]
    src, dst, weight = (graph[column].to_numpy()[order] for column in ("src", "dst", "weight_ns"))
    rows: list[np.ndarray] = []
    positions: list[np.ndarray] = []
    for start, end in pairwise(bounds):
        if end > start:
            path = start + _window_path(src[start:end], dst[start:end], weight[start:end])
            rows.append(path)
            positions.append(np.arange(len(path), dtype=np.int64))
    taken = graph.take(pa.array(order[np.concatenate(rows)] if rows else np.empty(0, np.int64)))
    return taken.append_column("edge_index", pa.array(np.concatenate(positions) if positions else
                                                      np.empty(0, np.int64)))


def _window_path(src: np.ndarray, dst: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """The rows (edges) of one window's longest path, in path order."""
    source, target, count = _dense(src, dst)
    incoming = np.bincount(target, minlength=count)
    outgoing = np.bincount(source, minlength=count)
    chains = _Chains(source, target, weight, incoming, outgoing)
    # the pass over the branch nodes, a chain being one edge between two of them
    by_source = np.argsort(chains.source, kind="stable")
    first_chain = np.searchsorted(chains.source[by_source], np.arange(count + 1)).tolist()
    waiting = np.bincount(chains.target, minlength=count).tolist()
    ready = np.flatnonzero(incoming == 0).tolist()
    targets, lengths = chains.target[by_source].tolist(), chains.length[by_source].tolist()
    last_nodes = chains.last_node[by_source].tolist()
    distance = [0] * count
    came_by = [-1] * count  # the chain (its place in by_source) a node's longest way in ends with
    came_from = [-1] * count  # the node just before it on that way
    passed = []
    while ready:  # any order of the ready nodes gives the same distances and chains (the ties are broken by node)
        node = ready.pop()
        passed.append(node)
        reached = distance[node]
        for chain in range(first_chain[node], first_chain[node + 1]):
            head, before = targets[chain], last_nodes[chain]
            length = reached + lengths[chain]
            if length > distance[head] or (length == distance[head] and before > came_from[head]):
                distance[head], came_by[head], came_from[head] = length, chain, before
            waiting[head] -= 1
            if not waiting[head]:
                ready.append(head)
    distances = np.array(distance, dtype=np.int64)
    started = np.zeros(count, dtype=bool)
    started[passed] = True
    chains.set_inner_distances(distances, started)
    node = int(np.argmax(np.where((incoming + outgoing) > 0, distances, -1)))
    pieces = []
    if chains.is_inner(node):  # the path ends inside a chain: the chain's edges up to the node
        chain, rows = chains.up_to(node)
        if not started[chains.source[chain]]:
            return np.empty(0, dtype=np.int64)
        pieces.append(rows)
        node = int(chains.source[chain])
    while came_by[node] >= 0:
        chain = int(by_source[came_by[node]])
        pieces.append(chains.edges(chain))
        node = int(chains.source[chain])
    return np.concatenate(pieces[::-1]) if pieces else np.empty(0, dtype=np.int64)


class _Chains:
    """A window's graph as chains: a node with one edge in and one out is inside a chain, every other node is a
    branch node, and a chain is the run of edges from one branch node to the next (most nodes of a critical-path
    graph are inside one: a thread's walk and a stream's activities are long runs). Edges on a cycle of inner
    nodes belong to no chain (no branch node leads to them, so no pass reaches them)."""

    def __init__(self, source: np.ndarray, target: np.ndarray, weight: np.ndarray, incoming: np.ndarray,
                 outgoing: np.ndarray) -> None:
        edges = len(source)
        self.inner = (incoming == 1) & (outgoing == 1)
        self.edge_in = np.full(len(incoming), -1, dtype=np.int64)
        self.edge_in[target] = np.arange(edges)  # a node's edge in, where it has one
        # each edge's first edge along its chain and its place from it, by pointer jumping from the edge before
        previous = np.where(self.inner[source], self.edge_in[source], -1)
        first = np.where(previous < 0, np.arange(edges), previous)
        place = (previous >= 0).astype(np.int64)
        for _ in range(max(1, edges.bit_length())):
            jumped = first[first]
            if np.array_equal(jumped, first):
                break
            place += place[first]
            first = jumped
        on_chain = previous[first] < 0
        order = np.lexsort((place, first))
        self.order = order[on_chain[order]]  # the chains' edges, chain by chain, each in path order
        self.row_of = np.full(edges, -1, dtype=np.int64)
        self.row_of[self.order] = np.arange(len(self.order))
        firsts = first[self.order]
        self.starts = np.flatnonzero(np.r_[True, firsts[1:] != firsts[:-1]]) if len(firsts) else firsts
        self.ends = np.r_[self.starts[1:], len(firsts)].astype(np.int64) - 1 if len(firsts) else firsts
        self.chain_of = np.repeat(np.arange(len(self.starts)), self.ends - self.starts + 1)
        self.prefix = np.cumsum(weight[self.order])  # the weights summed along the chains, row by row
        self.before = np.r_[0, self.prefix][self.starts]  # the sum before each chain's first row
        self.source = source[self.order[self.starts]]
        self.target = target[self.order[self.ends]]
        self.last_node = source[self.order[self.ends]]  # the node before the chain's end
        self.length = self.prefix[self.ends] - self.before
        self._target = target

    def set_inner_distances(self, distances: np.ndarray, started: np.ndarray) -> None:
        """Set the distances of the inner nodes: their chain's start's distance plus the chain's weights up to
        them, where the pass went through that start (else they were never reached: 0)."""
        rows = np.flatnonzero(np.arange(len(self.order)) < self.ends[self.chain_of])  # edges ending inside a chain
        chains = self.chain_of[rows]
        start = self.source[chains]
        distances[self._target[self.order[rows]]] = np.where(
            started[start], distances[start] + self.prefix[rows] - self.before[chains], 0)

    def is_inner(self, node: int) -> bool:
        return bool(self.inner[node]) and self.row_of[self.edge_in[node]] >= 0

    def up_to(self, node: int) -> tuple[int, np.ndarray]:
        """The chain an inner node is inside, and its edges up to the node."""
        row = int(self.row_of[self.edge_in[node]])
        chain = int(self.chain_of[row])
        return chain, self.order[self.starts[chain]:row + 1]

    def edges(self, chain: int) -> np.ndarray:
        return self.order[self.starts[chain]:self.ends[chain] + 1]


def _dense(src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """The edges' ends as node numbers from 0, in the nodes' order, and how many numbers there are: the graph's own
    numbers shifted where they are dense (int_critical_path_graph's 2 ev and 2 ev + 1), else renumbered."""
    low, high = min(int(src.min()), int(dst.min())), max(int(src.max()), int(dst.max()))
    if high - low < 4 * len(src):
        return src - low, dst - low, high - low + 1
    nodes, dense = np.unique(np.concatenate([src, dst]), return_inverse=True)
    return dense[:len(src)], dense[len(src):], len(nodes)
