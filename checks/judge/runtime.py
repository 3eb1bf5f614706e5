"""How the in-process model is loaded on this machine: ``fast`` or ``safe``.

llama.cpp repacks weights into CPU-specific buffers ("extra buffer types") for speed. On
Intel CPUs with AMX (Sapphire/Granite Rapids: AWS m7i, GCP C4, many CI runners) the AMX
matrix path of the builds llama-cpp-python compiles segfaults on the first decode
(ggml-org/llama.cpp#20824). Loading with ``use_extra_bufts = False`` — ``safe`` — avoids it,
at a cost measured in docs/models.md.

``judge.runtime`` chooses: ``fast`` and ``safe`` are what they say; ``auto`` (the default)
is ``safe`` where the CPU has AMX or where ``fast`` has crashed before on this machine
(remembered in the user cache dir), else ``fast``. The worker process
(:mod:`referee.checks.judge.worker`) also falls back from ``fast`` to ``safe`` once after a
crash under ``auto``, and remembers that here.

Pure functions over the text of ``/proc/cpuinfo``, so the decision is testable on recorded
CPUs; the two functions at the bottom read and write this machine's memory of it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

Mode = Literal["fast", "safe"]
Setting = Literal["auto", "fast", "safe"]

# The CPU flags (Linux /proc/cpuinfo spelling) that put ggml on its AMX path.
AMX_FLAGS = frozenset({"amx_tile", "amx_int8", "amx_bf16", "amx_fp16", "amx_complex"})
CPUINFO = Path("/proc/cpuinfo")
MEMORY_FILE = "runtime.json"


@dataclass(frozen=True)
class Cpu:
    """What the decision needs to know of a CPU."""

    model: str
    flags: frozenset[str]

    @property
    def amx(self) -> list[str]:
        return sorted(self.flags & AMX_FLAGS)

    @property
    def fingerprint(self) -> str:
        """Stable per CPU type: its model name and its flags."""
        text = self.model + "\0" + " ".join(sorted(self.flags))
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def parse_cpuinfo(text: str) -> Cpu:
    """The first processor's model name and flags from the text of ``/proc/cpuinfo``
    (x86's ``flags``; ARM's ``Features``)."""
    model = ""
    flags: frozenset[str] = frozenset()
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key = key.strip().lower()
        if key == "model name" and not model:
            model = value.strip()
        elif key in ("flags", "features") and not flags:
            flags = frozenset(value.split())
        if model and flags:
            break
    return Cpu(model=model or platform.processor() or platform.machine(), flags=flags)


def this_cpu() -> Cpu:
    """This machine's CPU (flags are empty where ``/proc/cpuinfo`` does not exist)."""
    try:
        return parse_cpuinfo(CPUINFO.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return Cpu(model=platform.processor() or platform.machine(), flags=frozenset())


@dataclass(frozen=True)
class Choice:
    mode: Mode
    why: str
    # True when ``auto`` chose ``fast``: a crash may then fall back to ``safe`` once.
    may_fall_back: bool = False


def choose(setting: Setting, cpu: Cpu, remembered: Mode | None = None) -> Choice:
    """The mode to load the model in, and why (one phrase, shown by ``referee doctor``)."""
    if setting == "fast":
        return Choice("fast", "judge.runtime = fast")
    if setting == "safe":
        return Choice("safe", "judge.runtime = safe")
    if cpu.amx:
        return Choice(
            "safe",
            f"this CPU has AMX ({', '.join(cpu.amx)}), whose matrix path crashes "
            "llama.cpp (ggml-org/llama.cpp#20824)",
        )
    if remembered == "safe":
        return Choice("safe", "fast mode crashed on this machine before (remembered)")
    return Choice("fast", "no AMX on this CPU", may_fall_back=True)


def _key(cpu: Cpu) -> str:
    try:
        from importlib.metadata import version

        llama = version("llama-cpp-python")
    except Exception:  # not installed, or metadata missing: still a usable key
        llama = "?"
    return f"{cpu.fingerprint}:llama-cpp-python-{llama}"


def memory_path() -> Path:
    from platformdirs import user_cache_dir

    return Path(os.environ.get("REFEREE_CACHE_DIR") or user_cache_dir("referee")) / MEMORY_FILE


def remembered(cpu: Cpu, path: Path | None = None) -> Mode | None:
    """The mode this machine was found to need (None when nothing is remembered)."""
    path = path or memory_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        mode = data[_key(cpu)]["mode"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return mode if mode in ("fast", "safe") else None


def remember(cpu: Cpu, mode: Mode, reason: str, path: Path | None = None) -> None:
    """Write down that this machine needs ``mode`` (atomically; best effort)."""
    path = path or memory_path()
    with contextlib.suppress(OSError, ValueError):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(data, dict):
                data = {}
        except (OSError, ValueError):
            data = {}
        data[_key(cpu)] = {
            "mode": mode,
            "reason": reason,
            "cpu": cpu.model,
            "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, path)
