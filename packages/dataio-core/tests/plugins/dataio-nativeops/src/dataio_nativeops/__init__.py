"""Test fixture: a native decoder plugin for dataio, written against
docs/plugins.md ("Writing a decoder plugin") as a third party would."""
