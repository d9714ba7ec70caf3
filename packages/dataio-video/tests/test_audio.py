"""decode_audio and read_audio on audio FFmpeg wrote: each channel a sine of
its own frequency, so the window's timing and channels are read back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from media import tone

import dataio
from dataio.errors import DecodeError, RowError

LOSSLESS = ["tone.wav", "tone.flac"]
LOSSY = ["tone.mp3", "tone.m4a", "tone.ogg", "tone.opus"]


def best_lag(got: np.ndarray, want: np.ndarray, span: int) -> int:
    """The shift (in samples) at which ``got`` matches ``want`` best."""
    errs = [np.abs(got[span:-span] - np.roll(want, lag)[span:-span]).mean() for lag in range(-span, span + 1)]
    return int(np.argmin(errs)) - span


@pytest.mark.parametrize("name", LOSSLESS + LOSSY)
def test_a_window_holds_the_signal_at_its_time(audios: dict[str, Path], name: str) -> None:
    x = dataio.read_audio(str(audios[name]), offset=1.0, duration=0.5)
    rate = 48000 if name == "tone.opus" else 44100
    assert x.dtype == np.float32 and x.shape == (2, rate // 2), x.shape
    t = 1.0 + np.arange(rate // 2) / rate
    for c in range(2):
        want = tone(t, c)
        if name in LOSSLESS:
            assert np.abs(x[c] - want).max() < 1e-3, (name, c)
        else:
            # Lossy codecs: the same sine, at the same time (within 2 ms).
            lag = best_lag(x[c], want, rate // 500)
            assert abs(lag) <= rate // 500, (name, c, lag)
            assert np.abs(x[c] - np.roll(want, lag)).mean() < 0.05, (name, c)


def test_resampling_and_mono(audios: dict[str, Path]) -> None:
    x = dataio.read_audio(str(audios["tone.flac"]), sample_rate=16000, offset=0.25, duration=1.0)
    assert x.shape == (2, 16000)
    t = 0.25 + np.arange(16000) / 16000
    assert np.abs(x[0] - tone(t, 0)).max() < 0.01 and np.abs(x[1] - tone(t, 1)).max() < 0.01
    m = dataio.read_audio(str(audios["tone.flac"]), sample_rate=16000, mono=True, offset=0.25, duration=1.0)
    assert m.shape == (1, 16000)
    # A stereo downmix: the channels' mean (swresample's matrix, scaled by 1/sqrt(2) per side or 1/2).
    mix = (tone(t, 0) + tone(t, 1))
    ratio = float(np.dot(m[0], mix) / np.dot(mix, mix))
    assert 0.45 < ratio < 0.75 and np.abs(m[0] - ratio * mix).max() < 0.02, ratio
    whole = dataio.read_audio(str(audios["tone.wav"]))
    assert whole.shape == (2, 3 * 44100)


def test_the_audio_of_a_video(videos: dict[str, tuple[Path, int]]) -> None:
    path = videos["with_audio.mp4"][0]
    x = dataio.read_audio(str(path), offset=0.5, duration=0.25)
    assert x.shape == (2, 12000)
    t = 0.5 + np.arange(12000) / 48000
    lag = best_lag(x[0], tone(t, 0), 96)
    assert abs(lag) <= 96 and np.abs(x[0] - np.roll(tone(t, 0), lag)).mean() < 0.05


def rows(pipe: Any, recs: list[dict[str, Any]], **kw: Any) -> dict[str, np.ndarray]:
    with pipe.bind(recs).run("numpy", **kw) as loader:
        return {k: np.array(x) for b in loader for k, x in zip(b.keys, b["audio"])}


def test_random_windows_are_keyed_and_batch(audios: dict[str, Path]) -> None:
    recs = [{"key": n, "audio": str(p)} for n, p in audios.items()]
    pipe = dataio.pipeline(
        dataio.slot("audio").decode_audio(sample_rate=16000, mono=True, duration=0.5, offset="random"), dataio.batch(3)
    )
    a = rows(pipe, recs, seed=4)
    assert a.keys() == set(audios) and all(x.shape == (1, 8000) for x in a.values())
    b = rows(pipe, recs, seed=4, concurrency=1)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    c = rows(pipe, recs, seed=5)
    assert any(not np.allclose(a[k], c[k]) for k in a), "another seed, other offsets"
    # Each window is the signal at some offset: find it on the lossless ones.
    for name in LOSSLESS:
        x = a[name][0]
        full = dataio.read_audio(str(audios[name]), sample_rate=16000, mono=True)[0]
        at = int(np.argmin([np.abs(full[s:s + 8000] - x).mean() for s in range(0, len(full) - 8000 + 1, 1)]))
        assert np.abs(full[at:at + 8000] - x).max() < 1e-4 and 0 <= at <= 2.5 * 16000


def test_variable_lengths_batch_padded_to_the_longest(audios: dict[str, Path], tmp_path: Path) -> None:
    from media import write_audio

    short = write_audio(tmp_path / "short.flac", 1.0, codec="flac", rate=16000)
    recs = [{"key": "long", "audio": str(audios["tone.flac"])}, {"key": "short", "audio": str(short)}]
    pipe = dataio.pipeline(dataio.slot("audio").decode_audio(sample_rate=16000), dataio.batch(2), dataio.batch_transforms.pad_to_longest("audio"))
    with pipe.bind(recs).run("numpy") as loader:
        b = next(iter(loader))
    assert b["audio"].shape == (2, 2, 48000)
    i = list(b.keys).index("short")
    assert np.abs(b["audio"][i][:, 16000:]).max() == 0 and np.abs(b["audio"][i][:, :16000]).max() > 0.4


def test_bad_audio_input(audios: dict[str, Path], videos: dict[str, tuple[Path, int]], tmp_path: Path) -> None:
    with pytest.raises(DecodeError, match="no audio stream"):
        dataio.read_audio(str(videos["h264.mkv"][0]))
    with pytest.raises(DecodeError, match="offset=9 s is outside"):
        dataio.read_audio(str(audios["tone.flac"]), offset=9.0)
    junk = tmp_path / "junk.mp3"
    junk.write_bytes(b"\xff\xfb" + bytes(range(200)) * 3)
    recs = [{"key": "ok", "audio": str(audios["tone.wav"])}, {"key": "junk", "audio": str(junk)}]
    pipe = dataio.pipeline(dataio.slot("audio").decode_audio(duration=0.1), dataio.batch(1))
    with pytest.raises(RowError) as e:
        rows(pipe, recs)
    assert e.value.key == "junk" and e.value.op == "decode_audio" and e.value.uri == str(junk), e.value
    assert set(rows(pipe, recs, on_failure="skip")) == {"ok"}
    with pytest.raises(dataio.errors.DataioError, match="max_samples"):
        rows(dataio.pipeline(dataio.slot("audio").decode_audio(max_samples=1000), dataio.batch(1)), recs[:1])


def test_windows_the_audio_ends_inside_are_padded_with_their_lengths(audios: dict[str, Path], tmp_path: Path) -> None:
    """decode_audio(duration=1.0) of a 0.6 s file: zeros after 0.6 s, and
    ``audio_lengths`` says where the signal ends (the 3 s files: the whole
    window). Without sample_rate, the batch is padded to its longest row."""
    from media import write_audio

    short = write_audio(tmp_path / "short.flac", 0.6, codec="flac", rate=16000)
    recs = [{"key": "long", "audio": str(audios["tone.flac"])}, {"key": "short", "audio": str(short)},
            {"key": "near_end", "audio": str(audios["tone.wav"])}]
    pipe = dataio.pipeline(dataio.slot("audio").decode_audio(sample_rate=16000, duration=1.0), dataio.batch(3))
    with pipe.bind(recs).run("numpy") as loader:
        b = next(iter(loader))
    assert b["audio"].shape == (3, 2, 16000) and b["audio_lengths"].dtype == np.int64
    lengths = dict(zip(b.keys, b["audio_lengths"].tolist()))
    assert lengths["long"] == 16000 and lengths["near_end"] == 16000 and abs(lengths["short"] - 9600) <= 2, lengths
    i = list(b.keys).index("short")
    assert np.abs(b["audio"][i][:, lengths["short"]:]).max() == 0
    assert np.abs(b["audio"][i][:, 100 : lengths["short"] - 100]).max() > 0.4
    # An offset 0.6 s before the end of a 3 s file: 0.6 s of signal in a 1 s window.
    pipe = dataio.pipeline(dataio.slot("audio").decode_audio(sample_rate=16000, duration=1.0, offset=2.4), dataio.batch(1))
    with pipe.bind(recs[:1]).run("numpy") as loader:
        b = next(iter(loader))
    assert b["audio"].shape == (1, 2, 16000) and abs(int(b["audio_lengths"][0]) - 9600) <= 2, b["audio_lengths"]
    # Every row short, the file's own rate: padded to the longest of the batch.
    pipe = dataio.pipeline(dataio.slot("audio").decode_audio(duration=1.0), dataio.batch(2))
    with pipe.bind([recs[1], recs[1]]).run("numpy") as loader:
        b = next(iter(loader))
    assert b["audio"].shape[-1] == int(b["audio_lengths"][0]) and abs(int(b["audio_lengths"][0]) - 9600) <= 2
    # pad=True keeps the window's zeros in the op, without lengths.
    pipe = dataio.pipeline(dataio.slot("audio").decode_audio(sample_rate=16000, duration=1.0, pad=True), dataio.batch(1))
    with pipe.bind(recs[1:2]).run("numpy") as loader:
        b = next(iter(loader))
    assert b["audio"].shape == (1, 2, 16000) and "audio_lengths" not in b.to_dict()


def test_a_header_claiming_an_absurd_sample_rate_is_refused_at_once(tmp_path: Path) -> None:
    # The fuzzer's 244-byte WAV claiming 654 MHz: the resampler's filter for
    # that ratio took seconds to build; now a typed error naming the rate.
    import struct
    import time

    rate, data = 654_319_424, bytes(range(200))
    fmt = struct.pack("<HHIIHH", 1, 1, rate, rate * 2 & 0xFFFFFFFF, 2, 16)
    wav = b"RIFF" + struct.pack("<I", 4 + 8 + len(fmt) + 8 + len(data)) + b"WAVE"
    wav += b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", len(data)) + data
    path = tmp_path / "absurd.wav"
    path.write_bytes(wav)
    t0 = time.monotonic()
    with pytest.raises(dataio.errors.DataioError, match="654319424 Hz, beyond any audio"):
        dataio.read_audio(str(path), sample_rate=16000)
    assert time.monotonic() - t0 < 2
