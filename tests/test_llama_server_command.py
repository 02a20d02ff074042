"""`moot llama-server`'s command line and build, without building: a binary of the user's own, what a
missing tool says, the cached binary's place, and an sdist unpacked as data only."""

from __future__ import annotations

import io
import tarfile

import pytest

from moot.cli import main
from moot.errors import EXIT_ENVIRONMENT, EXIT_OK, EXIT_USAGE
from moot.models.backends.local import llama_server
from moot.models.backends.local.llama_server import BuildError, build_server, cached_binary, unpacked


def test_a_binary_of_the_user_s_own_is_used_as_it_is(tmp_path, monkeypatch, capsys):
    own = tmp_path / "llama-server"
    own.write_text("")
    monkeypatch.setenv("MOOT_LLAMA_SERVER", str(own))
    assert main(["llama-server", "--build"]) == EXIT_OK
    assert capsys.readouterr().out.strip() == str(own)


def test_a_missing_binary_of_the_user_s_own_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MOOT_LLAMA_SERVER", str(tmp_path / "nowhere"))
    assert main(["llama-server", "--build"]) == EXIT_ENVIRONMENT
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "MOOT_LLAMA_SERVER=" in err and "no such file" in err


@pytest.mark.parametrize("args", [["--port", "70000"], ["--parallel", "0"], ["--ctx", "100"]])
def test_bad_options_are_usage_errors(args, capsys):
    assert main(["llama-server", *args]) == EXIT_USAGE


def test_without_cmake_the_build_says_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setattr(llama_server.shutil, "which", lambda *a, **k: None)
    with pytest.raises(BuildError, match="needs CMake to build: install it"):
        build_server(tmp_path / "llama-server", say=lambda text: None)


def test_the_binary_is_kept_per_version_machine_and_flags(tmp_path, monkeypatch):
    monkeypatch.setenv("MOOT_CACHE_DIR", str(tmp_path))
    found = cached_binary()
    assert found.parent.parent == tmp_path / "llama-server" and found.name == "llama-server"
    monkeypatch.setattr(llama_server, "CMAKE_FLAGS", [*llama_server.CMAKE_FLAGS, "-DGGML_CUDA=ON"])
    assert cached_binary() != found


def archive(tmp_path, members: dict[str, bytes], link: str = ""):
    path = tmp_path / "llama_cpp_python-0.3.36.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        if link:
            info = tarfile.TarInfo("llama_cpp_python-0.3.36/vendor/llama.cpp/escape")
            info.type, info.linkname = tarfile.SYMTYPE, link
            tar.addfile(info)
    return path


def test_only_the_vendored_tree_is_unpacked_and_as_data(tmp_path):
    made = archive(tmp_path, {"llama_cpp_python-0.3.36/vendor/llama.cpp/CMakeLists.txt": b"project(x)",
                              "llama_cpp_python-0.3.36/setup.py": b"print('never run')"})
    tree = unpacked(made, tmp_path / "src")
    assert (tree / "CMakeLists.txt").read_bytes() == b"project(x)"
    assert not (tmp_path / "src" / "llama_cpp_python-0.3.36" / "setup.py").exists()
    escaping = archive(tmp_path, {"llama_cpp_python-0.3.36/vendor/llama.cpp/CMakeLists.txt": b""}, link="/etc/passwd")
    with pytest.raises(BuildError, match="not plain data"):
        unpacked(escaping, tmp_path / "other")


def test_an_sdist_without_the_tree_is_one_line(tmp_path):
    with pytest.raises(BuildError, match="holds no vendor/llama.cpp tree"):
        unpacked(archive(tmp_path, {"llama_cpp_python-0.3.36/setup.py": b""}), tmp_path / "src")
