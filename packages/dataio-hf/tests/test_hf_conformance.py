"""dataio's conformance suites against the local Hub server: the backend
suite for a model repo, a dataset repo at a revision and a space, the
formats and image pipeline (every write a commit), and how the plugin
presents itself."""

from __future__ import annotations

import uuid

import pytest
from _hub import FakeHub

from dataio.testing import BackendConformance, FormatsConformance, PluginConformance


def new_repo(hub: FakeHub, kind: str, prefix: str, **kwargs: object) -> str:
    repo = f"dataio/{prefix}-{uuid.uuid4().hex[:8]}"
    hub.add_repo(kind, repo, **kwargs)
    return repo


class TestHfModelConformance(BackendConformance):
    @pytest.fixture
    def base_uri(self, hf: FakeHub) -> str:
        return f"hf://{new_repo(hf, 'model', 'model')}/"


class TestHfDatasetAtRevisionConformance(BackendConformance):
    @pytest.fixture
    def base_uri(self, hf: FakeHub) -> str:
        repo = new_repo(hf, "dataset", "data", revisions=("main", "v1.0"))
        return f"hf://datasets/{repo}@v1.0/{uuid.uuid4().hex[:6]}/"


class TestHfSpaceConformance(BackendConformance):
    @pytest.fixture
    def base_uri(self, hf: FakeHub) -> str:
        return f"hf://spaces/{new_repo(hf, 'space', 'space')}/files/"


class TestHfFormats(FormatsConformance):
    @pytest.fixture
    def root(self, hf: FakeHub) -> str:
        return f"hf://datasets/{new_repo(hf, 'dataset', 'e2e')}"


class TestHfPlugin(PluginConformance):
    entry_point, package, schemes = "hf", "dataio-hf", ("hf",)
