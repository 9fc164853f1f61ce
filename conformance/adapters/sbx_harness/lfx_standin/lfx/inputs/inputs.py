"""Stand-in for lfx.inputs.inputs: the five input kinds a plugin declares;
each keeps its keyword arguments as attributes (name, value, ...)."""


class _Input:
    def __init__(self, name, value=None, **kwargs):
        self.name = name
        self.value = value
        for key, val in kwargs.items():
            setattr(self, key, val)

    def __repr__(self):
        return "%s(name=%r, value=%r)" % (type(self).__name__, self.name, self.value)


class BoolInput(_Input):
    def __init__(self, name, value=False, **kwargs):
        super().__init__(name, value, **kwargs)


class DropdownInput(_Input):
    def __init__(self, name, value=None, options=(), **kwargs):
        super().__init__(name, value, options=list(options), **kwargs)


class IntInput(_Input):
    def __init__(self, name, value=0, **kwargs):
        super().__init__(name, value, **kwargs)


class MultilineInput(_Input):
    def __init__(self, name, value="", **kwargs):
        super().__init__(name, value, **kwargs)


class StrInput(_Input):
    def __init__(self, name, value="", **kwargs):
        super().__init__(name, value, **kwargs)
