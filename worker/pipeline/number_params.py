"""Every numeric parameter, defined once: its flag, range and default (a group's: its help).

The CLI (``type=cli_type(name)``) and the Python API (both from the option declarations of
:mod:`worker.option_table`), the forms
(:meth:`Param.form_bounds`) and callbacks (``check``), the job parameters and the steps
themselves read numbers here, so a value is refused the same way wherever it comes from: not
finite, out of range, or a fraction where a whole number is meant, it is one
:class:`InputError` line that names the flag and its range. Bounds that depend on the data
(batch ≤ the subset's size, perplexity < N/3, pca-dims ≤ D, min_samples ≤ the class's size,
node-rank < nnodes) are passed as ``high`` by the step that knows them.

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
    ``above``, ``high`` excluded when ``below``).

    ``default``: its value when none is given, the flag's and the API keyword's default
    (None: chosen by the step that uses it).
    ``help``: a group's flag's help line (``{default}`` in it is replaced by the default),
    here so that a new kind's cut or t-SNE option is one line: the other numbers' help is
    with their option (:mod:`worker.option_table`).
    ``group``: the options it belongs with, whose flags the CLI adds together
    (:func:`group_params`):
    ``embedding`` (the t-SNE options; :class:`~worker.pipeline.map.embedding.EmbeddingOptions`
    has a field of each name) and ``findings`` (a finding kind's cut, named
    ``<kind>_threshold``: the kind's ``threshold``).
    """

    flag: str
    integer: bool
    low: float
    high: float
    above: bool = False
    below: bool = False
    default: float | None = None
    help: str = ""
    group: str = ""

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
            return f"{kind} from {fmt_number(self.low)} to {fmt_number(top)}{why}"
        low = f"> {fmt_number(self.low)}" if self.above else f"≥ {fmt_number(self.low)}"
        up = f"< {fmt_number(top)}" if excluded else f"≤ {fmt_number(top)}"
        return f"{kind} {low} and {up}{why}"

    def form_bounds(self) -> dict:
        """A number input's ``min``, ``max``, ``step`` and ``value`` (HTML's bounds are
        inclusive: an excluded end is left to :func:`check`, which says so)."""
        return {"min": self.low, "max": self.high, "step": 1 if self.integer else "any",
                "value": self.default}


def fmt_number(x: float) -> str:
    """``x`` as the messages and help lines write it: ``10,000``, ``0.9``, ``1e+06``."""
    return f"{int(x):,}" if float(x).is_integer() and abs(x) < 1e15 else f"{x:g}"


PARAMS: dict[str, Param] = {
    # ingest and features
    "inject_noise": Param("--inject-noise", False, 0.0, 1.0, below=True, default=0.0),
    "inject_duplicates": Param("--inject-duplicates", False, 0.0, 1.0, default=0.0),
    "inject_outliers": Param("--inject-outliers", True, 0, 1_000_000, default=0),
    "inject_leaks": Param("--inject-leaks", True, 0, 1_000_000, default=0),
    # Injected copies per source (drawn 1..K) and the share filed under another class.
    "duplicate_family": Param("--duplicate-family", True, 1, 10, default=1),
    "duplicate_across": Param("--duplicate-across", False, 0.0, 1.0, default=0.0),
    "seed": Param("--seed", True, 0, 2**32 - 1, default=0),
    # Below 32 px the networks' strides leave nothing to see.
    "input_size": Param("--input-size", True, 32, 512),
    "finetune": Param("--finetune", True, 0, 1000, default=0),
    "extract_batch": Param("--batch-size", True, 1, 65_536, default=256),
    "workers": Param("--workers", True, 0, 256),
    # the map (PCA, then t-SNE; worker/pipeline/map/embedding.py). The iteration counts are
    # below openTSNE's (250 + 500): EmbeddingOptions' docstring says why.
    "pca_dims": Param("--pca-dims", True, 2, 100_000, default=50, group="embedding",
                      help="PCA dimensions before t-SNE (default {default})"),
    "perplexity": Param("--perplexity", False, 0.0, 10_000.0, above=True, default=30.0,
                        group="embedding", help="t-SNE perplexity (default {default})"),
    "n_iter": Param("--n-iter", True, 0, 100_000, default=300, group="embedding",
                    help="t-SNE iterations after early exaggeration (default {default})"),
    "exaggeration_iter": Param("--exaggeration-iter", True, 0, 100_000, default=150,
                               group="embedding",
                               help="early-exaggeration iterations (default {default})"),
    # the rule
    "eps": Param("--eps", False, 0.0, 1e6, above=True),
    "min_samples": Param("--min-samples", True, 1, 10_000_000),
    # How many of a class's highest scores a reviewer's cut flags.
    "cut": Param("--cut", True, 0, 10_000_000),
    "shards": Param("--shards", True, 0, 4096),
    # Finding kinds' cuts (worker/pipeline/findings/): a pixel match for copies; for
    # outliers a ratio of distances (how much farther the nearest class lies than the
    # nearest images).
    # The defaults were chosen by looking at tables in docs/benchmarks.md. Duplicates: the
    # injected-copies table (CIFAR-10 mini, 2,000 images: at 0.9 light copies are all
    # found, medium 80%, strong 52%, and 10 of 9,500 candidate pairs of other pictures
    # pass). Outliers: the injected-outliers tables (CIFAR-10 with EfficientNet-Lite0: F1 at
    # 2.0 / 2.5 was 0.914 / 0.949 on the mini, 0.592 / 0.908 at 50k, where 1% of the real
    # images score above 2.0).
    "duplicate_threshold": Param(
        "--duplicate-threshold", False, 0.0, 1.0, above=True, default=0.9, group="findings",
        help="a near copy's pixel match to its group's kept copy reaches T (default "
             "{default}, raised to what different pictures of the dataset reach; "
             "docs/method.md)"),
    "leak_threshold": Param(
        "--leak-threshold", False, 0.0, 1.0, above=True, default=0.9, group="findings",
        help="a train image leaks when its pixel match to a test image reaches T (default "
             "{default}, raised as for duplicates)"),
    "outlier_threshold": Param(
        "--outlier-threshold", False, 0.0, 100.0, above=True, default=2.5, group="findings",
        help="outliers lie T times farther from the nearest class than its own images do "
             "(default {default}; docs/method.md)"),
    # The drop cuts: a mark is dropped by default only when its evidence reaches them; the
    # marks below are proposed. Chosen on scikit-learn's digits (no copies, no outliers: at
    # these cuts nothing of it is dropped; its highest outlier score is 4.2) and CIFAR-10
    # mini with our injector (docs/benchmarks.md, "Proposed or dropped").
    "duplicate_drop_threshold": Param(
        "--duplicate-drop-threshold", False, 0.0, 1.0, above=True, default=0.95,
        group="findings",
        help="a near copy is dropped by default when its pixel match reaches T (default "
             "{default}) and it stands out from its other near pictures; the other copies "
             "are proposed (docs/method.md)"),
    "leak_drop_threshold": Param(
        "--leak-drop-threshold", False, 0.0, 1.0, above=True, default=0.95, group="findings",
        help="a leak's train copy is dropped by default when its pixel match reaches T "
             "(default {default}), as for duplicates; the other leaks are proposed"),
    "outlier_drop_threshold": Param(
        "--outlier-drop-threshold", False, 0.0, 100.0, above=True, default=5.0,
        group="findings",
        help="an outlier is dropped by default when its score reaches T (default "
             "{default}); outliers below are proposed"),
    "top": Param("--top", True, 0, 1_000_000),
    "similar_k": Param("--k", True, 1, 10_000, default=20),
    "history_limit": Param("--limit", True, 1, 1_000_000, default=50),
    "history_sample": Param("--sample", True, 0, 2**40),
    "sample_index": Param("INDEX", True, 0, 2**40),
    # training
    "epochs": Param("--epochs", True, 1, 10_000),
    "train_batch": Param("--batch-size", True, 1, 10_000_000),
    "nproc": Param("--nproc", True, 1, 1024, default=1),
    "lr": Param("--lr", False, 0.0, 100.0, above=True),
    "weight_decay": Param("--weight-decay", False, 0.0, 1.0, default=5e-4),
    "label_smoothing": Param("--label-smoothing", False, 0.0, 1.0, below=True, default=0.0),
    "warmup_epochs": Param("--warmup-epochs", True, 0, 10_000, default=1),
    "nnodes": Param("--nnodes", True, 1, 4096, default=1),
    "node_rank": Param("--node-rank", True, 0, 4095),
    "seeds": Param("--seeds", True, 1, 100, default=3),
    "parallel": Param("--parallel", True, 1, 64, default=1),
    # serving
    "port": Param("--port", True, 1, 65_535),
    "concurrency": Param("--concurrency", True, 1, 1024),
}


# The image-quality kinds' cuts on their robust z (findings/detectors/quality.py),
# chosen by bench/quality.py's rule on CIFAR-10 mini with each defect injected at its
# middle strength (2,000 images, 30 per defect): the lowest cut that reaches the best F1
# there, at least 3 spreads, marking at most 1% of the clean images; the weak and strong
# strengths are held out (docs/benchmarks.md, "Image quality beside CleanVision").
QUALITY_CUTS: dict[str, tuple[float, str]] = {  # kind → (default cut, what it measures)
    "dark": (3.65, "its brightest pixels lie T robust spreads below"),
    "bright": (3.38, "its darkest pixels lie T robust spreads above"),
    "blurry": (3.84, "its sharpness lies T robust spreads below"),
    "low_info": (3.29, "its contrast lies T robust spreads below"),
    "odd_size": (3.0, "its pixel count or aspect ratio lies T robust spreads from"),
    "grey": (3.0, "its colour lies T robust spreads below"),
    "overexposed": (4.37, "its highlights clipped through texture lie T robust spreads above"),
    "border": (3.01, "its uniform frame lies T robust spreads above"),
}
PARAMS.update({
    f"{kind}_threshold": Param(
        f"--{kind.replace('_', '-')}-threshold", False, 0.0, 1000.0, above=True,
        default=default, group="findings",
        help=f"marked when {what} the dataset's median (default {{default}}; proposed, "
             "never dropped)")
    for kind, (default, what) in QUALITY_CUTS.items()})


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
        shown = value.strip() if isinstance(value, str) else repr(value)
        # Text that would break the one-line error (a newline, a control character) is
        # quoted with its escapes.
        shown = (shown if shown.isprintable() else repr(shown))[:40]
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


def group_params(group: str) -> dict[str, Param]:
    """The parameters of ``group`` (``Param.group``), in the order :data:`PARAMS` lists them."""
    return {name: p for name, p in PARAMS.items() if p.group == group}


def group_defaults(group: str) -> dict[str, int | float | None]:
    """The defaults of ``group``'s parameters, by name."""
    return {name: p.default for name, p in group_params(group).items()}

