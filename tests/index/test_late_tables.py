"""Word-piece tables written by a full build: quantized chunk by chunk and streamed to disk,
they are the same files, byte for byte, as a table made of all the pieces at once. Real
readings of the bundled model."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from kbmem.index.late import (
    LEVELS,
    TABLE_FILES,
    PieceTable,
    QuantizedChunk,
    TableWriter,
    content_rows,
)
from kbmem.index.vectors import read_texts


def written(path: Path, chunks: list[QuantizedChunk]) -> int:
    writer = TableWriter(path)
    for chunk in chunks:
        writer.add(chunk)
    return writer.close()


TEXTS = [
    "John: I started kickboxing classes last month and my coach says I'm improving.",
    "It is what it is.",  # no content word: an interval without pieces
    "Maria: We drove to the coast for the weekend and watched the sunset over the cliffs.",
    "The crane repair budget was approved by the harbour board on Tuesday.",
    "Thanks!",
    "Nate: We even played some chess afterward, and I lost three games in a row.",
]


def test_a_table_written_chunk_by_chunk_is_the_table_of_all_pieces(tmp_path: Path) -> None:
    readings = read_texts(TEXTS)
    pieces = [r.pieces[content_rows(r.names)] for r in readings]
    assert any(len(p) == 0 for p in pieces) and any(len(p) > 5 for p in pieces)
    PieceTable.of(list(range(len(pieces))), pieces).save(tmp_path / "whole")
    chunks = [QuantizedChunk.of(pieces[i : i + 4]) for i in range(0, len(pieces), 4)]
    assert written(tmp_path / "chunked", chunks) == len(TEXTS)
    for name in TABLE_FILES:
        assert (tmp_path / "chunked" / name).read_bytes() == (
            tmp_path / "whole" / name
        ).read_bytes(), name
    table = PieceTable.load(tmp_path / "chunked", len(TEXTS))
    again = [table.pieces_of(label) for label in range(len(pieces))]
    PieceTable.of(list(range(len(pieces))), again).save(tmp_path / "again")  # a sync's reuse
    assert (tmp_path / "again" / "codes.npy").read_bytes() == (
        tmp_path / "whole" / "codes.npy"
    ).read_bytes()
    for label, expected in enumerate(pieces):
        found = table.pieces_of(label)
        assert found is not None and found.shape == expected.shape
        for got, piece in zip(found, expected, strict=True):  # within half a step
            assert np.abs(got - piece).max() <= np.abs(piece).max() / (LEVELS - 1) + 1e-6


def test_a_build_writes_each_chunk_of_codes_as_it_comes(tmp_path: Path) -> None:
    """A full build's table writer keeps no codes in memory: each chunk's go to disk when
    it is added, and a build that fails leaves none behind."""
    readings = read_texts(TEXTS)
    pieces = [r.pieces[content_rows(r.names)] for r in readings]
    writer = TableWriter(tmp_path / "late")
    codes = tmp_path / "late" / TableWriter.CODES
    head = codes.stat().st_size
    for i in range(0, len(pieces), 2):
        chunk = QuantizedChunk.of(pieces[i : i + 2])
        writer.add(chunk)
        on_disk = codes.stat().st_size - head
        assert on_disk == sum(len(p) for p in pieces[: i + 2]) * chunk.codes.shape[1]
    assert writer.close() == len(TEXTS)
    table = PieceTable.load(tmp_path / "late", len(TEXTS))
    assert int(table.starts[-1]) == sum(len(p) for p in pieces)
    failed = TableWriter(tmp_path / "failed")
    failed.add(QuantizedChunk.of(pieces))
    failed.cancel()
    assert list((tmp_path / "failed").iterdir()) == []


def test_an_empty_build_writes_an_empty_table(tmp_path: Path) -> None:
    assert written(tmp_path / "empty", []) == 0
    table = PieceTable.load(tmp_path / "empty", 0)
    assert len(table) == 0 and table.pieces_of(0) is None


def test_merged_tables_keep_their_codes_and_equal_a_table_of_the_live_intervals(
    tmp_path: Path,
) -> None:
    """A sync merges tables without their dead intervals by moving codes, never widening them
    to floats: the result is the table a build of the live intervals writes."""
    readings = read_texts(TEXTS)
    pieces = [r.pieces[content_rows(r.names)] for r in readings]
    first = PieceTable.of([0, 1, 2], pieces[:3])
    first.save(tmp_path / "first")
    later = PieceTable.of([3, 4, 5], pieces[3:])
    on_disk = PieceTable.load(tmp_path / "first", 3)  # codes memory-mapped, as a sync reads
    merged = PieceTable.joined([on_disk.without(np.array([0])), later.without(np.array([4]))])
    merged.save(tmp_path / "merged")
    live = [1, 2, 3, 5]
    PieceTable.of(live, [pieces[n] for n in live]).save(tmp_path / "live")
    for name in TABLE_FILES:
        assert (tmp_path / "merged" / name).read_bytes() == (
            tmp_path / "live" / name
        ).read_bytes(), name


def test_late_scores_of_stored_codes_stay_near_the_exact_ones() -> None:
    """Three bits a dimension move an interval's late score by little against the pieces'
    own floats, and keep the best interval for each query the best."""
    from kbmem.index.late import query_pieces

    readings = read_texts(TEXTS)
    pieces = [r.pieces[content_rows(r.names)] for r in readings]
    table = PieceTable.of(list(range(len(pieces))), pieces)
    for query in ("What martial arts does John practise?", "When was the crane budget approved?"):
        asked = query_pieces(query)
        exact = np.array([(asked @ p.T).max(axis=1).mean() if len(p) else 0.0 for p in pieces])
        stored = table.scores(asked)
        assert np.abs(stored - exact).max() <= 0.02, query
        assert int(np.argmax(stored)) == int(np.argmax(exact)), query


def test_chunks_joined_or_read_back_give_the_same_codes(tmp_path: Path) -> None:
    """A full build's checkpoints keep each chunk's pieces quantized: joined, the chunks are
    the table of all the pieces at once; read back as floats (an incremental sync of a huge
    session) and quantized again, they give the same codes, interval by interval, and the same
    scales within a rounding."""
    readings = read_texts(TEXTS)
    pieces = [r.pieces[content_rows(r.names)] for r in readings]
    whole = QuantizedChunk.of(pieces)
    joined = QuantizedChunk.joined([QuantizedChunk.of(pieces[:2]), QuantizedChunk.of(pieces[2:])])
    again = QuantizedChunk.of(joined.pieces())
    for chunk in (joined, again):
        assert np.array_equal(chunk.sizes, whole.sizes)
        assert np.array_equal(chunk.codes, whole.codes)
    assert np.array_equal(joined.scales, whole.scales)
    # Read back, the largest component is 3.5 steps in float32: its step, again, is within
    # a rounding of the first.
    assert np.allclose(again.scales, whole.scales, rtol=1e-6, atol=0)
    assert [len(p) for p in joined.pieces()] == [len(p) for p in pieces]
    empty = QuantizedChunk.joined([])
    assert len(empty.sizes) == 0 and empty.codes.shape[0] == 0 and empty.pieces() == []
