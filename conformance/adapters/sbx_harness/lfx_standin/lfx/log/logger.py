"""Stand-in for lfx.log.logger: `logger` writes to stderr (stdout belongs
to the driver protocol)."""

import logging
import sys

logger = logging.getLogger("lfx")
if not logger.handlers:
    _h = logging.StreamHandler(sys.stderr)
    _h.setFormatter(logging.Formatter("lfx: %(levelname)s %(message)s"))
    logger.addHandler(_h)
    logger.setLevel(logging.INFO)
