"""Late-interaction search: every live interval that passes the filters scored exactly by its
word-piece vectors against the query's (kbmem.index.late)."""

from __future__ import annotations

import numpy as np

from kbmem.index.generation import Generation
from kbmem.index.hits import Hit, allowed_docs, ranked
from kbmem.index.late import query_pieces


def late(gen: Generation, query: str, k: int, flt: dict[str, str], tenant: str) -> list[Hit]:
    """The ``k`` live intervals passing ``flt`` that late interaction ranks best for ``query``."""
    if gen.count == 0:
        return []
    allowed = allowed_docs(gen, flt)
    if allowed is not None and len(allowed) == 0:
        return []
    wanted = query_pieces(query)
    if not len(wanted):
        return []
    view = gen.view()
    tables = gen.pieces()
    if allowed is None:
        labels = np.concatenate([table.labels for table in tables])
        scores = np.concatenate([table.scores(wanted) for table in tables])
    else:  # (a label is in one table only: the others score it 0)
        labels = np.sort(view.labels[allowed])
        scores = np.sum([table.scores(wanted, labels) for table in tables], axis=0)
    docs = view.docs_of(labels)  # -1 for an interval that died since the base was made
    keep = (docs >= 0) & (scores > 0)
    return ranked(gen, docs[keep], scores[keep].astype(np.float64), k, "late", tenant)
