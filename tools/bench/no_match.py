"""The no-match set of ``tools/bench/bench_recall.py``: queries that match nothing.

:func:`no_match_queries` makes ``n`` queries with a fixed seed, half of each
kind:

- **identifiers**: hex hashes, account codes (``zq`` and letters and digits),
  ticket numbers (``ABC-1234``), order numbers, emails, UUIDs and mixed codes
  (``HgA7433kx``), each kept only when no turn of any conversation contains
  it (case-insensitive);
- **off-topic questions**: a topic from :data:`TOPICS` (fields the
  conversations never touch) in a question whose other words are function
  words, kept only when none of its content words' index terms occurs in
  any conversation.

A search returning any hit for one of them is a false hit.
"""

from __future__ import annotations

import random
import string
from collections.abc import Callable, Iterable

__all__ = ["SEED", "TEMPLATES", "TOPICS", "identifier", "no_match_queries"]

SEED = 40
_TOPICS = """
quantum chromodynamics; tokamak plasma confinement; Byzantine iconoclasm; lattice cryptography;
ferrocement hull corrosion; Mesozoic ammonite taxonomy; Fortran compiler vectorisation;
sovereign bond arbitrage; mitochondrial haplogroups; Sanskrit prosody; geostationary orbit insertion;
Kubernetes pod eviction; ribosome biogenesis; Hanseatic tariffs; thermocouple calibration;
cuneiform tablets; zeolite catalysts; Carolingian minuscule; transonic wing flutter;
Ottoman cadastral surveys; bryophyte spore dispersal; Ethereum gas auctions; photonic crystal fibres;
Kantian antinomies; sewage sludge digestion; tungsten carbide sintering; Zoroastrian eschatology;
magnetohydrodynamic generators; Basque ergativity; seismic tomography; Merovingian coinage;
hydraulic fracturing proppants; lichen symbiosis; Bessel functions; Mughal miniature pigments;
cyclotron beam extraction; Linux kernel scheduler; Venetian glass furnaces; nematode parasitology;
Aztec tribute ledgers; sulfuric acid plants; gravitational lensing; Hittite verb morphology;
subduction megathrust earthquakes; COBOL mainframe batch jobs; tardigrade cryptobiosis;
Phoenician shipbuilding; spectroscopic binaries; Prussian land reforms; antibody glycosylation;
Mongolian throat singing; superconducting qubits; Etruscan funerary urns; diesel injector nozzles;
Sumerian irrigation; topological insulators; medieval tithe disputes; krill swarms;
reinforced concrete creep; Icelandic sagas; chlorophyll fluorescence"""
TOPICS = tuple(t.strip() for t in _TOPICS.split(";"))
# Questions around a topic whose other words are all function words.
TEMPLATES = ("What is {}?", "What about {}?", "Where is {}?", "When was {}?", "Who had {}?",
             "Did you do {}?", "{}", "Is there {}?")
_HEX = "0123456789abcdef"
_ALNUM = string.ascii_lowercase + string.digits


def _run(rng: random.Random, chars: str, low: int, high: int) -> str:
    return "".join(rng.choice(chars) for _ in range(rng.randrange(low, high + 1)))


def identifier(rng: random.Random) -> str:
    """One random identifier, of one of seven shapes."""
    kind = rng.randrange(7)
    if kind == 0:
        return "".join(rng.choice(_HEX) for _ in range(rng.choice((12, 16, 32, 40))))
    if kind == 1:
        return "zq" + _run(rng, _ALNUM, 12, 26)
    if kind == 2:
        return f"{_run(rng, string.ascii_uppercase, 2, 4)}-{rng.randrange(100, 10**6)}"
    if kind == 3:
        return str(rng.randrange(10**5, 10**10))
    if kind == 4:
        tld = rng.choice(("com", "io", "net", "org"))
        return f"{_run(rng, _ALNUM, 5, 9)}@{_run(rng, string.ascii_lowercase, 5, 8)}.{tld}"
    if kind == 5:
        h = "".join(rng.choice(_HEX) for _ in range(32))
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
    return _run(rng, string.ascii_letters, 3, 3) + str(rng.randrange(1000, 99999)) + _run(
        rng, string.ascii_lowercase, 2, 2)


def no_match_queries(texts: Iterable[str], content_terms: Callable[[str], list[str]],
                     n: int = 200, seed: int = SEED) -> list[tuple[str, str]]:
    """``n`` (kind, query) pairs that match nothing in ``texts`` (every turn of
    every conversation): half identifiers, half off-topic questions.
    ``content_terms``: the index terms of a text's content words."""
    lowered = [t.lower() for t in texts]
    vocabulary = {term for t in lowered for term in content_terms(t)}
    rng = random.Random(seed)
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    while len(out) < n // 2:
        code = identifier(rng)
        if code not in seen and not any(code.lower() in t for t in lowered):
            seen.add(code)
            out.append(("identifier", code))
    topics = [t for t in TOPICS if not set(content_terms(t)) & vocabulary]
    pairs = [(t, q) for t in topics for q in TEMPLATES]
    if len(pairs) < n - len(out):
        raise ValueError("too few off-topic questions for these conversations")
    for topic, template in rng.sample(pairs, n - len(out)):
        out.append(("off-topic", template.format(topic)))
    return out
