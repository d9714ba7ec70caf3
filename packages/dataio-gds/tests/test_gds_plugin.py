"""dataio-gds on any host: found through its entry point, registered as the
device reader for "cuda", an honest report row and clear refusals. (The GPU
paths are in test_gpu.py, which runs where CUDA is present.)"""

from __future__ import annotations

from pathlib import Path

import dataio
from dataio.formats.safetensors import SafetensorsFile
from dataio.testing import PluginConformance, require

torch = require("torch")


class TestGdsPlugin(PluginConformance):
    entry_point = "gds"
    package = "dataio-gds"
    device_types = ("cuda",)

    def expected_status(self) -> str:
        from dataio_gds.cufile import probe

        return "ok" if probe()["available"] else "unavailable"


def test_gds_info_names_what_is_missing() -> None:
    info = dataio.gds_info()
    assert info["path"] is None or info["path"] in ("gds", "staged")
    if torch.cuda.is_available():
        return
    assert info["available"] is False and dataio.gds_available() is False
    assert "CUDA" in info["reason"] or "cuFile" in info["reason"]
    assert "dataio-gds plugin is not installed" not in info["reason"], "the plugin's device reader must be found"


def test_the_reader_places_every_tensor_from_the_public_layout(tmp_path: Path) -> None:
    # The device paths end in the same step: one buffer holding the data
    # section, cut into tensors by the layout the core publishes. Checked
    # here on a host buffer, so it runs without a GPU; odd-sized tensors put
    # later ones at offsets unaligned for their dtype.
    from dataio_gds.reader import _views

    g = torch.Generator().manual_seed(1)
    state = {
        "mask": torch.rand(3, generator=g) > 0.5,  # 3 bytes: what follows is unaligned
        "w": torch.randn(4, 6, generator=g),
        "half": torch.randn(5, generator=g).to(torch.bfloat16),
        "ids": torch.arange(7, dtype=torch.int64),
        "empty": torch.zeros(0, 2),
        "scalar": torch.tensor(3.5, dtype=torch.float64),
    }
    path = str(tmp_path / "model.safetensors")
    dataio.write_safetensors(path, state)
    layout = SafetensorsFile(path).layout()
    assert any(t.begin % t.dtype.itemsize for t in layout.tensors.values()), "the file must exercise unaligned offsets"
    data = Path(path).read_bytes()[layout.data_offset :]
    buf = torch.frombuffer(bytearray(data), dtype=torch.uint8)
    got = _views(buf, layout, "cpu")
    assert sorted(got) == sorted(state)
    for name, want in state.items():
        assert got[name].dtype == want.dtype and got[name].shape == want.shape, name
        assert torch.equal(got[name], want), name
