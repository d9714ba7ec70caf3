"""dataio.pack over documents of token ids (npy records, so no tokenizer is
needed here; dataio-text's tests pack tokenized text): the packed rows
against the documents, every boundary marked, exact resume from any batch,
rank shares, skipped documents and a mix's token shares."""

from __future__ import annotations

import io
import json
from collections import Counter
from typing import Any

import numpy as np
import pytest
from _imaging import npy_bytes

import dataio
from dataio.errors import CheckpointError, InvalidArgumentError, PlanError, RowError

EOS = 0


def doc_tokens(i: int, n: int) -> np.ndarray:
    """Document i: tokens 1000*(i+1)+1 ..= 1000*(i+1)+n, so a token names its document."""
    return 1000 * (i + 1) + np.arange(1, n + 1, dtype=np.int64)


def tokens_of(rec: dict[str, Any]) -> np.ndarray:
    return np.load(io.BytesIO(rec["ids"]))


def all_tokens(recs: list[dict[str, Any]]) -> Counter[int]:
    return Counter(int(t) for r in recs for t in tokens_of(r))


def make_docs(n: int, seed: int = 0, longest: int = 60) -> list[dict[str, Any]]:
    rng = np.random.default_rng(seed)
    return [{"key": f"d{i}", "ids": npy_bytes(doc_tokens(i, int(rng.integers(1, longest))))} for i in range(n)]


def pipe(seq_len: int, batch_size: int, strategy: str, window: int = 16, **kw: Any) -> dataio.Pipeline:
    return dataio.pipeline(dataio.slot("ids").decode_npy(),
                           dataio.pack("ids", seq_len, batch_size, strategy, eos_token=EOS, window=window, **kw))


def check_batch(b: Any, seq_len: int, batch_size: int) -> list[list[int]]:
    """Asserts the invariants of one packed batch; returns its pieces'
    tokens (end tokens dropped), row by row."""
    ids, labels, pos, doc = (np.asarray(b[k]) for k in ("input_ids", "labels", "position_ids", "document_ids"))
    assert ids.shape == labels.shape == pos.shape == doc.shape == (batch_size, seq_len)
    assert ids.dtype == labels.dtype == pos.dtype == np.int64 and doc.dtype == np.int32
    cu = np.asarray(b["cu_seqlens"])
    assert cu.dtype == np.int32 and cu[0] == 0 and cu[-1] == batch_size * seq_len
    runs = []
    pieces = []
    for r in range(batch_size):
        i = 0
        while i < seq_len:
            j = i
            while j < seq_len and doc[r, j] == doc[r, i]:
                j += 1
            runs.append(j - i)
            assert (pos[r, i:j] == np.arange(j - i)).all(), "positions restart at every piece"
            if doc[r, i] == -1:
                assert j == seq_len and (labels[r, i:j] == -100).all(), "padding ends its row, with no labels"
            else:
                assert (labels[r, i:j - 1] == ids[r, i + 1:j]).all() and labels[r, j - 1] == -100
                pieces.append([int(t) for t in ids[r, i:j] if t != EOS])
            i = j
        numbered = [d for d in dict.fromkeys(doc[r].tolist()) if d != -1]
        assert numbered == list(range(len(numbered))), "document_ids count pieces from 0 in each row"
    assert np.diff(cu).tolist() == runs, "cu_seqlens has every piece (and padding run) of the flattened batch"
    assert b["max_seqlen"] == max(runs)
    return pieces


def run_all(p: dataio.Pipeline, recs: list[Any], **kw: Any) -> list[Any]:
    with p.bind(recs).run("numpy", **kw) as loader:
        return list(loader)


def doc_of(token: int) -> int:
    return token // 1000 - 1


@pytest.mark.parametrize("strategy", ["concat", "best_fit"])
def test_every_token_once_and_every_boundary_marked(strategy: str) -> None:
    recs = make_docs(120)
    batches = run_all(pipe(64, 4, strategy), recs, seed=3)
    pieces = [piece for b in batches for piece in check_batch(b, 64, 4)]
    assert Counter(t for piece in pieces for t in piece) == all_tokens(recs)
    for piece in filter(None, pieces):  # a piece is a run of one document's tokens, in order (or its end token)
        assert len({doc_of(t) for t in piece}) == 1 and piece == sorted(piece)
    if strategy == "best_fit":
        # Documents shorter than a row are never split.
        assert all(len(piece) == len(tokens_of(recs[doc_of(piece[0])])) for piece in pieces)
    else:
        # concat pads only the last batch.
        for b in batches[:-1]:
            assert (np.asarray(b["document_ids"]) >= 0).all()


def test_concat_rows_are_the_token_stream_cut() -> None:
    recs = make_docs(30, seed=1)
    stream = np.concatenate([np.append(tokens_of(r), EOS) for r in recs])
    batches = run_all(pipe(32, 2, "concat", window=8), recs)
    flat = np.concatenate([np.asarray(b["input_ids"]).reshape(-1) for b in batches])
    assert (flat[: len(stream)] == stream).all()
    assert (np.concatenate([np.asarray(b["document_ids"]).reshape(-1) for b in batches])[len(stream):] == -1).all()


def test_best_fit_pads_little_with_a_window() -> None:
    recs = make_docs(400, seed=2, longest=200)
    with pipe(512, 8, "best_fit", window=256).bind(recs).run("numpy", seed=1) as loader:
        batches = list(loader)
        st = loader.stats()["pack"]
    pad = sum(int((np.asarray(b["document_ids"]) == -1).sum()) for b in batches)
    assert st["padding_tokens"] == pad and st["documents"] == 400 and st["split_documents"] == 0
    # Best-fit over 256 documents fills its rows but the last few of each
    # block (the empty rows that fill the epoch's last batch aside).
    rows = np.concatenate([np.asarray(b["document_ids"]) for b in batches])
    used = rows[(rows != -1).any(axis=1)]
    assert (used == -1).mean() < 0.03, (used == -1).mean()
    assert st["padding_fraction"] == pytest.approx(pad / (st["sequences"] * 512))


@pytest.mark.parametrize("strategy", ["concat", "best_fit"])
def test_resume_from_any_batch_is_the_rest_of_the_run(strategy: str) -> None:
    recs = make_docs(90, seed=4)
    p = pipe(48, 3, strategy, window=16)
    states = []
    with p.bind(recs).run("numpy", seed=7) as loader:
        full = []
        for b in loader:
            full.append(b)
            states.append(json.loads(json.dumps(loader.state_dict())))
            if len(full) == 1:
                # Epoch 0 only: the state is what a checkpoint writes.
                assert set(states[0]["pack"]) == {"skip"} and len(json.dumps(states[0])) < 2000
    assert len(full) > 6
    for k in (0, 1, len(full) // 2, len(full) - 2):
        with p.bind(recs).run("numpy", seed=7) as resumed:
            resumed.load_state_dict(states[k])
            rest = list(resumed)
        assert len(rest) == len(full) - k - 1, (strategy, k)
        for x, y in zip(rest, full[k + 1:]):
            for name in ("input_ids", "labels", "position_ids", "document_ids", "cu_seqlens"):
                assert np.array_equal(np.asarray(x[name]), np.asarray(y[name])), (strategy, k, name)
            assert x["max_seqlen"] == y["max_seqlen"]


def test_epochs_differ_with_a_seed_and_repeat_without() -> None:
    recs = make_docs(60, seed=5)
    p = pipe(40, 2, "best_fit", window=32)
    with p.bind(recs).run("numpy", seed=1) as loader:
        e0 = [np.asarray(b["input_ids"]) for b in loader]
        e1 = [np.asarray(b["input_ids"]) for b in loader]
    assert any(not np.array_equal(a, b) for a, b in zip(e0, e1))
    with p.bind(recs).run("numpy", seed=1) as again:
        assert all(np.array_equal(a, np.asarray(b["input_ids"])) for a, b in zip(e0, again))


def test_ranks_share_the_documents() -> None:
    recs = make_docs(101, seed=6)
    seen: Counter[int] = Counter()
    for rank in range(3):
        for b in run_all(pipe(32, 2, "concat", window=8), recs, seed=2, shard={"id": rank, "of": 3}):
            for piece in check_batch(b, 32, 2):
                seen.update(piece)
    assert seen == all_tokens(recs)


def test_a_corrupt_document_is_skipped_and_reported() -> None:
    recs = make_docs(20, seed=7)
    recs[5] = {"key": "bad", "ids": b"not an npy file"}
    batches = run_all(pipe(32, 2, "concat", window=8), recs, on_failure="skip")
    errors = [e for b in batches for e in b.errors]
    assert len(errors) == 1 and isinstance(errors[0], RowError)
    assert errors[0].key == "bad" and errors[0].op == "decode_npy" and errors[0].slot == "ids"
    tokens = {t for b in batches for piece in check_batch(b, 32, 2) for t in piece}
    assert not any(doc_of(t) == 5 for t in tokens) and any(doc_of(t) == 6 for t in tokens)
    with pytest.raises(RowError, match="bad"):
        run_all(pipe(32, 2, "concat", window=8), recs)


def test_trailing_failed_documents_reach_log_errors() -> None:
    """Documents that fail after the last packed batch are in no batch's
    errors: log_errors gets them at the end of the epoch."""
    recs = make_docs(20, seed=3)
    recs[16:] = [{"key": f"bad{i}", "ids": b"not an npy file"} for i in range(4)]  # the last block of 16
    logged: list[RowError] = []
    batches = run_all(pipe(32, 2, "concat", window=16, drop_last=True), recs, on_failure="skip", log_errors=logged.append)
    assert batches and [e.key for b in batches for e in b.errors] == []
    assert sorted(e.key for e in logged) == ["bad0", "bad1", "bad2", "bad3"]


def test_len_of_a_packed_loader_says_why_it_is_unknown() -> None:
    with pipe(32, 2, "concat").bind(make_docs(20)).run("numpy") as loader:
        with pytest.raises(TypeError, match=r"len\(\) of a pack\(\) loader is not known before the epoch is packed"):
            len(loader)
        n = len(list(loader))
        assert n > 0 and loader.stats()["pack"]["sequences"] == 2 * n


def test_mix_reports_each_sources_share_of_tokens() -> None:
    a = [{"key": f"a{i}", "ids": npy_bytes(doc_tokens(i, 10))} for i in range(50)]
    b = [{"key": f"b{i}", "ids": npy_bytes(doc_tokens(100 + i, 30))} for i in range(50)]
    mixed = dataio.mix([a, b], weights=[1, 1], stop="all_exhausted")
    p = pipe(64, 2, "concat", window=16)
    with p.bind(mixed).run("numpy", seed=1) as loader:
        batches = list(loader)
        st = loader.stats()["pack"]
    tokens = [t for bt in batches for piece in check_batch(bt, 64, 2) for t in piece]
    from_a = sum(1 for t in tokens if doc_of(t) < 100) + 50  # with their end tokens
    from_b = sum(1 for t in tokens if doc_of(t) >= 100) + 50
    assert st["source_tokens"] == {0: from_a, 1: from_b}
    assert st["source_token_shares"][1] == pytest.approx(from_b / (from_a + from_b))


def tokens_delivered(batches: list[Any], seq_len: int, batch_size: int) -> Counter[int]:
    return Counter(t for b in batches for piece in check_batch(b, seq_len, batch_size) for t in piece)


@pytest.mark.parametrize("strategy", ["concat", "best_fit"])
@pytest.mark.parametrize("new_world", [2, 5])
def test_elastic_resume_delivers_every_token_once(strategy: str, new_world: int) -> None:
    recs = make_docs(150, seed=9)
    p = pipe(48, 2, strategy, window=8)
    # Three ranks train 3 steps, each saves its state; the job dies.
    before: Counter[int] = Counter()
    states = []
    for rank in range(3):
        with p.bind(recs).run("numpy", seed=6, shard={"id": rank, "of": 3}) as loader:
            it = iter(loader)
            before += tokens_delivered([next(it) for _ in range(3)], 48, 2)
            states.append(json.loads(json.dumps(loader.state_dict())))
    merged = dataio.packing.gather_states(states)
    # Another world takes the rest of the epoch: every token exactly once.
    after: Counter[int] = Counter()
    for rank in range(new_world):
        with p.bind(recs).run("numpy", seed=6, shard={"id": rank, "of": new_world}) as loader:
            loader.load_state_dict(merged)
            after += tokens_delivered(list(loader), 48, 2)
    assert not set(before) & set(after), "a token delivered before was delivered again"
    assert before + after == all_tokens(recs)


def test_an_elastic_epoch_resumes_in_its_world_and_refuses_another() -> None:
    recs = make_docs(120, seed=10)
    p = pipe(40, 2, "best_fit", window=8)
    states = []
    for rank in range(2):
        with p.bind(recs).run("numpy", seed=1, shard={"id": rank, "of": 2}) as loader:
            it = iter(loader)
            next(it), next(it)
            states.append(loader.state_dict())
    # One rank's state alone does not say where the others were.
    with p.bind(recs).run("numpy", seed=1, shard={"id": 0, "of": 3}) as other_world:
        with pytest.raises(CheckpointError, match="gather_states"):
            other_world.load_state_dict(states[0])
    merged = dataio.packing.gather_states(states)
    with p.bind(recs).run("numpy", seed=1, shard={"id": 1, "of": 3}) as loader:
        loader.load_state_dict(merged)
        whole = list(loader)
    with p.bind(recs).run("numpy", seed=1, shard={"id": 1, "of": 3}) as loader:
        loader.load_state_dict(merged)
        it = iter(loader)
        head = [next(it) for _ in range(2)]
        mid = json.loads(json.dumps(loader.state_dict()))
    assert "elastic" in mid["pack"]
    with p.bind(recs).run("numpy", seed=1, shard={"id": 1, "of": 3}) as resumed:
        resumed.load_state_dict(mid)
        rest = list(resumed)
    assert [np.asarray(b["input_ids"]).tolist() for b in head + rest] == [np.asarray(b["input_ids"]).tolist() for b in whole]
    with p.bind(recs).run("numpy", seed=1, shard={"id": 0, "of": 4}) as again:
        with pytest.raises(CheckpointError, match="already resumed with another world size"):
            again.load_state_dict({**mid, "pack": {**mid["pack"], "ranks": [[0, 0, 0]] * 3}})


def test_plan_errors_name_the_problem() -> None:
    with pytest.raises(PlanError, match="strategy"):
        dataio.pack("ids", 32, 2, strategy="first_fit")
    with pytest.raises(PlanError, match="seq_len"):
        dataio.pack("ids", 0, 2)
    with pytest.raises(PlanError, match="no slot 'text'"):
        dataio.pipeline(dataio.slot("ids").decode_npy(), dataio.pack("text", 32, 2, eos_token=0))
    with pytest.raises(PlanError, match="would be dropped"):
        dataio.pipeline(dataio.slot("ids").decode_npy(), dataio.slot("y").decode_bytes(), dataio.pack("ids", 32, 2, eos_token=0))
    with pytest.raises(InvalidArgumentError, match="eos_token"):
        dataio.pipeline(dataio.slot("ids").decode_npy(), dataio.pack("ids", 32, 2)).bind(make_docs(3)).run("numpy")
    p = pipe(32, 2, "concat", window=8)
    assert "pack('ids', seq_len=32" in p.describe()
    assert p.signature != pipe(32, 2, "best_fit", window=8).signature
    with pytest.raises(InvalidArgumentError, match="submit"):
        p.bind(make_docs(3)).run("numpy", order="completion")


def test_torch_tensors_for_a_training_step() -> None:
    import torch

    with pipe(32, 2, "concat", window=8).bind(make_docs(20)).run("torch") as loader:
        b = next(iter(loader))
    assert b["input_ids"].dtype == torch.int64 and b["cu_seqlens"].dtype == torch.int32
    emb = torch.nn.Embedding(400_000, 4)
    logits = torch.nn.Linear(4, 8)(emb(b["input_ids"]) + 0 * b["position_ids"].unsqueeze(-1))
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, 8), (b["labels"] % 8).where(b["labels"] >= 0, -100).reshape(-1))
    assert torch.isfinite(loss)


def test_without_end_tokens_with_a_pad_token_and_drop_last() -> None:
    recs = make_docs(25, seed=8)
    p = dataio.pipeline(dataio.slot("ids").decode_npy(),
                        dataio.pack("ids", 32, 2, "best_fit", add_eos=False, pad_token=-7, window=8, drop_last=True))
    batches = run_all(p, recs)
    assert batches, "some full batches"
    ids = np.concatenate([np.asarray(b["input_ids"]) for b in batches])
    doc = np.concatenate([np.asarray(b["document_ids"]) for b in batches])
    assert (ids[doc == -1] == -7).all() and (ids[doc >= 0] > 0).all(), "no end tokens, padding holds pad_token"
    assert not (doc == -1).all(axis=1).any(), "drop_last: no empty rows"
    # Each piece is a whole document's tokens (none is over a row), and a
    # document of the dropped last rows is missing, never repeated.
    pieces = [piece for b in batches for piece in check_batch(b, 32, 2)]
    seen = Counter(t for piece in pieces for t in piece)
    assert max(seen.values()) == 1 and set(seen) < set(all_tokens(recs))


def test_the_packing_shape_is_checked_once_by_the_engine_where_pack_is_written() -> None:
    from dataio.errors import PlanError

    with pytest.raises(PlanError, match=r"seq_len must be at least 1 and below 2\^30, got 0"):
        dataio.pack("t", seq_len=0, batch_size=2)
    with pytest.raises(PlanError, match="seq_len must be an integer, got True"):
        dataio.pack("t", seq_len=True, batch_size=2)
    with pytest.raises(PlanError, match="batch_size must be positive, got -1"):
        dataio.pack("t", seq_len=16, batch_size=-1)
    with pytest.raises(PlanError, match=r"batch_size \* seq_len must fit int32"):
        dataio.pack("t", seq_len=1 << 20, batch_size=4096)
    with pytest.raises(PlanError, match="strategy must be 'best_fit' or 'concat'"):
        dataio.pack("t", seq_len=16, batch_size=2, strategy="first_fit")
