"""The square of the map a class view and its backdrop cover.

Below both the run as the app reads it (``app.run_data``, which works it out once per
run) and the Curate page's figures and backdrop (``app.curate``), so that neither
package has to import the other for it.
"""

from __future__ import annotations

import numpy as np


def extent(emb: np.ndarray, pad: float = 0.03) -> tuple[float, float, float, float]:
    """(x0, x1, y0, y1) of the embedding with a small margin; the image covers exactly this.

    Parameters
    ----------
    emb : (N, 2) float, the t-SNE map
    pad : the margin on each side, as a share of the map's width (height)
    """
    x0, y0 = emb.min(axis=0)
    x1, y1 = emb.max(axis=0)
    dx, dy = max(x1 - x0, 1e-6), max(y1 - y0, 1e-6)
    return (float(x0 - pad * dx), float(x1 + pad * dx), float(y0 - pad * dy),
            float(y1 + pad * dy))
