"""Stand-in for lfx.custom.custom_component.component.Component: built with
the inputs as keyword arguments; `_id`, `graph.flow_id`, `log()`, `status`."""

import sys
import types


class Component:
    inputs = []
    outputs = []
    display_name = None

    def __init__(self, **kwargs):
        names = {getattr(i, "name", None) for i in type(self).inputs}
        unknown = sorted(k for k in kwargs if k not in names and k != "_id")
        if unknown:
            raise TypeError("%s got unknown inputs: %s" % (type(self).__name__, ", ".join(unknown)))
        for inp in type(self).inputs:
            setattr(self, inp.name, kwargs.get(inp.name, getattr(inp, "value", None)))
        self._id = kwargs.get("_id", "")
        self.graph = types.SimpleNamespace(flow_id=None)
        self.status = None
        self._logs = []

    def log(self, message, name=None):
        self._logs.append(str(message))
        sys.stderr.write("component %s: %s\n" % (self._id, message))
