"""The tokenize op against the tokenizers Python package, on tokenizers
trained here (byte-level BPE, WordPiece, Unigram) and thousands of strings
with emoji, combining marks, CJK, whitespace runs and control characters."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

import dataio
from dataio.errors import RowError

WORDS = ["the", "loader", "tokenizes", "captions", "natively", "video", "frames", "audio", "über", "naïve", "café",
         "数据", "加载器", "東京", "😀", "👍🏽", "e\u0301", "a\u0308", "\u200b", "tab\there", "new\nline", "x\x07y",
         "   ", "ÅSTRÖM", "don't", "1234", "3.14", "<|endoftext|>"]


def corpus(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        k = rng.randint(0, 14)
        sep = rng.choice([" ", "  ", "\t", " \n ", "", "   "])
        out.append(sep.join(rng.choice(WORDS) for _ in range(k)) + rng.choice(["", " ", "!", "\r\n", "😀"]))
    return out


def train(kind: str, path: Path) -> Path:
    texts = corpus(3000, 1)
    if kind == "bpe":
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<|endoftext|>"],
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
        tok.train_from_iterator(texts, trainer)
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
    elif kind == "wordpiece":
        tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
        tok.normalizer = normalizers.BertNormalizer(lowercase=True)
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        trainer = trainers.WordPieceTrainer(vocab_size=300, special_tokens=["[UNK]", "[CLS]", "[SEP]", "[PAD]"])
        tok.train_from_iterator(texts, trainer)
        tok.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]", special_tokens=[("[CLS]", tok.token_to_id("[CLS]")), ("[SEP]", tok.token_to_id("[SEP]"))])
    else:
        tok = Tokenizer(models.Unigram())
        tok.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Replace("  ", " ")])
        tok.pre_tokenizer = pre_tokenizers.Metaspace()
        trainer = trainers.UnigramTrainer(vocab_size=200, special_tokens=["<unk>", "<pad>"], unk_token="<unk>")
        tok.train_from_iterator(texts, trainer)
    tok.save(str(path))
    return path


@pytest.fixture(scope="module", params=["bpe", "wordpiece", "unigram"])
def trained(request: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    return request.param, train(request.param, tmp_path_factory.mktemp("tok") / f"{request.param}.json")


def rows(pipe: Any, recs: list[dict[str, Any]], slot: str = "text", **kw: Any) -> dict[str, Any]:
    with pipe.bind(recs).run("numpy", **kw) as loader:
        return {k: (None if x is None else np.array(x)) for b in loader for k, x in zip(b.keys, b[slot])}


def test_ids_equal_the_tokenizers_package(trained: tuple[str, Path]) -> None:
    kind, path = trained
    ref = Tokenizer.from_file(str(path))
    texts = corpus(2500, 7)
    recs = [{"key": f"t{i:05d}", "text": t} for i, t in enumerate(texts)]
    pipe = dataio.pipeline(dataio.slot("text", stack="never").tokenize(tokenizer=str(path)), dataio.batch(64))
    got = rows(pipe, recs)
    for i, t in enumerate(texts):
        want = ref.encode(t).ids
        assert got[f"t{i:05d}"].tolist() == want, (kind, repr(t))
        assert got[f"t{i:05d}"].dtype == np.int64
    # Bytes (a shard member, a bytes field) tokenize as their UTF-8 text.
    b = rows(pipe, [{"key": "b", "text": texts[3].encode()}])["b"]
    assert b.tolist() == ref.encode(texts[3]).ids


def test_truncation_padding_and_dtype(trained: tuple[str, Path]) -> None:
    _, path = trained
    # The file names no padding: ours pads with id 0, as tokenizers' defaults do.
    ref = Tokenizer.from_file(str(path))
    ref.enable_truncation(12)
    ref.enable_padding(length=12)
    texts = corpus(200, 3)
    recs = [{"key": f"t{i:04d}", "text": t} for i, t in enumerate(texts)]
    # The tokenizer by position, as a built-in op takes its first parameter.
    pipe = dataio.pipeline(dataio.slot("text").tokenize(str(path), max_length=12, padding="max_length",
                                                        dtype="int32"), dataio.batch(50))
    with pipe.bind(recs).run("numpy") as loader:
        batches = list(loader)
    assert len(batches) == 4
    assert all(b["text"].shape == (50, 12) and b["text"].dtype == np.int32 for b in batches)
    got = {k: x for b in batches for k, x in zip(b.keys, b["text"])}
    assert all(got[f"t{i:04d}"].tolist() == ref.encode(t).ids for i, t in enumerate(texts))
    # Truncation alone: at most 12 ids, the same as tokenizers'.
    trunc = Tokenizer.from_file(str(path))
    trunc.enable_truncation(12)
    pipe = dataio.pipeline(dataio.slot("text", stack="never").tokenize(tokenizer=str(path), max_length=12),
                           dataio.batch(50))
    got = rows(pipe, recs)
    assert all(got[f"t{i:04d}"].tolist() == trunc.encode(t).ids for i, t in enumerate(texts))


def test_variable_lengths_pad_to_longest(trained: tuple[str, Path]) -> None:
    _, path = trained
    ref = Tokenizer.from_file(str(path))
    texts = ["a short one", "a much longer caption about video frames and audio, with 😀 and 数据", "x"]
    recs = [{"key": f"t{i}", "text": t} for i, t in enumerate(texts)]
    pipe = dataio.pipeline(dataio.slot("text").tokenize(tokenizer=str(path)), dataio.batch(3),
                           dataio.batch_transforms.pad_to_longest("text", value=-1))
    with pipe.bind(recs).run("numpy") as loader:
        b = next(iter(loader))
    lens = [len(ref.encode(t).ids) for t in texts]
    assert b["text"].shape == (3, max(lens)) and b["text_lengths"].tolist() == lens
    for row, t, n in zip(b["text"], texts, lens):
        assert row[:n].tolist() == ref.encode(t).ids and (row[n:] == -1).all()


def test_bad_input_is_a_typed_row_error(trained: tuple[str, Path], tmp_path: Path) -> None:
    _, path = trained
    recs = [{"key": "ok", "text": "fine"}, {"key": "bad", "text": b"\xff\xfe not utf-8"}, {"key": "ok2", "text": "also"}]
    pipe = dataio.pipeline(dataio.slot("text", stack="never").tokenize(tokenizer=str(path)), dataio.batch(3))
    with pytest.raises(RowError) as e:
        rows(pipe, recs)
    assert e.value.key == "bad" and e.value.op == "tokenize" and e.value.slot == "text" and "UTF-8" in str(e.value)
    assert set(rows(pipe, recs, on_failure="skip")) == {"ok", "ok2"}
    long = dataio.pipeline(dataio.slot("text", stack="never").tokenize(tokenizer=str(path), max_chars=5), dataio.batch(1))
    with pytest.raises(RowError, match="over max_chars=5"):
        rows(long, [{"key": "l", "text": "a long text"}])
    junk = tmp_path / "junk.json"
    junk.write_text('{"model": {"type": "Nope"}}')
    bad_tok = dataio.pipeline(dataio.slot("text").tokenize(tokenizer=str(junk)), dataio.batch(1))
    with pytest.raises(dataio.errors.DataioError, match="junk.json: not a tokenizer file"):
        rows(bad_tok, [{"key": "a", "text": "x"}])
    missing = dataio.pipeline(dataio.slot("text").tokenize(tokenizer=str(tmp_path / "none.json")), dataio.batch(1))
    with pytest.raises(dataio.errors.DataioError, match="none.json"):
        rows(missing, [{"key": "a", "text": "x"}])
    # The tokenizer is loaded when the loader starts (op ABI v2's prepare, once per plan):
    # a missing file is the store's typed error before any record, even with none to read.
    with pytest.raises(FileNotFoundError, match="none.json"):
        rows(missing, [])
    with pytest.raises(dataio.errors.PlanError, match="tokenize"):
        dataio.pipeline(dataio.slot("text").tokenize(tokenizer=str(path), padding=3), dataio.batch(1))


def test_captions_beside_images(trained: tuple[str, Path], tmp_path: Path) -> None:
    kind, path = trained
    if kind != "bpe":
        return  # one tokenizer is enough for the shape of a caption pipeline
    from PIL import Image

    ref = Tokenizer.from_file(str(path))
    recs = []
    for i in range(6):
        p = tmp_path / f"img{i}.png"
        Image.fromarray(np.full((20, 30, 3), 40 * i, np.uint8)).save(p)
        recs.append({"key": f"r{i}", "image": str(p), "caption": f"a caption about frames {i} 😀"})
    pipe = dataio.pipeline(
        dataio.slot("image").decode_image().resize(16, 16),
        dataio.slot("caption").tokenize(tokenizer=str(path), max_length=16, padding="max_length"),
        dataio.batch(3),
    )
    with pipe.bind(recs).run("numpy") as loader:
        for b in loader:
            assert b["image"].shape == (3, 16, 16, 3) and b["caption"].shape == (3, 16)
            for k, ids in zip(b.keys, b["caption"]):
                i = int(k[1:])
                want = ref.encode(f"a caption about frames {i} 😀").ids
                assert ids[: len(want)].tolist() == want


def test_a_file_that_loads_but_cannot_encode_is_refused_once(tmp_path: Path) -> None:
    import json

    good = train("wordpiece", tmp_path / "wp.json")
    spec = json.loads(good.read_text())
    spec["post_processor"]["special_tokens"] = {}  # the template names [CLS] and [SEP], now undefined
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(spec))
    pipe = dataio.pipeline(dataio.slot("text").tokenize(tokenizer=str(broken)), dataio.batch(2))
    with pytest.raises(dataio.errors.DataioError, match="broken.json: not a tokenizer file .*panicked"):
        rows(pipe, [{"key": "a", "text": "x"}, {"key": "b", "text": "y"}])


def test_jsonl_shards_tokenized(tmp_path: Path) -> None:
    import gzip
    import json

    path = train("bpe", tmp_path / "tok.json")
    ref = Tokenizer.from_file(str(path))
    texts = corpus(120, 5)
    for s in range(3):
        lines = "".join(json.dumps({"text": t, "id": s * 1000 + i}) + "\n" for i, t in enumerate(texts[s::3]))
        (tmp_path / f"docs-{s}.jsonl.gz").write_bytes(gzip.compress(lines.encode()))
    ds = dataio.jsonl_records(str(tmp_path / "docs-{0..2}.jsonl.gz"), index_dir=tmp_path / "idx")
    assert len(ds) == len(texts)
    pipe = dataio.pipeline(dataio.slot("text").tokenize(tokenizer=str(path)), dataio.batch(16),
                           dataio.batch_transforms.pad_to_longest("text"))
    seen = 0
    with pipe.bind(ds).run("numpy", seed=1) as loader:
        for b in loader:
            for k, row, n in zip(b.keys, b["text"], b["text_lengths"]):
                line = int(k.rsplit("#L", 1)[1]) - 1
                shard = int(k.split("docs-")[1][0])
                assert row[:n].tolist() == ref.encode(texts[shard + 3 * line]).ids
                seen += 1
    assert seen == len(texts)


def test_a_tokenizer_object_is_taken_as_its_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import pickle

    monkeypatch.setenv("DATAIO_CACHE_DIR", str(tmp_path / "cache"))
    path = train("bpe", tmp_path / "tok.json")
    tok = Tokenizer.from_file(str(path))
    texts = corpus(40, 11)
    recs = [{"key": f"t{i:03d}", "text": t} for i, t in enumerate(texts)]
    pipe = dataio.pipeline(dataio.slot("text", stack="never").tokenize(tokenizer=tok, max_length=24), dataio.batch(8))
    # The plan holds a path in the private cache, named by the tokenizer's content: plain JSON, it pickles.
    written = Path(pipe.slots[0].ops[0].params["tokenizer"])
    assert written.parent == tmp_path / "cache" / "tokenizers" and written.read_text() == tok.to_str()
    assert (written.parent.stat().st_mode & 0o777) == 0o700
    assert pickle.loads(pickle.dumps(pipe)).slots[0].ops[0].params["tokenizer"] == str(written)
    assert dataio.transforms.op("tokenize", tokenizer=tok).params["tokenizer"] == str(written)  # same content, same file
    tok.enable_truncation(24)
    got = rows(pickle.loads(pickle.dumps(pipe)), recs)
    assert all(got[f"t{i:03d}"].tolist() == tok.encode(t).ids for i, t in enumerate(texts))
    # A path object is its string; an object that is not a tokenizer gets a short error.
    assert dataio.slot("text").tokenize(tokenizer=path).ops[0].params["tokenizer"] == str(path)
    with pytest.raises(dataio.errors.PlanError, match="tokenizer must be str, got list") as info:
        dataio.slot("text").tokenize(tokenizer=[tok])
    assert len(str(info.value)) < 400, str(info.value)


@pytest.mark.parametrize(("name", "suggested"), [("gpt2", "hf://openai-community/gpt2/tokenizer.json"),
                                                 ("openai-community/gpt2", "hf://openai-community/gpt2/tokenizer.json"),
                                                 ("bert-base-uncased", "hf://<org>/<model>/tokenizer.json")])
def test_a_model_name_is_refused_pointing_at_its_hf_uri(name: str, suggested: str, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no file of that name here
    with pytest.raises(dataio.errors.PlanError) as info:
        dataio.slot("text").tokenize(tokenizer=name)
    text = str(info.value)
    assert f"op tokenize: tokenizer file {name!r} not found" in text and suggested in text, text
    # A file of that name is a tokenizer file.
    train("wordpiece", tmp_path / name.replace("/", "_"))
    if "/" not in name:
        assert dataio.slot("text").tokenize(tokenizer=name).ops[0].params["tokenizer"] == name
