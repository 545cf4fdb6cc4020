"""The CLI's fixed-width text tables."""

from __future__ import annotations


def format_table(rows: list[dict], params: dict[str, tuple[float, int]] | None = None) -> str:
    """Fixed-width text rendering of :func:`summary_rows`; with ``params`` (class name →
    (eps, min_samples)) each class row also shows its DBSCAN parameters."""
    extra = f"{'eps':>10}{'min_samples':>13}" if params is not None else ""
    head = (f"{'class':<14}{extra}{'size':>8}{'flagged':>9}{'overridden':>12}"
            f"{'relabelled':>12}{'kept':>8}{'reduction':>11}")
    lines = [head, "-" * len(head)]
    for r in rows:
        cols = ""
        if params is not None:
            eps, ms = params.get(r["class"], (None, None))
            cols = f"{eps:>10.4g}{ms:>13}" if eps is not None else f"{'':>10}{'':>13}"
        lines.append(f"{r['class'][:14]:<14}{cols}{r['size']:>8}{r['flagged']:>9}"
                     f"{r['overridden']:>12}{r['relabelled']:>12}{r['kept']:>8}"
                     f"{r['reduction_pct']:>10.2f}%")
    return "\n".join(lines)


def format_rows(rows: list[dict], columns: tuple[str, ...]) -> str:
    """``rows`` as a fixed-width table of ``columns``, each as wide as its widest value."""
    cells = [[str(r[c]) for c in columns] for r in rows]
    widths = [max([len(c), *(len(row[k]) for row in cells)]) for k, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip()]
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip()
              for row in cells]
    return "\n".join(lines)
