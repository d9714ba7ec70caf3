"""dataio's backend conformance suite against the local Hub server, for a
model repo, a dataset repo at a revision, and a space."""

from __future__ import annotations

import uuid

import pytest
from _hub import FakeHub
from dataio.testing import BackendConformance


class TestHfModelConformance(BackendConformance):
    @pytest.fixture
    def base_uri(self, hf: FakeHub) -> str:
        repo = f"dataio/model-{uuid.uuid4().hex[:8]}"
        hf.add_repo("model", repo)
        return f"hf://{repo}/"


class TestHfDatasetAtRevisionConformance(BackendConformance):
    @pytest.fixture
    def base_uri(self, hf: FakeHub) -> str:
        repo = f"dataio/data-{uuid.uuid4().hex[:8]}"
        hf.add_repo("dataset", repo, revisions=("main", "v1.0"))
        return f"hf://datasets/{repo}@v1.0/{uuid.uuid4().hex[:6]}/"


class TestHfSpaceConformance(BackendConformance):
    @pytest.fixture
    def base_uri(self, hf: FakeHub) -> str:
        repo = f"dataio/space-{uuid.uuid4().hex[:8]}"
        hf.add_repo("space", repo)
        return f"hf://spaces/{repo}/files/"
