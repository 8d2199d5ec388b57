"""Fixtures of the explorer and `explain` tests: story_world.py's world copied from a template."""

from __future__ import annotations

import pytest
from story_world import StoryWorld, build_story, copy_story

from tests.helpers import isolated_settings


@pytest.fixture(scope="session")
def story_template(tmp_path_factory) -> StoryWorld:
    """The story world, built once per session (per xdist worker)."""
    base = tmp_path_factory.mktemp("story-template")
    with isolated_settings(base / "home"):
        return build_story(base / "w")


@pytest.fixture
def story(story_template, tmp_path) -> StoryWorld:
    """The test's own copy of the story world."""
    return copy_story(story_template, tmp_path / "w")
