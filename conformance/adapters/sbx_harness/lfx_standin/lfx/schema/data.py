"""Stand-in for lfx.schema.data.Data: a dict under `.data`."""


class Data:
    def __init__(self, data=None, **kwargs):
        self.data = dict(data or {})
        self.data.update(kwargs)

    def __getattr__(self, name):
        try:
            return self.__dict__["data"][name]
        except KeyError:
            raise AttributeError(name) from None

    def __repr__(self):
        return "Data(data=%r)" % (self.data,)
