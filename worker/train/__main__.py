"""``torchrun --nproc_per_node=N -m worker.train --out DIR``."""

import sys

from worker.train.trainer import main

sys.exit(main())
