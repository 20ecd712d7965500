"""The persistent XLA compilation cache: where it lives, that a second process loads
programs from it instead of compiling, and how the command line turns it off.

Anything that enables the cache runs in a subprocess: JAX's cache settings are
process-wide, and this test process must keep compiling without one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jax
import pytest

from decision_bench import cli
from decision_bench._src.compile_cache import ENV_VAR, default_cache_dir, enable_compile_cache

TINY_BANDIT = ["bandit", "--agents", "uniform", "--env", "BernoulliBandit-v0", "--num-actions", "3",
               "--steps", "20", "--seeds", "1", "--batch-size", "4", "--log-every", "10",
               "--no-progress"]  # fmt: skip

# Enables the cache in the directory argv[1], compiles one small program and prints
# how often each of JAX's compilation-cache events fired.
COMPILE_ONCE = """
import json, sys
import jax, jax.numpy as jnp
from decision_bench._src.compile_cache import enable_compile_cache

counts = {}
def count(event, **kwargs):
    counts[event] = counts.get(event, 0) + 1
jax.monitoring.register_event_listener(count)
enable_compile_cache(sys.argv[1])
jax.jit(lambda x: jnp.sin(x) * 2.0 + 1.0)(jnp.arange(3.0)).block_until_ready()
print(json.dumps(counts))
"""


def _run_python(args, env_updates=None) -> subprocess.CompletedProcess:
    env = {**os.environ, **(env_updates or {})}
    result = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    return result


def _cache_events(directory: Path) -> dict[str, int]:
    counts = json.loads(_run_python(["-c", COMPILE_ONCE, str(directory)]).stdout)
    return {name.rsplit("/", 1)[-1]: n for name, n in counts.items() if "compilation_cache" in name}


def test_default_cache_dir_follows_the_environment():
    assert default_cache_dir({ENV_VAR: "/data/xla", "HOME": "/home/a"}) == Path("/data/xla")
    assert default_cache_dir({"XDG_CACHE_HOME": "/xdg", "HOME": "/home/a"}) == Path("/xdg/decision-bench/xla")
    assert default_cache_dir({"HOME": "/home/a"}) == Path("/home/a/.cache/decision-bench/xla")
    # An empty XDG_CACHE_HOME counts as unset.
    assert default_cache_dir({"XDG_CACHE_HOME": "", "HOME": "/home/a"}) == Path("/home/a/.cache/decision-bench/xla")


@pytest.mark.parametrize("value", ["", "off", "OFF", " off "])
def test_the_environment_variable_turns_the_cache_off(value, monkeypatch):
    assert default_cache_dir({ENV_VAR: value, "HOME": "/home/a"}) is None
    monkeypatch.setenv(ENV_VAR, value)
    before = jax.config.jax_compilation_cache_dir
    # Returns before touching JAX's settings, so this is safe in the test process.
    assert enable_compile_cache() is None
    assert jax.config.jax_compilation_cache_dir == before


def test_an_unusable_cache_directory_is_one_warning_and_no_cache(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    before = jax.config.jax_compilation_cache_dir
    with pytest.warns(RuntimeWarning, match="compilation cache is off for this run") as caught:
        assert enable_compile_cache(blocker / "xla") is None
    assert len(caught) == 1 and str(blocker / "xla") in str(caught[0].message)
    assert jax.config.jax_compilation_cache_dir == before


def test_a_second_process_loads_the_program_from_the_cache_instead_of_compiling(tmp_path):
    cache = tmp_path / "xla"
    first = _cache_events(cache)
    assert first.get("cache_misses", 0) >= 1 and first.get("cache_hits", 0) == 0, first
    assert any(cache.iterdir()), "the first process wrote nothing to the cache"
    second = _cache_events(cache)
    assert second.get("cache_hits", 0) >= 1 and second.get("cache_misses", 0) == 0, second


def test_no_compile_cache_is_accepted_before_and_after_the_subcommand():
    parser = cli.build_parser()
    bandit = [*TINY_BANDIT, "--out", "unused"]
    assert parser.parse_args(["--no-compile-cache", *bandit]).no_compile_cache is True
    assert parser.parse_args([*bandit, "--no-compile-cache"]).no_compile_cache is True
    assert parser.parse_args(bandit).no_compile_cache is False


def test_the_command_caches_by_default_and_not_with_no_compile_cache(tmp_path):
    command = ["-m", "decision_bench.cli"]
    _run_python([*command, *TINY_BANDIT, "--out", str(tmp_path / "on")], {ENV_VAR: str(tmp_path / "on_cache")})
    assert any((tmp_path / "on_cache").iterdir())
    _run_python([*command, "--no-compile-cache", *TINY_BANDIT, "--out", str(tmp_path / "off")],
                {ENV_VAR: str(tmp_path / "off_cache")})  # fmt: skip
    assert (tmp_path / "off" / "bandit.csv").exists()
    assert not (tmp_path / "off_cache").exists()


# Enables the cache in argv[1], makes every entry write fail as on a full disk
# (ENOSPC from JAX's cache store) and compiles five different programs.
FULL_DISK_CACHE = """
import errno, os, sys
import jax, jax.numpy as jnp
from jax._src import compilation_cache
from decision_bench._src.compile_cache import enable_compile_cache

def full_disk(*args, **kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
compilation_cache.put_executable_and_time = full_disk
enable_compile_cache(sys.argv[1])
for fn in (jnp.sin, jnp.cos, jnp.tanh, jnp.exp, jnp.log1p):  # programs jit_sin, jit_cos, ...
    jax.jit(fn)(jnp.arange(3.0)).block_until_ready()
print("done")
"""


def test_a_cache_that_stops_storing_warns_once_per_process(tmp_path):
    cache = tmp_path / "xla"
    result = subprocess.run([sys.executable, "-c", FULL_DISK_CACHE, str(cache)], capture_output=True, text=True,
                            timeout=120)  # fmt: skip
    assert result.returncode == 0 and result.stdout.strip() == "done", result.stderr
    assert result.stderr.count("the compilation cache cannot store programs") == 1, result.stderr
    assert "Error writing persistent compilation cache entry" not in result.stderr
