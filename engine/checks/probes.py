"""Probes: a construct from a chat template (`x.strip('\\n')`, `True`, a dict printed) rendered on its
own, with a sample value, in transformers and in every other engine. A portability lint reports a
construct only where some engine was seen to fail on it or to print something else, and offers a
rewrite only after the rewrite gave transformers' text in every engine.

Results are cached process-wide by (template text, inputs): the same few constructs recur in every
template, and a probe's outcome depends on nothing else."""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from ..engines import ENGINES, LABELS, EngineOutput, render_all
from ..transformers_compat import compile_template, plain_data
from ..text import short

_CACHE_SIZE = 512
_cache: OrderedDict[tuple[str, str], Probe] = OrderedDict()
_cache_lock = threading.Lock()


@dataclass(frozen=True)
class Probe:
    """One construct's outcome: transformers' text (or error) and each engine's output."""

    source: str
    reference: str | None
    reference_error: str | None
    outputs: dict[str, EngineOutput]

    def problems(self) -> dict[str, str]:
        """{engine: what goes wrong there} for engines that fail or print something else."""
        out = {}
        for engine, output in self.outputs.items():
            if output.not_checked is not None:
                continue
            if output.error is not None:
                out[engine] = f"fails ({output.error})"
            elif self.reference is not None and output.text != self.reference:
                out[engine] = f"gives {short(output.text or '', 40)!r} where transformers gives {short(self.reference, 40)!r}"
        return out

    def agrees_everywhere(self, reference: str | None) -> bool:
        """Whether transformers and every checked engine give exactly `reference`."""
        if self.reference is None or self.reference != reference:
            return False
        return all(o.not_checked is not None or (o.error is None and o.text == reference) for o in self.outputs.values())

    def not_checked(self) -> list[str]:
        return [engine for engine, o in self.outputs.items() if o.not_checked is not None]


def run_probes(probes: list[tuple[str, dict[str, Any]]]) -> list[Probe]:
    """Each (template text, variables) rendered everywhere, from the cache where possible."""
    keys = [(source, json.dumps(plain_data(variables), sort_keys=True, ensure_ascii=False)) for source, variables in probes]
    with _cache_lock:
        missing = list(dict.fromkeys(k for k in keys if k not in _cache))
    fresh: dict[tuple[str, str], Probe] = {}
    if missing:
        contexts = [json.loads(k[1]) for k in missing]
        outputs = render_all("", contexts, ENGINES, sources=[k[0] for k in missing])
        for i, (source, _) in enumerate(missing):
            reference, error = _reference(source, contexts[i])
            fresh[missing[i]] = Probe(source, reference, error, {e: outputs[e][i] for e in ENGINES})
        with _cache_lock:
            for key, probe in fresh.items():
                _cache[key] = probe
            while len(_cache) > _CACHE_SIZE:
                _cache.popitem(last=False)
    with _cache_lock:
        return [fresh.get(k) or _cache[k] for k in keys]


def _reference(source: str, variables: dict) -> tuple[str | None, str | None]:
    try:
        return compile_template(source).render(**variables), None
    except Exception as e:  # noqa: BLE001 - the probe itself does not work in transformers
        return None, f"{type(e).__name__}: {e}"


def describe(problems: dict[str, str]) -> str:
    """"MiniJinja (TGI) fails (…); @huggingface/jinja gives 'x' where …"."""
    return "; ".join(f"{LABELS[engine]} {what}" for engine, what in problems.items())
