"""The Containerfile refers only to files that exist and reach the build context, builds every
plugin, runs as non-root on a slim base, and tags the image deploy/ runs."""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

import yaml

REPO = Path(__file__).parent.parent
CONTAINERFILE = REPO / "Containerfile"
VERSION = (REPO / "VERSION").read_text().strip()  # the one version source (tests/test_versions.py)
IMAGE = f"clusterpulse:{VERSION}"


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    out: list[tuple[str, str]] = []
    pending = ""
    for line in text.splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        full = (pending + line).strip()
        pending = ""
        word, _, rest = full.partition(" ")
        out.append((word.upper(), rest.strip()))
    return out


def _pattern(pattern: str) -> re.Pattern[str]:
    regex = ""
    index = 0
    while index < len(pattern):
        if pattern.startswith("**/", index):
            regex, index = regex + "(?:.*/)?", index + 3
        elif pattern.startswith("**", index):
            regex, index = regex + ".*", index + 2
        elif pattern[index] == "*":
            regex, index = regex + "[^/]*", index + 1
        elif pattern[index] == "?":
            regex, index = regex + "[^/]", index + 1
        else:
            regex, index = regex + re.escape(pattern[index]), index + 1
    return re.compile(regex)


def ignored(path: str, rules: list[str]) -> bool:
    """Docker's .dockerignore decision for ``path`` (relative): the last matching pattern wins."""
    parts = path.strip("/").split("/")
    prefixes = ["/".join(parts[:n]) for n in range(1, len(parts) + 1)]
    excluded = False
    for rule in rules:
        negate = rule.startswith("!")
        regex = _pattern(rule.lstrip("!").strip("/"))
        if any(regex.fullmatch(prefix) for prefix in prefixes):
            excluded = not negate
    return excluded


def dockerignore() -> list[str]:
    lines = (REPO / ".dockerignore").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def test_every_copy_source_exists_and_is_in_the_build_context() -> None:
    rules = dockerignore()
    copies = [args for word, args in instructions(CONTAINERFILE.read_text()) if word == "COPY"]
    assert copies
    for args in copies:
        words = [w for w in shlex.split(args) if not w.startswith("--")]
        assert "--from" not in args, "copy between stages with a bind mount or name the stage"
        for source in words[:-1]:
            path = REPO / source
            assert path.exists(), f"COPY {source}: no such file in the repository"
            files = [path] if path.is_file() else [p for p in path.rglob("*.py")]
            assert files, f"COPY {source}: nothing to copy"
            for file in files:
                relative = file.relative_to(REPO).as_posix()
                assert not ignored(relative, rules), f"COPY {source}: {relative} is excluded by .dockerignore"


def test_every_file_a_wheel_build_reads_is_copied() -> None:
    rules = dockerignore()
    projects = [REPO, REPO / "model", *sorted(p.parent for p in REPO.glob("plugins/*/pyproject.toml"))]
    assert len(projects) > 2
    for project in projects:
        meta = tomllib.loads((project / "pyproject.toml").read_text())["project"]
        needed = ["pyproject.toml", *meta.get("license-files", [])]
        if isinstance(meta.get("readme"), str):
            needed.append(meta["readme"])
        for name in needed:
            relative = (project / name).relative_to(REPO).as_posix()
            assert (REPO / relative).is_file(), f"{relative} is missing"
            assert not ignored(relative, rules), f"{relative} is excluded by .dockerignore"


def test_the_build_stage_makes_wheels_of_the_core_and_every_plugin() -> None:
    runs = [args for word, args in instructions(CONTAINERFILE.read_text()) if word == "RUN"]
    wheels = [shlex.split(args) for args in runs if "pip wheel" in args]
    # First the locked third-party dependencies, every file checked against its hash ...
    assert wheels[0][wheels[0].index("-r") + 1] == "requirements/runtime.lock" and "--require-hashes" in wheels[0]
    # ... then ours, from the sources, without resolving anything else.
    ours = wheels[1]
    assert "--no-deps" in ours
    assert ours[ours.index("/wheels") + 1 :] == [".", "model/", "plugins/*/"], (
        "build the core, the model and every plugin (by glob, so new plugins are included), not testing/ nor demo/"
    )
    copied = [args.split()[0] for word, args in instructions(CONTAINERFILE.read_text()) if word == "COPY"]
    assert not [source for source in copied if source.rstrip("/") in ("testing", "demo")], copied
    install = next(args for args in runs if "pip install" in args)
    assert "--no-index" in install and "/wheels/clusterpulse_*.whl" in install


def test_the_base_image_is_pinned_by_a_build_argument_documented_with_its_digest_form() -> None:
    # The digest of python:3.11-slim-bookworm cannot be looked up where this repository is built and
    # tested (no registry access), so the file names the tag and says how a release pins the digest.
    text = CONTAINERFILE.read_text()
    froms = [args for word, args in instructions(text) if word == "FROM"]
    assert all(args.split()[0] == "${PYTHON_IMAGE}" for args in froms), "every stage from the one pinned argument"
    assert "--build-arg PYTHON_IMAGE=python:3.11-slim-bookworm@sha256:" in text
    assert "docs/security.md#reproducible-installs" in text


def test_runs_as_non_root_on_a_slim_base_with_the_clusterpulse_entrypoint() -> None:
    steps = instructions(CONTAINERFILE.read_text())
    froms = [args for word, args in steps if word == "FROM"]
    assert len(froms) >= 2, "multi-stage: build wheels, then install them"
    base = next(args.split("=", 1)[1] for word, args in steps if word == "ARG" and args.startswith("PYTHON_IMAGE="))
    assert "slim" in base and base.startswith("python:3.11")
    user = [args for word, args in steps if word == "USER"][-1]
    assert user.split(":")[0].isdigit() and int(user.split(":")[0]) != 0, "USER must be a numeric non-root uid"
    assert [args for word, args in steps if word == "ENTRYPOINT"] == ['["clusterpulse"]']


def test_the_image_tag_matches_deploy_and_the_documented_build_command() -> None:
    text = CONTAINERFILE.read_text()
    assert f"-t {IMAGE} ." in text
    assert f'org.opencontainers.image.version="{VERSION}"' in text
    deployment = yaml.safe_load((REPO / "deploy" / "base" / "deployment.yaml").read_text())
    pod = deployment["spec"]["template"]["spec"]
    assert pod["containers"][0]["image"] == IMAGE
    uid = next(args for word, args in instructions(text) if word == "USER").split(":")[0]
    assert pod["securityContext"]["runAsUser"] == int(uid)
    kustomization = yaml.safe_load((REPO / "deploy" / "base" / "kustomization.yaml").read_text())
    assert kustomization["images"] == [{"name": "clusterpulse", "newTag": VERSION}]
    assert f"docker build -f Containerfile -t {IMAGE} ." in (REPO / "docs" / "running.md").read_text()


def test_the_dockerignore_matcher() -> None:
    rules = ["**", "!plugins/", "**/__pycache__"]
    assert ignored("tests/x.py", rules)
    assert not ignored("plugins/redis/pyproject.toml", rules)
    assert ignored("plugins/redis/__pycache__/a.pyc", rules)
