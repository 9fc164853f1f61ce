"""sbx_harness: sbx-conform's Python side (pip install ./conformance/adapters).

- ``langflow_backend.py``: the driver adapter sbx-conform starts for
  ``--python-backend MODULE:FACTORY`` (a script; driver protocol v1 on
  stdin/stdout, see conformance/PROTOCOL.md);
- ``langflow_component.py``: the same for ``--python-component MODULE:CLASS``,
  with ``lfx_standin/`` when Langflow's ``lfx`` is not installed;
- ``sbx_pytest.py``: the pytest plugin (entry point ``sbx_pytest`` in the
  ``pytest11`` group, so ``pytest -p sbx_pytest`` or auto-loading finds it).

Standard library only. The adapters are run as scripts by sbx-conform, never
imported by this package, so importing it starts nothing.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("sbx-harness")
except PackageNotFoundError:  # run from the source tree, not installed
    __version__ = "unknown"
