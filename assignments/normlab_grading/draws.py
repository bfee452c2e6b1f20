"""The hidden inputs: a 64-bit linear congruential generator (Knuth's MMIX constants), in pure Python.

Every hidden input of every check cell follows from the course seed and the cell's grade id (`draws_for`),
so the same seed gives the same inputs on every machine and in every run.
"""

from __future__ import annotations

import hashlib
import zlib


class Draws:
    _MASK = (1 << 64) - 1

    def __init__(self, seed: int):
        self.state = (seed * 2654435761 + 12345) & self._MASK

    def unit(self) -> float:
        self.state = (self.state * 6364136223846793005 + 1442695040888963407) & self._MASK
        return (self.state >> 11) / 9007199254740992.0

    def uniform(self, lo: float, hi: float) -> float:
        return lo + (hi - lo) * self.unit()

    def integer(self, lo: int, hi: int) -> int:
        """An integer in [lo, hi]."""
        return lo + int(self.unit() * (hi - lo + 1))

    def vector(self, n: int, lo: float = -3.0, hi: float = 3.0) -> list:
        out = []
        state, mask, span = self.state, self._MASK, hi - lo
        for _ in range(n):
            state = (state * 6364136223846793005 + 1442695040888963407) & mask
            out.append(lo + span * ((state >> 11) / 9007199254740992.0))
        self.state = state
        return out


def draws_for(seed: int, grade_id: str) -> Draws:
    """The generator of one check cell: its own stream, from the course seed and the grade id."""
    return Draws(seed * 1_000_003 + zlib.crc32(grade_id.encode()))



def student_seed(seed: int, secret: str | None, student: str, submission: str = "") -> int:
    """The seed of one submission's hidden inputs: the course seed alone without a secret and a submission
    (every student the same inputs); otherwise a 63-bit number derived from the secret (if any), the course
    seed, the student id and the submission's fingerprint (if given), so that inputs one student prints are
    useless to another, and inputs learned from one hand-in (a table of them, built from its feedback) are
    drawn afresh for the next; the same submission gets the same inputs on every re-grade. The secret stays in
    the course configuration, outside every sandbox."""
    if not secret and not submission:
        return seed
    text = f"{secret or ''}\0{seed}\0{student}" + (f"\0{submission}" if submission else "")
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big") >> 1
