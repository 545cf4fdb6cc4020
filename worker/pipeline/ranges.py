"""Every numeric parameter and its range, defined once.

The CLI (``type=cli_type(name)``), the forms and callbacks (``check``), the job parameters
and the steps themselves check numbers here, so a value is refused the same way wherever
it comes from: not finite, out of range, or a fraction where a whole number is meant, it
is one :class:`InputError` line that names the flag and its range. Bounds that depend on
the data (batch ≤ the subset's size, perplexity < N/3, pca-dims ≤ D, min_samples ≤ the
class's size, node-rank < nnodes) are passed as ``high`` by the step that knows them.

Counts are checked before anything is allocated: the caps on epochs, seeds and batch sizes
are far above any real use and far below what would exhaust the machine.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass

from worker.pipeline.errors import InputError


@dataclass(frozen=True)
class Param:
    """A number's flag, type and range: ``low`` ≤ value ≤ ``high`` (``low`` excluded when
    ``above``, ``high`` excluded when ``below``)."""

    flag: str
    integer: bool
    low: float
    high: float
    above: bool = False
    below: bool = False

    def bounds(self, high: float | None = None, strict: bool = False) -> tuple[float, bool]:
        """The upper bound and whether it is excluded, with a data-given ``high``."""
        if high is not None and (high < self.high or (high == self.high and strict)):
            return high, strict
        return self.high, self.below

    def describe(self, high: float | None = None, strict: bool = False, why: str = "") -> str:
        """'a whole number from 1 to 10,000', 'a number > 0 and ≤ 100', ..."""
        top, excluded = self.bounds(high, strict)
        kind = "a whole number" if self.integer else "a number"
        if self.integer and not self.above and not excluded:
            return f"{kind} from {_fmt(self.low)} to {_fmt(top)}{why}"
        low = f"> {_fmt(self.low)}" if self.above else f"≥ {_fmt(self.low)}"
        up = f"< {_fmt(top)}" if excluded else f"≤ {_fmt(top)}"
        return f"{kind} {low} and {up}{why}"


def _fmt(x: float) -> str:
    return f"{int(x):,}" if float(x).is_integer() and abs(x) < 1e15 else f"{x:g}"


PARAMS: dict[str, Param] = {
    # ingest and features
    "inject_noise": Param("--inject-noise", False, 0.0, 1.0, below=True),
    "inject_duplicates": Param("--inject-duplicates", False, 0.0, 1.0),
    "inject_outliers": Param("--inject-outliers", True, 0, 1_000_000),
    "seed": Param("--seed", True, 0, 2**32 - 1),
    # Below 32 px the networks' strides leave nothing to see.
    "input_size": Param("--input-size", True, 32, 512),
    "finetune": Param("--finetune", True, 0, 1000),
    "extract_batch": Param("--batch-size", True, 1, 65_536),
    "workers": Param("--workers", True, 0, 256),
    # the map
    "perplexity": Param("--perplexity", False, 0.0, 10_000.0, above=True),
    "pca_dims": Param("--pca-dims", True, 2, 100_000),
    "n_iter": Param("--n-iter", True, 0, 100_000),
    "exaggeration_iter": Param("--exaggeration-iter", True, 0, 100_000),
    # the rule
    "eps": Param("--eps", False, 0.0, 1e6, above=True),
    "min_samples": Param("--min-samples", True, 1, 10_000_000),
    # How many of a class's highest scores a reviewer's cut flags.
    "cut": Param("--cut", True, 0, 10_000_000),
    "shards": Param("--shards", True, 0, 4096),
    # Finding kinds' cuts (worker/pipeline/findings/): a pixel match for copies; for
    # outliers a ratio of distances (how much farther the nearest class lies than the
    # nearest images).
    "duplicate_threshold": Param("--duplicate-threshold", False, 0.0, 1.0, above=True),
    "leak_threshold": Param("--leak-threshold", False, 0.0, 1.0, above=True),
    "outlier_threshold": Param("--outlier-threshold", False, 0.0, 100.0, above=True),
    "top": Param("--top", True, 0, 1_000_000),
    # training
    "epochs": Param("--epochs", True, 1, 10_000),
    "train_batch": Param("--batch-size", True, 1, 10_000_000),
    "nproc": Param("--nproc", True, 1, 1024),
    "lr": Param("--lr", False, 0.0, 100.0, above=True),
    "weight_decay": Param("--weight-decay", False, 0.0, 1.0),
    "label_smoothing": Param("--label-smoothing", False, 0.0, 1.0, below=True),
    "warmup_epochs": Param("--warmup-epochs", True, 0, 10_000),
    "nnodes": Param("--nnodes", True, 1, 4096),
    "node_rank": Param("--node-rank", True, 0, 4095),
    "seeds": Param("--seeds", True, 1, 100),
    # serving
    "port": Param("--port", True, 1, 65_535),
    "concurrency": Param("--concurrency", True, 1, 1024),
}


def _number(text: object) -> float | None:
    """``text`` as a float (None when it is not a number at all); bools are not numbers."""
    if isinstance(text, bool) or text is None:
        return None
    try:
        return float(text.strip() if isinstance(text, str) else text)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return None


def check(name: str, value: object, high: float | None = None, strict: bool = False,
          why: str = "") -> int | float:
    """``value`` (a number, or text from a form or the command line) as the checked int or
    float of parameter ``name``. ``high`` tightens the upper bound with what the data allow
    (excluded when ``strict``); ``why`` says what it is, e.g. ``" (the subset's size)"``.

    Raises
    ------
    InputError
        One line naming the flag, its range and the value given.
    """
    p = PARAMS[name]
    x = _number(value)
    top, excluded = p.bounds(high, strict)
    ok = x is not None and math.isfinite(x) and (x > p.low if p.above else x >= p.low) \
        and (x < top if excluded else x <= top) and (not p.integer or x.is_integer())
    if not ok:
        shown = (value.strip() if isinstance(value, str) else repr(value))[:40]
        raise InputError(f"{p.flag} must be {p.describe(high, strict, why)}, got {shown}")
    return int(x) if p.integer else float(x)  # type: ignore[arg-type]


def check_optional(name: str, value: object, **kw) -> int | float | None:
    """:func:`check`, with None or an empty form box meaning "not given"."""
    return None if value is None or (isinstance(value, str) and not value.strip()) \
        else check(name, value, **kw)


def cli_type(name: str):
    """An argparse ``type`` that checks the flag against its range as it is parsed
    (argparse then says "argument --lr: must be ...")."""
    flag = PARAMS[name].flag

    def parse(text: str) -> int | float:
        try:
            return check(name, text)
        except InputError as exc:
            raise argparse.ArgumentTypeError(str(exc).removeprefix(f"{flag} ")) from None

    parse.__name__ = flag
    parse.param = name  # type: ignore[attr-defined]  # which range: tests read it
    return parse
