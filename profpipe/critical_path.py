"""The longest path through each critical-path graph: the `computed_by` function of the model
sql/intermediate/int_critical_path (HTA's critical_path_analysis takes networkx's dag_longest_path here).

Where it sits: stage 3 (profpipe/models.py runs it between SQL models). The graph's nodes, edges and weights are
SQL (int_critical_path_event, int_critical_path_graph); only the longest path, a sequential pass that SQL can only
express as a recursive relaxation (too slow on large traces), is computed here. Per window: the nodes are numbered
from 0 (the graph's dense numbers shifted), the edges are grouped by source (numpy's stable argsort), and one
topological pass (Kahn's algorithm) sets each node's longest distance from a node without predecessors and the
edge it came by; the path ends at the farthest node (the lowest-numbered, i.e. earliest, of equal ones) and is read
back along those edges. Between equally long ways into a node, the one from the later node wins. A window whose graph has a cycle
(possible only with clocks damaged beyond repair) is cut where the cycle starts: the path may end there, and the
nodes after it are never reached.

Cost: O(nodes + edges) per window; the pass itself runs over Python lists of the window's integers (one window at a
time, so at most a step's events are held), about a microsecond per edge.
"""
from __future__ import annotations

from itertools import pairwise

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

#: The window key, in the order the windows are walked.
_WINDOW = ("rank", "capture", "win")


def longest_path(graph: pa.Table) -> pa.Table:
    """The edges of `graph` (rank, capture, win, src, dst, edge_type, weight_ns) on each window's longest path,
    with their position along it (edge_index)."""
    order = pc.sort_indices(graph, [(key, "ascending") for key in _WINDOW]).to_numpy()  # the rows by window
    keys = [graph[key].to_numpy(zero_copy_only=False)[order] for key in _WINDOW]
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
    by_source = np.argsort(source, kind="stable")  # the pass walks each node's edges as one range of these
    first_edge = np.searchsorted(source[by_source], np.arange(count + 1)).tolist()
    incoming = np.bincount(target, minlength=count)
    in_graph = (incoming + np.bincount(source, minlength=count)) > 0
    waiting = incoming.tolist()
    ready = np.flatnonzero(incoming == 0).tolist()
    targets, weights = target[by_source].tolist(), weight[by_source].tolist()
    distance = [0] * count
    came_by = [-1] * count
    came_from = [-1] * count
    while ready:  # any order of the ready nodes gives the same distances and edges (the ties are broken by node)
        node = ready.pop()
        reached = distance[node]
        for edge in range(first_edge[node], first_edge[node + 1]):
            head = targets[edge]
            length = reached + weights[edge]
            if length > distance[head] or (length == distance[head] and node > came_from[head]):
                distance[head], came_by[head], came_from[head] = length, edge, node
            waiting[head] -= 1
            if not waiting[head]:
                ready.append(head)
    node = int(np.argmax(np.where(in_graph, distance, -1)))
    path = []
    while came_by[node] >= 0:
        path.append(came_by[node])
        node = came_from[node]
    return by_source[np.array(path[::-1], dtype=np.int64)]


def _dense(src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """The edges' ends as node numbers from 0, in the nodes' order, and how many numbers there are: the graph's own
    numbers shifted where they are dense (int_critical_path_graph's 2 ev and 2 ev + 1), else renumbered."""
    low, high = min(int(src.min()), int(dst.min())), max(int(src.max()), int(dst.max()))
    if high - low < 4 * len(src):
        return src - low, dst - low, high - low + 1
    nodes, dense = np.unique(np.concatenate([src, dst]), return_inverse=True)
    return dense[:len(src)], dense[len(src):], len(nodes)
